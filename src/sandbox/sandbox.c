/*
 * Process sandboxing: what a request's `sandbox` asks for, and which
 * mechanism enforces it.
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
 *  - for a restricted filesystem or a managed network, namespaces of its
 *    own: a user namespace mapping only execd's uid (where the kernel
 *    allows one, as root too; else directly, as root), mount, pid and IPC
 *    namespaces, and a network namespace for the managed network.
 *    The command is pid 2 under an init that takes every process of the
 *    sandbox with it when the command ends (sandbox_pidns.c); it sees a
 *    read-only view of the host with its writable roots bound writable,
 *    the protected names read-only, a fresh /dev and /proc, denied paths
 *    and execd's own ones masked (sandbox_mount.c);
 *  - for a managed network, routes to the proxy only in that network
 *    namespace (sandbox_net.c).
 * What this kernel cannot enforce is refused with the reference's
 * "sandbox intent cannot be enforced on this executor" (the reason goes
 * to the log); a sandboxed request never runs unsandboxed.
 *
 * This file plans, in the parent; the child carries the plan out
 * (sandbox_apply.c), with what the kernel offers probed in
 * sandbox_kernel.c.
 */
#include "config.h"

#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "rpc/rpc.h"
#include "sandbox/sandbox.h"
#include "sandbox/sandbox_int.h"
#include "sandbox/sandbox_tp.h"

#define REFUSAL		"sandbox intent cannot be enforced on this executor"

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

/* Does a rule Landlock is given grant reading /proc (the fresh one gets the same)? */
static int
grants_proc(const struct fs_policy *pol, int platform)
{
	const struct fs_rule	*r;
	size_t			 i;

	if (fs_policy_check(pol, "/proc", FS_WANT_READ) != 0)
		return 0;
	for (i = 0; (r = fs_policy_rule(pol, i)) != NULL; i++)
		if (!r->is_glob && r->access != FS_ACCESS_DENY && sbx_rule_used(r, platform) &&
		    fs_path_covers(r->path, "/proc"))
			return 1;
	return 0;
}

/* The filesystem part: Landlock rules and the mounts they need, or mounts only. */
static int
plan_fs(struct sandbox_plan *plan, const struct fs_policy *pol, json_t *sandbox, char *why,
    size_t whylen)
{
	const struct sbx_kernel	*k = sbx_kernel();
	int			 platform = sbx_wants_platform(sandbox);
	int			 landlock = k->landlock_abi > 0 && !k->no_landlock_fs;

	if (fs_policy_error(pol) != NULL) {
		snprintf(why, whylen, "%s", fs_policy_error(pol));
		return -1;
	}
	/* the mount view is the first layer: no namespaces, no filesystem sandbox */
	if (!sbx_namespaces()) {
		snprintf(why, whylen, "the filesystem policy needs namespaces, which are "
		    "unavailable");
		return -1;
	}
	if (!landlock && !full_read(pol)) {
		snprintf(why, whylen, "restricted reads need Landlock, which %s",
		    k->landlock_abi > 0 ? "is disabled" : "this kernel lacks");
		return -1;
	}
	/* without any Landlock domain, /proc/PID/mem of execd's other children is open */
	if (k->landlock_abi == 0 && !sbx_ptrace_contained()) {
		snprintf(why, whylen, "without Landlock, the mount sandbox needs Yama's "
		    "ptrace_scope >= 1");
		return -1;
	}
	if (sbx_mount_plan(plan, pol, platform, landlock, sbx_glob_depth(sandbox), why,
	    whylen) == -1)
		return -1;
	/* with the filesystem left to mounts, a domain still contains ptrace */
	if (k->landlock_abi > 0 && (plan->ruleset_fd = sbx_landlock_ruleset(landlock ? pol : NULL,
	    platform, k->landlock_abi, plan->net, &plan->ll_handled, why, whylen)) == -1)
		return -1;
	plan->ll_proc = landlock && grants_proc(pol, platform);
	snprintf(plan->mechanism, sizeof(plan->mechanism), "%s%s", landlock ? "landlock+" :
	    k->landlock_abi > 0 ? "landlock-domain+" : "", plan->nmounts > 0 ? "pidns+mounts+" : "");
	return 0;
}

/*
 * A restricted filesystem or a managed network: the command runs in
 * namespaces of its own (sandbox_pidns.c).  A filesystem left
 * unrestricted with the network off or on needs none, as with the
 * reference: seccomp and Landlock only.  Unless no Landlock domain
 * contains its ptrace: seccomp refuses ptrace and process_vm_writev, but
 * /proc/PID/mem of every process of the same user (an unsandboxed
 * command, with the network) would be open to it, and Yama would still
 * leave their /proc/PID/fd (a shell's standard input among them); or
 * unless the domain scopes no signals (before ABI 6), and kill -9 -1
 * would end execd and every process of the user.  Only a pid namespace
 * of its own hides them.
 */
