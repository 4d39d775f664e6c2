/*
 * The child's side of a sandbox, between fork and exec (in the spawn
 * helper's clone): for a restricted filesystem or a managed network, a
 * user namespace where the kernel allows one, then mount, pid and IPC
 * namespaces (and a network one for the managed network), the
 * mount view (sandbox_mount.c), the managed network's routes, and the
 * pid namespace's processes (sandbox_pidns.c); then, in the command's
 * own process, capabilities dropped, no_new_privs, Landlock, and the
 * seccomp filter last.  It only carries out a plan the parent made
 * (sandbox.c), and allocates nothing.
 */
#include "config.h"

#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/capability.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "sandbox/sandbox_int.h"
#include "sandbox/sandbox_tp.h"

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

int
sbx_userns_enter(const struct sandbox_plan *plan)
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
	/* and not dumpable again: this memory is a copy of execd's, B's too (CLONE_VM) */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1)
		return errno;
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

/* The command's own part, in C (or in the child itself without namespaces). */
static int
confine(const struct sandbox_plan *plan)
{
	int	e;

	/* the fresh /dev's pts and shm, and /proc, are new to the ruleset */
	if (plan->namespaces && plan->ruleset_fd != -1 &&
	    (e = sbx_landlock_view(plan->ruleset_fd, plan->ll_handled, plan->ll_proc)) != 0)
		return e;
	if ((e = drop_caps(plan)) != 0)
		return e;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		return errno;
	if (plan->ruleset_fd != -1 && (e = sbx_landlock_apply(plan->ruleset_fd)) != 0)
		return e;
	if (plan->transparent)
		return sbx_filter_install_notify(plan->filter, plan->route_sv[1]);
	return sbx_filter_install(plan->filter);
}

struct exec_step {
	const struct sandbox_plan	*plan;
	int				 errfd;
	void				(*exec)(void *);
	void				*arg;
};

/* C, which shares B's memory until it execs: nothing here may return. */
static void
run_command(void *arg)
{
	const struct exec_step	*x = arg;
	int			 e;

	if ((e = confine(x->plan)) != 0) {
		(void)!write(x->errfd, &e, sizeof(e));
		_exit(127);
	}
	x->exec(x->arg);
}

/*
 * N: the network namespace, made beside A (a new one costs about half a
 * millisecond, the length of A's mount view) and left to B to enter.  N
 * shares A's memory and descriptors: the namespace's descriptor it opens
 * is A's.  It makes system calls only, none expected to fail (A and N
 * share errno: a failure of N's could at worst turn a failure of A's into
 * another errno, never into success).
 */
struct net_step {
	const struct sandbox_plan	*plan;
	int				 netfd;
};

static char	n_stack[32 * 1024] __attribute__((aligned(16)));

/* Its exit status: 0 or an errno (returned, not _exit: no noreturn call on this stack). */
static int
n_main(void *arg)
{
	struct net_step	*ns = arg;

	if (unshare(CLONE_NEWNET) == -1)
		return errno ? errno : EIO;
	if ((ns->netfd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) == -1)
		return errno ? errno : EIO;
	return sbx_net_apply(ns->plan);
}

/* N's end: 0 with ns->netfd, or the errno that stopped it. */
static int
net_join(pid_t n, struct net_step *ns)
{
	int	st;

	while (waitpid(n, &st, __WALL) == -1)
		if (errno != EINTR)
			return errno;
	if (!WIFEXITED(st))
		return EIO;
	if (WEXITSTATUS(st) != 0)
		return WEXITSTATUS(st);
	return ns->netfd == -1 ? EIO : 0;
}

/* A: execd's child, still outside; returns only with an errno, in A. */
static int
enter_namespaces(const struct exec_step *x)
{
	const struct sandbox_plan	*plan = x->plan;
	struct net_step			 ns = { plan, -1 };
	int				 flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC, e;
	pid_t				 n = -1;

	/* the command never runs without the protection it was promised */
	if (plan->fatal != NULL) {
		(void)!write(STDERR_FILENO, plan->fatal, strlen(plan->fatal));
		_exit(1);
	}
	/* with execd: its end of the exec-errno pipe tells whether it is still there */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1)
		return errno;
	if (!sbx_reader_alive(x->errfd))
		_exit(127);
	if (plan->spare_netns != -1) {
		/* made ahead (sandbox_spare.c): joined, and the routes made in it */
		if (setns(plan->spare_userns, CLONE_NEWUSER) == -1 ||
		    setns(plan->spare_netns, CLONE_NEWNET) == -1)
			return errno;
		if ((e = sbx_net_apply(plan)) != 0)
			return e;
	} else if (plan->new_userns && (e = sbx_userns_enter(plan)) != 0)
		return e;
	/* N, in the user namespace (its capabilities), before A's mount namespace */
	if (plan->new_netns && plan->spare_netns == -1 && (n = clone(n_main, n_stack +
	    sizeof(n_stack), CLONE_VM | CLONE_FILES | SIGCHLD, &ns)) == -1)
		return errno;
	if (unshare(flags) == -1)
		e = errno;
	else if ((e = sbx_mount_apply(plan)) == 0 && plan->transparent)
		e = sbx_dns_resolv();	/* the view's resolv.conf names the answerer */
	/* always waited for: N shares this memory and these descriptors */
	if (n != -1) {
		int ne = net_join(n, &ns);
		if (e == 0)
			e = ne;
	}
	if (e != 0)
		return e;
	return sbx_supervise(x->errfd, ns.netfd, run_command, (void *)x);
}

int
sandbox_apply(const struct sandbox_plan *plan, int errfd, void (*exec)(void *), void *arg)
{
	struct exec_step	x = { plan, errfd, exec, arg };
	int			e;

	if (!plan->confine)
		exec(arg);
	if (plan->namespaces)
		return enter_namespaces(&x);
	if ((e = confine(plan)) != 0)
		return e;
	exec(arg);
	return 0;	/* not reached */
}
