/* Shared by the sandbox mechanisms: the plan the parent builds and the child applies. */
#ifndef EXECD_SANDBOX_INT_H
#define EXECD_SANDBOX_INT_H

#include <sys/socket.h>
#include <sys/types.h>

#include <fcntl.h>

#include <linux/filter.h>

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "policy/fs_policy.h"
#include "jsonx.h"
#include "openat2.h"
#include "sandbox/sandbox_kernel.h"
#include "sandbox/sandbox_plan.h"

enum sbx_net {
	SBX_NET_ENABLED,	/* the host network */
	SBX_NET_OFF,		/* socket() for AF_UNIX only */
	SBX_NET_MANAGED,	/* own network namespace, routes to the proxy only */
};

enum sbx_mount_op {
	SBX_MNT_RO_ALL,		/* every mount read-only: the base of the view */
	SBX_MNT_RW,		/* bind the path on itself, writable */
	SBX_MNT_RO,		/* bind the path on itself, read-only */
	SBX_MNT_MASK_DIR,	/* an empty, mode 000, read-only tmpfs over it */
	SBX_MNT_MASK_FILE,	/* an empty, mode 000, read-only file over it */
	SBX_MNT_DEV,		/* a fresh /dev (sandbox_dev.c) */
	SBX_MNT_PROTECT,	/* a protected name: read-only bind, no symlink (else fatal) */
	SBX_MNT_PIN,		/* bind the path on itself as it is: a mount point, not renamable */
};
#define SBX_MNT_LAST	SBX_MNT_PIN

struct sbx_mount {
	enum sbx_mount_op	 op;
	char			*path;
	/* what planning found at path, to be found there again (ino 0: not checked) */
	uint64_t		 dev, ino;
};

#define SBX_MAX_ROUTES	16

struct sbx_route {
	struct sockaddr_storage	 addr;
	socklen_t		 len;
};

struct sandbox_plan {
	int			 confine;	/* 0: a `disabled` profile, nothing applied */
	enum sbx_net		 net;
	const struct sock_fprog	*filter;
	int			 ruleset_fd;	/* Landlock, -1 for none */
	struct sbx_mount	*mounts;
	size_t			 nmounts;
	int			 namespaces;	/* the pid namespace structure and a mount view */
	int			 new_userns;	/* the namespaces are made inside a user namespace */
	int			 new_netns;	/* a network namespace (network off or managed) */
	uint64_t		 ll_handled;	/* filesystem rights the ruleset handles */
	int			 ll_proc;	/* the policy lets /proc be read (the fresh one too) */
	char			 uid_map[64], gid_map[64];
	struct sbx_route	 routes[SBX_MAX_ROUTES];
	size_t			 nroutes;
	int			 route_sv[2];	/* child sends its netns listeners on [1] */
	char			*cwd;
	int			 cap_last;
	int			 spare_userns;	/* in the spawn helper: namespaces made */
	int			 spare_netns;	/* ahead (sandbox_spare.c), or -1 */
	struct sbx_guard	*guards;	/* placeholders held for this plan */
	int			 ready[2];	/* placeholders made: [0] the child waits, [1] execd's */
	char			 mechanism[64];	/* for the log: "landlock+mounts+seccomp" */
	char			*fatal;		/* the command does not run: this to stderr, exit 1 */
	/*
	 * Transparent TCP (sandbox_tcp.c): connect(2) notified to execd, DNS
	 * answered by it.  socks and its credentials are execd's only (not on
	 * the wire): the process's SOCKS5 endpoint, from its ALL_PROXY.
	 */
	int			 transparent;
	struct sbx_route	 socks;
	char			 socks_user[256], socks_pass[256];
};

/* sandbox_plan.c: an empty plan (no descriptors), NULL without memory */
struct sandbox_plan *sbx_plan_new(void);

/* sandbox_kernel.c: what this kernel (and this execd's privileges) offer; probed once. */
struct sbx_kernel {
	int	landlock_abi;	/* 0: none */
	int	no_landlock_fs;	/* Landlock disabled for filesystem rules (tests) */
	int	seccomp;
	int	cap_last;	/* the highest capability number */
	int	ns_direct;	/* CAP_SYS_ADMIN: unshare mount/net namespaces directly */
	int	ns_userns;	/* else through an unprivileged user namespace */
};

const struct sbx_kernel *sbx_kernel(void);
/* Can children make mount and network namespaces?  (probed once) */
int	 sbx_namespaces(void);
/* Does Yama keep processes from ptrace-attaching to their siblings? */
int	 sbx_ptrace_contained(void);

/* sandbox_rules.c: which fs_policy rules a process sandbox uses. */
enum sbx_rule_kind { SBX_RULE_ENTRY, SBX_RULE_PLATFORM, SBX_RULE_DEVICE, SBX_RULE_PROTECTED };
enum sbx_rule_kind sbx_rule_kind(const struct fs_rule *r);
int	 sbx_rule_used(const struct fs_rule *r, int platform);