static int
plan_namespaces(struct sandbox_plan *plan, char *why, size_t whylen)
{
	int	exposed = plan->ruleset_fd == -1 || sbx_kernel()->landlock_abi < 6;

	if (plan->nmounts == 0 && plan->net != SBX_NET_MANAGED && !exposed)
		return 0;
	if (!sbx_namespaces()) {
		snprintf(why, whylen, "%s needs namespaces, which are unavailable",
		    plan->nmounts > 0 ? "the filesystem policy" : plan->net == SBX_NET_MANAGED ?
		    "a managed network" : "a sandbox without Landlock's scopes");
		return -1;
	}
	plan->namespaces = 1;
	if (plan->nmounts == 0 && plan->net != SBX_NET_MANAGED)
		snprintf(plan->mechanism, sizeof(plan->mechanism), "pidns+");
	/*
	 * With the network off too, as the reference's bwrap --unshare-net:
	 * the seccomp filter leaves no address to reach, but in the host's
	 * namespace /proc/net would list every socket of the host (ports,
	 * peers, Unix socket paths) and abstract sockets would be one filter
	 * gap away.  Its half a millisecond is mostly made ahead
	 * (sandbox_spare.c) or made beside A's mount view.
	 */
	plan->new_netns = plan->net == SBX_NET_MANAGED || plan->net == SBX_NET_OFF;
	if (sbx_mount_hide(plan, why, whylen) == -1)
		return -1;
	if (sbx_kernel()->ns_direct)
		return 0;
	plan->new_userns = 1;
	snprintf(plan->uid_map, sizeof(plan->uid_map), "%lu %lu 1", (unsigned long)geteuid(),
	    (unsigned long)geteuid());
	snprintf(plan->gid_map, sizeof(plan->gid_map), "%lu %lu 1", (unsigned long)getegid(),
	    (unsigned long)getegid());
	return 0;
}

/*
 * Without a sandbox, a managedNetwork alone confines nothing: the reference
 * runs such a process unsandboxed ("none"), with its network and env as
 * they are.  Asking for enforcement, or for the proxy, still confines it.
 */
static int
net_confines(json_t *params)
{
	json_t	*np = json_object_get(params, "networkProxy");

	return json_is_true(json_object_get(params, "enforceManagedNetwork")) ||
	    (np != NULL && !json_is_null(np));
}

/* --linux-sandbox-transparent-tcp: every managed start is transparent */
static int	transparent_all;

void
sandbox_set_transparent_all(int on)
{
	transparent_all = on;
}

int
sandbox_transparent_supported(void)
{
	return sbx_tp_supported() && sbx_namespaces();
}

/* networkProxy.proxy.transparentTcp (start_check_modes has checked its type) */
static int
wants_transparent(json_t *params)
{
	return transparent_all || json_is_true(json_object_get(json_object_get(
	    json_object_get(params, "networkProxy"), "proxy"), "transparentTcp"));
}

int
sandbox_prepare(json_t *ctx, json_t *params, struct sandbox_plan **out, int *code,
    char *msg, size_t msglen)
{
	struct sandbox_plan	*plan;
	struct fs_policy	*pol = NULL;
	struct jx_err		 e;
	const char		*type;
	char			 why[512];
	const struct sbx_kernel	*k;
	size_t			 len;

	*out = NULL;
	*code = RPC_INVALID_PARAMS;
	if (ctx != NULL) {
		if (sbx_context_error(ctx, msg, msglen) == -1)
			return -1;
		if (fs_policy_parse(ctx, &pol, &e, code) == -1) {
			sbx_policy_error(&e, code);
			snprintf(msg, msglen, "%s", e.msg);
			return -1;
		}
	}
	if (ctx == NULL && !net_confines(params))
		return 0;
	if ((plan = sbx_plan_new()) == NULL) {
		fs_policy_free(pol);
		*code = RPC_INTERNAL_ERROR;
		snprintf(msg, msglen, "out of memory");
		return -1;
	}
	plan->net = sbx_net_mode(ctx, params);
	type = json_string_value(json_object_get(json_object_get(ctx, "permissions"), "type"));
	*out = plan;
	if (type != NULL && strcmp(type, "disabled") == 0 && plan->net != SBX_NET_MANAGED) {
		fs_policy_free(pol);
		return 0;	/* "linuxSeccomp", as the reference says, with nothing applied */
	}
	plan->confine = 1;
	k = sbx_kernel();
	plan->cap_last = k->cap_last;
	*out = NULL;
	if (!k->seccomp) {
		snprintf(why, sizeof(why), "this kernel has no seccomp filters");
		goto refused;
	}
	if ((plan->filter = sbx_filter(plan->net, why, sizeof(why))) == NULL ||
	    (pol != NULL && plan_fs(plan, pol, ctx, why, sizeof(why)) == -1) ||
	    (pol == NULL && k->landlock_abi > 0 && (plan->ruleset_fd =
	    sbx_landlock_ruleset(NULL, 0, k->landlock_abi, plan->net, &plan->ll_handled, why,
	    sizeof(why))) == -1) ||
	    plan_namespaces(plan, why, sizeof(why)) == -1)
		goto refused;
	if (plan->net == SBX_NET_MANAGED && wants_transparent(params)) {
		if (!sbx_tp_supported()) {
			snprintf(why, sizeof(why), "this kernel cannot swap a connect's socket "
			    "(seccomp user notification with ADDFD)");
			goto refused;
		}
		plan->transparent = 1;
		plan->filter = sbx_filter_transparent();
	}
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
	fs_policy_free(pol);
	len = strlen(plan->mechanism);
	snprintf(plan->mechanism + len, sizeof(plan->mechanism) - len, "%s%sseccomp",
	    plan->ruleset_fd != -1 && len == 0 ? "landlock-domain+" : "",
	    plan->net == SBX_NET_MANAGED ? plan->transparent ? "netns+notify+" : "netns+" : "");
	*out = plan;
	return 0;
refused:
	fs_policy_free(pol);
	return refuse(plan, code, msg, msglen, why);
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

const char *const sandbox_capabilities[] = {
	"linuxRootWritePreservesDevices",
	"linuxApprovedRootWritePreservesRestrictions",
	NULL,
};

const char *
sandbox_type(const struct sandbox_plan *plan)
{
	return plan == NULL ? "none" : "linuxSeccomp";
}
