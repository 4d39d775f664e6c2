/*
 * A sandboxed command's processes, once A (the process the spawn helper
 * cloned, execd's child) has made the namespaces and the mount view
 * (sandbox_apply.c):
 *
 *   A  execd's child, outside the new pid namespace: waits for B, and
 *      ends as the command ended (its exit code, or the same signal), so
 *      execd sees the command's own status;
 *   B  pid 1 of the new pid namespace: mounts a fresh /proc (its
 *      host-wide knobs read-only), reaps orphans, and once C has ended
 *      kills and reaps every process left in the namespace (setsid
 *      daemons too) before it tells A how C ended: nothing of the
 *      sandbox outlives its process/closed;
 *   C  the command: back in sandbox_apply, then exec.
 *
 * B then outlives A, and dies with it (PR_SET_PDEATHSIG): the last
 * process of the namespaces pays for their teardown (the mount
 * namespace's takes an RCU grace period), and that way it is paid after
 * execd has reaped A and reported the command closed, not before.
 *
 * A and B block the catchable signals: execd signals the process group,
 * and they are for C, which gets the mask back.  A dies with execd, B
 * with A (PR_SET_PDEATHSIG); A SIGKILLed (process/terminate) takes B,
 * and with it the namespace.  Nothing here allocates.
 */
#include "config.h"

#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include "sandbox/sandbox_int.h"

/* the mask C gets back: what the spawn helper's child had */
static sigset_t	c_mask;

/*
 * Blocked, not ignored, and in one call: a signal for C that comes
 * before C exists stays pending in A or B, and is never C's (a new
 * process starts with nothing pending).  The ones a fault raises cannot
 * be blocked for A and B in effect: the kernel forces them.
 */
static void
block_signals(void)
{
	sigset_t	all;

	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &c_mask);
}

static void
restore_signals(void)
{
	sigprocmask(SIG_SETMASK, &c_mask, NULL);
}

/* Every descriptor but fd closed (A and B need one pipe end each). */
static void
keep_only(int fd)
{
	if (fd > 0)
		close_range(0, (unsigned)fd - 1, 0);
	close_range((unsigned)fd + 1, ~0U, 0);
}

/* Is the other end of this pipe still read?  (Its reader is our parent.) */
int
sbx_reader_alive(int wfd)
{
	struct pollfd	pfd = { .fd = wfd, .events = POLLOUT };

	return poll(&pfd, 1, 0) >= 0 && !(pfd.revents & (POLLERR | POLLHUP));
}

/* A's end: C's status as its own. */
static void __attribute__((noreturn))
reproduce(int status)
{
	struct rlimit	none = { 0, 0 };
	sigset_t	set;
	int		sig;

	if (WIFEXITED(status))
		_exit(WEXITSTATUS(status));
	if (!WIFSIGNALED(status))
		_exit(127);
	sig = WTERMSIG(status);
	(void)setrlimit(RLIMIT_CORE, &none);	/* the command's core, if any, was dumped */
	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	_exit(128 + sig);
}

static void __attribute__((noreturn))
run_a(pid_t b, int status_rd)
{
	ssize_t	n;
	int	raw, st;

	keep_only(status_rd);
	do
		n = read(status_rd, &raw, sizeof(raw));
	while (n == -1 && errno == EINTR);
	/* B speaks only once the namespace holds nothing but B: no need to wait for it */
	if (n == sizeof(raw))
		reproduce(raw);
	/* B gone without a word (it failed, or was killed): its own status, once it is gone */
	while (waitpid(b, &st, 0) == -1)
		if (errno != EINTR)
			_exit(127);
	reproduce(st);
}

/*
 * The host-wide knobs of a fresh /proc stay read-only, as under
 * bubblewrap: uid 0 without capabilities may still write many sysctls
 * (the host's hostname among them), Landlock or not.
 */
static const char *const proc_ro[] = {
	"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"
};

