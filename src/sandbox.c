/*
 * Process sandboxing: what a request's `sandbox` asks for, which mechanism
 * enforces it, and the child's steps between fork and exec.
 *
 * Any `sandbox` object makes the process "linuxSeccomp", as the reference
 * reports it (a `disabled` profile too, which applies nothing).  Every
 * other profile, and a managed network without one, gets in the child:
 *  - its capabilities dropped (bounding and ambient sets included) and
 *    no_new_privs;
 *  - the seccomp filter of sandbox_seccomp.c (always-denied calls, and the
 *    socket families the network mode allows);
 *  - a Landlock domain where the kernel has Landlock: the filesystem rules
 *    of a restricted profile (sandbox_landlock.c), otherwise one that only
 *    keeps it from ptrace-attaching to processes outside it; scoped
 *    signals and abstract sockets from ABI 6;
 *  - for a restricted filesystem, mounts in a mount namespace for what
 *    Landlock cannot express, or, without Landlock, for the whole policy
 *    (sandbox_mount.c);
 *  - for a managed network, a network namespace whose only way out is the
 *    proxy (sandbox_net.c).
 * Namespaces are made directly with CAP_SYS_ADMIN, else inside a new user
 * namespace.  What this kernel cannot enforce is refused with the
 * reference's "sandbox intent cannot be enforced on this executor" (the
 * reason goes to the log); a sandboxed request never runs unsandboxed.
 *
 * For tests, EXECD_SANDBOX_DISABLE (comma separated: landlock-fs,
 * landlock, namespaces) makes execd act as if the kernel lacked those.
 */
#include "config.h"

#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/capability.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "rpc.h"
#include "sandbox_int.h"
#include "spawner.h"

#define REFUSAL		"sandbox intent cannot be enforced on this executor"

static const char *const protected_names[] = { ".git", ".codex", ".agents", NULL };

static struct {
	int	probed;
	int	no_landlock_fs;
	struct sbx_kernel k;
	int	ns_probed;
	int	cap_last;
} kst;

static int
knob(const char *word)
{
	const char	*v = getenv("EXECD_SANDBOX_DISABLE"), *p;
	size_t		 n = strlen(word);

	for (p = v; p != NULL && *p != '\0'; p += strcspn(p, ","), p += *p == ',') {
		if (strncmp(p, word, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return 1;
	}
	return 0;
}

static int
has_cap(int cap)
{
	struct __user_cap_header_struct	hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct	data[2];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data) == -1)
		return 0;
	return (data[cap / 32].effective & (1U << (cap % 32))) != 0;
}

static int
read_int(const char *path, int dflt)
{
	FILE	*f;
	int	 v;

	if ((f = fopen(path, "re")) == NULL)
		return dflt;
	if (fscanf(f, "%d", &v) != 1)
		v = dflt;
	fclose(f);
	return v;
}

const struct sbx_kernel *
sbx_kernel(void)
{
	if (kst.probed)
		return &kst.k;
	kst.probed = 1;
	kst.k.seccomp = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
	kst.k.landlock_abi = knob("landlock") ? 0 : sbx_landlock_probe();
	kst.no_landlock_fs = knob("landlock-fs");
	kst.cap_last = read_int("/proc/sys/kernel/cap_last_cap", 63);
	log_info("sandbox: seccomp %s, Landlock ABI %d", kst.k.seccomp ? "yes" : "no",
	    kst.k.landlock_abi);
	return &kst.k;
}

