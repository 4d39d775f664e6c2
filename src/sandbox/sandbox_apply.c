/*
 * The child's side of a sandbox, between fork and exec (in the spawn
 * helper's clone): namespaces, mounts, the managed network, capabilities
 * dropped, no_new_privs, Landlock, then the seccomp filter last.  It only
 * carries out a plan the parent made (sandbox.c), and allocates nothing.
 */
#include "config.h"

#include <sys/prctl.h>
#include <sys/syscall.h>

#include <linux/capability.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "sandbox/sandbox_int.h"

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