static int
mount_proc(void)
{
	struct mount_attr	ro = { .attr_set = MOUNT_ATTR_RDONLY };
	size_t			i;

	/* never the host's /proc: an empty one if a fresh one cannot be had */
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == -1) {
		if (mount("tmpfs", "/proc", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV |
		    MS_NOEXEC, "mode=000,size=4k") == 0)
			return 0;
		return errno;
	}
	for (i = 0; i < sizeof(proc_ro) / sizeof(proc_ro[0]); i++) {
		if (mount(proc_ro[i], proc_ro[i], NULL, MS_BIND | MS_REC, NULL) == -1) {
			if (errno == ENOENT)
				continue;
			return errno;
		}
		if (mount_setattr(AT_FDCWD, proc_ro[i], AT_RECURSIVE, &ro, sizeof(ro)) == -1)
			return errno;
	}
	return 0;
}

/*
 * Once C has ended: every process left in the namespace killed (the
 * kernel lets none fork once SIGKILL is pending) and reaped; an orphan
 * comes to B before its parent can be reaped, so ECHILD means nobody is
 * left.
 */
static void
empty_namespace(void)
{
	(void)kill(-1, SIGKILL);
	while (waitpid(-1, NULL, 0) != -1 || errno == EINTR)
		;
}

/* B's duty as init: reap everything, end the rest with C, report C, outlive A. */
static void __attribute__((noreturn))
run_b(pid_t c, int status_wr)
{
	pid_t	pid;
	int	st;

	keep_only(status_wr);
	for (;;) {
		if ((pid = waitpid(-1, &st, 0)) == -1) {
			if (errno == EINTR)
				continue;
			_exit(127);
		}
		if (pid == c && (WIFEXITED(st) || WIFSIGNALED(st)))
			break;
	}
	empty_namespace();
	if (write(status_wr, &st, sizeof(st)) != sizeof(st))
		_exit(127);
	close(status_wr);
	/* every signal blocked: only A's death (PR_SET_PDEATHSIG) ends this */
	for (;;)
		pause();
}

/*
 * B's and C's stacks.  B shares A's memory (A only waits, on its own
 * stack), and C shares it until its exec (B waits for that, as with
 * posix_spawn): the start pays for one page-table copy, A's, instead of
 * three.  Neither B nor C allocates; they make system calls only.
 */
static char	b_stack[64 * 1024] __attribute__((aligned(16)));
static char	c_stack[64 * 1024] __attribute__((aligned(16)));

struct start_b {
	int	 status_wr, errfd, netfd;
	void	(*command)(void *);
	void	*arg;
};

static int
c_main(void *arg)
{
	const struct start_b	*sb = arg;

	restore_signals();
	sb->command(sb->arg);
	_exit(127);	/* not reached */
}

static int
b_main(void *arg)
{
	struct start_b	*sb = arg;
	pid_t		 c;
	int		 e;

	/* A may be gone already, before the death signal was set */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1 || !sbx_reader_alive(sb->status_wr))
		_exit(127);
	/* the managed network's namespace, made beside A (sandbox_apply.c) */
	if (sb->netfd != -1 && setns(sb->netfd, CLONE_NEWNET) == -1) {
		e = errno;
		goto fail;
	}
	if ((e = mount_proc()) != 0)
		goto fail;
	if ((c = clone(c_main, c_stack + sizeof(c_stack), CLONE_VM | CLONE_VFORK | SIGCHLD,
	    sb)) == -1) {
		e = errno;
		goto fail;
	}
	run_b(c, sb->status_wr);
fail:
	(void)!write(sb->errfd, &e, sizeof(e));
	_exit(127);
}

int
sbx_supervise(int errfd, int netfd, void (*command)(void *), void *arg)
{
	struct start_b	sb = { -1, errfd, netfd, command, arg };
	int		sp[2], e;
	pid_t		b;

	if (pipe2(sp, O_CLOEXEC) == -1)
		return errno;
	sb.status_wr = sp[1];
	/* before B exists: a signal meant for C must not end A or B first */
	block_signals();
	if ((b = clone(b_main, b_stack + sizeof(b_stack), CLONE_VM | SIGCHLD, &sb)) == -1) {
		e = errno;
		close(sp[0]);
		close(sp[1]);
		restore_signals();
		return e;
	}
	/* B has its own descriptor table: A's copy of the write end goes */
	close(sp[1]);
	run_a(b, sp[0]);
}