int
sandbox_probe_ns(int direct)
{
	pid_t	pid;
	int	status;

	if ((pid = fork()) == -1) {
		log_warn("sandbox: namespace probe");
		return -1;
	}
	if (pid == 0) {
		if (!direct && unshare(CLONE_NEWUSER) == -1)
			_exit(1);
		if (unshare(CLONE_NEWNS | CLONE_NEWNET) == -1 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1)
			_exit(1);
		_exit(0);
	}
	while (waitpid(pid, &status, 0) == -1)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Can a child make mount and network namespaces (directly, or in a user namespace)? */
static int
probe_namespaces(void)
{
	int	ok, direct;

	if (kst.ns_probed)
		return kst.k.ns_direct || kst.k.ns_userns;
	if (knob("namespaces")) {
		kst.ns_probed = 1;
		return 0;
	}
	direct = has_cap(CAP_SYS_ADMIN);
	ok = spawner_used() ? spawner_probe_ns(direct) : sandbox_probe_ns(direct);
	if (ok == -1)
		return 0;	/* asked again next time */
	kst.ns_probed = 1;
	if (ok) {
		kst.k.ns_direct = direct;
		kst.k.ns_userns = !direct;
	}
	log_info("sandbox: mount and network namespaces %s", kst.k.ns_direct ? "direct" :
	    kst.k.ns_userns ? "in a user namespace" : "unavailable");
	return kst.k.ns_direct || kst.k.ns_userns;
}

int
sbx_namespaces(void)
{
	return probe_namespaces();
}

/* ---- which fs_policy rules a process sandbox uses ---- */

enum sbx_rule_kind
sbx_rule_kind(const struct fs_rule *r)
{
	const char	*base;
	size_t		 i;

	if (!r->implicit)
		return SBX_RULE_ENTRY;
	if (r->access == FS_ACCESS_WRITE)
		return SBX_RULE_DEVICE;
	base = strrchr(r->path, '/');
	for (i = 0; base != NULL && protected_names[i] != NULL; i++)
		if (strcmp(base + 1, protected_names[i]) == 0)
			return SBX_RULE_PROTECTED;
	return SBX_RULE_PLATFORM;
}

/* The reference's processes see the platform's directories only with `minimal`. */
int
sbx_rule_used(const struct fs_rule *r, int platform)
{
	if (r->is_glob || r->access == FS_ACCESS_DENY)
		return 1;
	/* fs_policy resolves /dev/stdin and friends through execd's own /proc */
	if (strncmp(r->path, "/proc/", 6) == 0)
		return 0;
	return sbx_rule_kind(r) != SBX_RULE_PLATFORM || platform;
}

/* Can everything be read (a grant on "/")? */
static int
full_read(const struct fs_policy *pol)
{
	const struct fs_rule	*r;
	size_t			 i;

	for (i = 0; (r = fs_policy_rule(pol, i)) != NULL; i++)
		if (!r->is_glob && r->access != FS_ACCESS_DENY && strcmp(r->path, "/") == 0)
			return 1;
	return 0;
}

static int
refuse(struct sandbox_plan *plan, int *code, char *msg, size_t msglen, const char *why)
{
	log_warnx("sandbox: cannot enforce the request's sandbox: %s", why);
	sandbox_plan_free(plan);
	*code = RPC_INVALID_REQUEST;
	snprintf(msg, msglen, "%s", REFUSAL);
	return -1;
}

static int
ptrace_contained(void)
{
	return read_int("/proc/sys/kernel/yama/ptrace_scope", 0) >= 1;
}

/* The filesystem part: Landlock rules and the mounts they need, or mounts only. */
static int
plan_fs(struct sandbox_plan *plan, const struct fs_policy *pol, json_t *sandbox, char *why,
    size_t whylen)
{
	const struct sbx_kernel	*k = sbx_kernel();
	int			 platform = sbx_wants_platform(sandbox);
	int			 landlock = k->landlock_abi > 0 && !kst.no_landlock_fs;

	if (fs_policy_error(pol) != NULL) {
		snprintf(why, whylen, "%s", fs_policy_error(pol));
		return -1;
	}
	if (!landlock && !full_read(pol)) {
		snprintf(why, whylen, "restricted reads need Landlock, which %s",
		    k->landlock_abi > 0 ? "is disabled" : "this kernel lacks");
		return -1;
	}
	/* without any Landlock domain, /proc/PID/mem of execd's other children is open */
	if (k->landlock_abi == 0 && !ptrace_contained()) {
		snprintf(why, whylen, "without Landlock, the mount sandbox needs Yama's "
		    "ptrace_scope >= 1");
		return -1;
	}
	if (sbx_mount_plan(plan, pol, platform, !landlock, sbx_glob_depth(sandbox), why,
	    whylen) == -1)
		return -1;
	/* with the filesystem left to mounts, a domain still contains ptrace */
	if (k->landlock_abi > 0 && (plan->ruleset_fd = sbx_landlock_ruleset(landlock ? pol : NULL,
	    platform, k->landlock_abi, plan->net, why, whylen)) == -1)
		return -1;
	snprintf(plan->mechanism, sizeof(plan->mechanism), "%s%s", landlock ? "landlock+" :
	    k->landlock_abi > 0 ? "landlock-domain+" : "", plan->nmounts > 0 ? "mounts+" : "");
	return 0;
}

static int
plan_namespaces(struct sandbox_plan *plan, char *why, size_t whylen)
{
	if (plan->nmounts == 0 && plan->net != SBX_NET_MANAGED)
		return 0;
	if (!probe_namespaces()) {
		snprintf(why, whylen, "%s needs namespaces, which are unavailable",
		    plan->nmounts > 0 ? "the filesystem policy" : "a managed network");
		return -1;
	}
	if (kst.k.ns_direct)
		return 0;
	plan->new_userns = 1;
	snprintf(plan->uid_map, sizeof(plan->uid_map), "%lu %lu 1", (unsigned long)geteuid(),
	    (unsigned long)geteuid());
	snprintf(plan->gid_map, sizeof(plan->gid_map), "%lu %lu 1", (unsigned long)getegid(),
	    (unsigned long)getegid());
	return 0;
}

int
sandbox_prepare(json_t *sandbox, json_t *params, struct sandbox_plan **out, int *code,
    char *msg, size_t msglen)
{
	struct sandbox_plan	*plan;
	struct fs_policy	*pol = NULL;
	struct jx_err		 e;
	const char		*type;
	char			 why[512];
	const struct sbx_kernel	*k;
	json_t			*ctx = NULL;
	size_t			 len;

	*out = NULL;
	*code = RPC_INVALID_PARAMS;
	if (sandbox != NULL && json_is_null(sandbox))
		sandbox = NULL;
	if (sandbox != NULL) {
		if ((ctx = sbx_context(sandbox, params, 0)) == NULL) {
			*code = RPC_INTERNAL_ERROR;
			snprintf(msg, msglen, "out of memory");
			return -1;
		}
		if (sbx_context_error(ctx, msg, msglen) == -1) {
			json_decref(ctx);
			return -1;
		}
		if (fs_policy_parse(ctx, &pol, &e, code) == -1) {
			json_decref(ctx);
			sbx_policy_error(&e, code);
			snprintf(msg, msglen, "%s", e.msg);
			return -1;
		}
	}
	if (sandbox == NULL && sbx_net_mode(NULL, params) != SBX_NET_MANAGED)
		return 0;
	if ((plan = calloc(1, sizeof(*plan))) == NULL) {
		json_decref(ctx);
		fs_policy_free(pol);
		*code = RPC_INTERNAL_ERROR;
		snprintf(msg, msglen, "out of memory");
		return -1;
	}
	plan->ruleset_fd = plan->route_sv[0] = plan->route_sv[1] = -1;
	plan->net = sbx_net_mode(ctx, params);
	type = json_string_value(json_object_get(json_object_get(ctx, "permissions"), "type"));
	*out = plan;
	if (type != NULL && strcmp(type, "disabled") == 0 && plan->net != SBX_NET_MANAGED) {
		json_decref(ctx);
		fs_policy_free(pol);
		return 0;	/* "linuxSeccomp", as the reference says, with nothing applied */
	}
	plan->confine = 1;
	k = sbx_kernel();
	plan->cap_last = kst.cap_last;
	*out = NULL;
	if (!k->seccomp) {
		snprintf(why, sizeof(why), "this kernel has no seccomp filters");
		goto refused;
	}
	if ((plan->filter = sbx_filter(plan->net, why, sizeof(why))) == NULL ||
	    (pol != NULL && plan_fs(plan, pol, ctx, why, sizeof(why)) == -1) ||
	    (pol == NULL && k->landlock_abi > 0 && (plan->ruleset_fd =
	    sbx_landlock_ruleset(NULL, 0, k->landlock_abi, plan->net, why, sizeof(why))) == -1) ||
	    plan_namespaces(plan, why, sizeof(why)) == -1)
		goto refused;
	if (plan->net == SBX_NET_MANAGED) {
		if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, plan->route_sv) == -1) {
			snprintf(why, sizeof(why), "socketpair: %s", strerror(errno));
			goto refused;
		}
		if (sbx_managed_ports(json_object_get(params, "managedNetwork"), plan, &e) == -1) {
			snprintf(why, sizeof(why), "%s", e.msg);
			goto refused;
		}
	}
	json_decref(ctx);
	fs_policy_free(pol);
	len = strlen(plan->mechanism);
	snprintf(plan->mechanism + len, sizeof(plan->mechanism) - len, "%s%sseccomp",
	    plan->ruleset_fd != -1 && len == 0 ? "landlock-domain+" : "",
	    plan->net == SBX_NET_MANAGED ? "netns+" : "");
	*out = plan;
	return 0;