/* sandbox_request.c */
json_t	*sbx_context(json_t *sandbox, json_t *params);
int	 sbx_context_error(json_t *ctx, char *msg, size_t msglen);
void	 sbx_policy_error(struct jx_err *e, int *code);
/* with plan NULL only checks; else adds the ports as routes */
int	 sbx_managed_ports(json_t *mn, struct sandbox_plan *plan, struct jx_err *e);
enum sbx_net sbx_net_mode(json_t *ctx, json_t *params);
int	 sbx_wants_platform(json_t *ctx);
int	 sbx_glob_depth(json_t *ctx);

/* sandbox_seccomp.c */
const struct sock_fprog *sbx_filter(enum sbx_net net, char *why, size_t whylen);
int	 sbx_filter_install(const struct sock_fprog *prog);
/* transparent TCP's: the managed one, connect notified (the listener sent on sv) */
const struct sock_fprog *sbx_filter_transparent(void);
int	 sbx_filter_install_notify(const struct sock_fprog *prog, int sv);

/* sandbox_landlock.c */
int	 sbx_landlock_probe(void);
/* -1 with why when a rule cannot be added */
int	 sbx_landlock_ruleset(const struct fs_policy *pol, int platform, int abi,
	    enum sbx_net net, uint64_t *handled, char *why, size_t whylen);
/* in the child: grant what the fresh /dev holds (0 or an errno) */
int	 sbx_landlock_view(int ruleset_fd, uint64_t handled, int proc);
int	 sbx_landlock_apply(int ruleset_fd);

/* sandbox_mount.c: plan in the parent, apply in the child */
/*
 * glob_depth: how deep deny globs are expanded, -1 without limit;
 * landlock: Landlock enforces the reads (denied paths outside every grant
 * need no mask)
 */
int	 sbx_mount_plan(struct sandbox_plan *plan, const struct fs_policy *pol, int platform,
	    int landlock, int glob_depth, char *why, size_t whylen);
/* the paths sandbox_hide() named, masked last */
int	 sbx_mount_hide(struct sandbox_plan *plan, char *why, size_t whylen);
int	 sbx_mount_apply(const struct sandbox_plan *plan);
/*
 * path opened (flags with O_PATH or O_RDONLY) as planning named it, with
 * no symlink followed on the way: the child's mounts and the placeholders
 * both go through it, so a link swapped in since a path was checked leads
 * nowhere (ELOOP; with O_PATH a last name that is a link is opened as one).
 */
static inline int
sbx_open_real(const char *path, int flags)
{
	return openat2_retry(AT_FDCWD, path, flags | O_NOFOLLOW,
	    RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
}

/* sandbox_dev.c, in the child: a fresh /dev on the view (0 or an errno) */
int	 sbx_dev_build(void);
/* Is path one the fresh /dev holds? */
int	 sbx_dev_has(const char *path);

/* sandbox_pidns.c, in the child: A's and B's parts (sandbox_apply.c) */
/*
 * In A, inside its namespaces with the view built: forks B, which enters
 * the network namespace netfd (-1: none), runs command(arg) in C and
 * never returns there; returns only with an errno,
 * in A, when B cannot be made.
 */
int	 sbx_supervise(int errfd, int netfd, void (*command)(void *), void *arg);
/* Is the other end of this pipe still open?  (A checks on execd so.) */
int	 sbx_reader_alive(int wfd);

/*
 * sandbox_guard.c: hold a placeholder for a protected path under a
 * writable root: joined when it is one already, else made once the child
 * runs (sandbox_spawned).  1 when held, 0 for a real directory (nothing
 * held), -1 with why.
 */
int	 sbx_guard_protected(struct sandbox_plan *plan, const char *path, char *why,
	    size_t whylen);
/* in the child, before the first protected name is bound: 0 or an errno */
int	 sbx_guard_wait(const struct sandbox_plan *plan);

/* sandbox_record.c: a writable root given to a sandboxed command (see sandbox_wrote) */
/* -1 when it could not be recorded on disk: the sandbox must not run */
int	 sbx_record_root(const char *path, uint64_t dev, uint64_t ino);
/*
 * The executor's configuration places (the Codex home, ~/.agents,
 * /etc/codex), each protected as a protected name is wherever it lies
 * inside a writable root: the i-th as it really is now into out
 * (PATH_MAX), 1; 0 for none (unknown, or no parent); -1 past the last.
 */
int	 sbx_config_place(size_t i, char *out);
/* sandbox_layers.c: the i-th .codex directory of a layer read (real path), NULL past the last */
const char *sbx_layer_dir(size_t i);

/* sandbox_apply.c: unshare a user namespace and map the plan's ids (0 or an errno) */
int	 sbx_userns_enter(const struct sandbox_plan *plan);

/* sandbox_net.c */
int	 sbx_loopback_up(void);
int	 sbx_route_add(struct sandbox_plan *plan, const char *host, unsigned port);
/* a loopback endpoint as a route: 1, or 0 for anything else */
int	 sbx_route_make(const char *host, unsigned port, struct sbx_route *r);
int	 sbx_net_apply(const struct sandbox_plan *plan);
void	 sbx_bridge_start(struct sandbox_plan *plan, pid_t pid);

#endif