refused:
	json_decref(ctx);
	fs_policy_free(pol);
	return refuse(plan, code, msg, msglen, why);
}

/* ---- in the child, between fork and exec: no allocation ---- */

static int
write_file(const char *path, const char *s)
{
	int	fd, e = 0;
	size_t	n = strlen(s);

	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return errno;
	if (write(fd, s, n) != (ssize_t)n)
		e = errno ? errno : EIO;
	close(fd);
	return e;
}

static int
enter_userns(const struct sandbox_plan *plan)
{
	int	e;

	/* an execd made non-dumpable could not write its child's maps */
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == -1)
		return errno;
	if (unshare(CLONE_NEWUSER) == -1)
		return errno;
	if ((e = write_file("/proc/self/setgroups", "deny")) != 0 ||
	    (e = write_file("/proc/self/uid_map", plan->uid_map)) != 0 ||
	    (e = write_file("/proc/self/gid_map", plan->gid_map)) != 0)
		return e;
	return 0;
}

/* Nothing left to gain by exec, not even as root. */
static int
drop_caps(const struct sandbox_plan *plan)
{
	struct __user_cap_header_struct	hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct	data[2];
	int				cap;

	for (cap = 0; cap <= plan->cap_last; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == -1 && errno != EINVAL &&
		    errno != EPERM)
			return errno;
	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capset, &hdr, data) == -1)
		return errno;
	return 0;
}

int
sandbox_apply(const struct sandbox_plan *plan)
{
	int	flags = 0, e;

	if (!plan->confine)
		return 0;
	if (plan->nmounts > 0)
		flags |= CLONE_NEWNS;
	if (plan->net == SBX_NET_MANAGED)
		flags |= CLONE_NEWNET;
	if (flags != 0 && plan->new_userns && (e = enter_userns(plan)) != 0)
		return e;
	if (flags != 0 && unshare(flags) == -1)
		return errno;
	if (plan->nmounts > 0 && (e = sbx_mount_apply(plan)) != 0)
		return e;
	if (plan->net == SBX_NET_MANAGED && (e = sbx_net_apply(plan)) != 0)
		return e;
	if ((e = drop_caps(plan)) != 0)
		return e;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		return errno;
	if (plan->ruleset_fd != -1 && (e = sbx_landlock_apply(plan->ruleset_fd)) != 0)
		return e;
	return sbx_filter_install(plan->filter);
}

/* ---- in the parent ---- */

void
sandbox_started(struct sandbox_plan *plan, pid_t pid)
{
	if (plan == NULL || !plan->confine)
		return;
	log_info("sandbox: process %ld confined by %s", (long)pid, plan->mechanism);
	if (plan->net == SBX_NET_MANAGED)
		sbx_bridge_start(plan, pid);
}

const char *
sandbox_type(const struct sandbox_plan *plan)
{
	return plan == NULL ? "none" : "linuxSeccomp";
}

void
sandbox_plan_free(struct sandbox_plan *plan)
{
	size_t	i;

	if (plan == NULL)
		return;
	sandbox_guards_release(plan->guards);
	for (i = 0; i < plan->nmounts; i++)
		free(plan->mounts[i].path);
	free(plan->mounts);
	if (plan->ruleset_fd != -1)
		close(plan->ruleset_fd);
	for (i = 0; i < 2; i++)
		if (plan->route_sv[i] != -1)
			close(plan->route_sv[i]);
	free(plan->cwd);
	free(plan);
}
