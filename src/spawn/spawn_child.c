/*
 * The child's side of starting a command, between fork and exec: it runs
 * in the spawn helper's clone (spawner.c), or in execd's own fork before
 * the helper exists.
 */
#include "config.h"

#include <sys/ioctl.h>
#include <sys/prctl.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "evloop.h"
#include "sandbox/sandbox_plan.h"
#include "spawn/spawn.h"

struct exec_args {
	const char	*prog;
	char *const	*argv, *const *envp;
	int		 errfd;
};

/* The last step, in the command's own process; nothing but system calls. */
static void
exec_command(void *arg)
{
	const struct exec_args	*x = arg;
	int			 e;

	execve(x->prog, x->argv, x->envp);
	e = errno;
	(void)!write(x->errfd, &e, sizeof(e));
	_exit(127);
}

static pid_t	born_to;	/* 0: the parent at the fork */

void
spawn_child_parent(pid_t parent)
{
	born_to = parent;
}

void
spawn_child(const struct spawn_req *rq, const char *prog, const char *slave,
    int fds[3], int errfd)
{
	struct exec_args x;
	char *const	*argv = rq->argv;
	char		**av = NULL;
	sigset_t	 none;
	int		 e, i, fd, restore = -1;
	size_t		 n;

	/*
	 * Before its setsid the command is in no group of its own the helper
	 * could kill: it dies with execd by itself (as the reference's
	 * commands do), and if execd is already gone it goes no further.
	 * Kept across exec, lost on a set-user-ID one, whose group the helper
	 * kills.
	 */
	if (born_to == 0)
		born_to = getppid();
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1 || getppid() != born_to)
		_exit(127);
	ev_child_reset();
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (setsid() == -1)
		goto fail;
	/* out of the way of what goes to 0-2 and of 15, until 15 is made */
	if (errfd <= SPAWN_RESTORE_FD && (errfd = fcntl(errfd, F_DUPFD_CLOEXEC,
	    SPAWN_RESTORE_FD + 1)) == -1)
		_exit(127);
	if (rq->restore_fd != -1 && (restore = fcntl(rq->restore_fd, F_DUPFD_CLOEXEC,
	    SPAWN_RESTORE_FD + 1)) == -1)
		goto fail;
	/* the plan's too (a Landlock ruleset, a spare namespace): this
	   process's own copy of the plan, whatever the caller's const says */
	if (sandbox_plan_lift_fds((struct sandbox_plan *)rq->sandbox,
	    SPAWN_RESTORE_FD + 1) == -1)
		goto fail;
	if (rq->tty) {
		if ((fd = open(slave, O_RDWR)) == -1)
			goto fail;
		if (ioctl(fd, TIOCSCTTY, 0) == -1)
			goto fail;
		fds[0] = fds[1] = fds[2] = fd;
	}
	for (i = 0; i < 3; i++)
		if (dup2(fds[i], i) == -1)
			goto fail;
	if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == -1)
		goto fail;
	fcntl(errfd, F_SETFD, FD_CLOEXEC);
	/* dup2 leaves the copy open across exec */
	if (restore != -1 && dup2(restore, SPAWN_RESTORE_FD) == -1)
		goto fail;
	if (chdir(rq->cwd) == -1)
		goto fail;
	if (rq->arg0 != NULL) {
		for (n = 0; argv[n] != NULL; n++)
			;
		if ((av = calloc(n + 1, sizeof(*av))) == NULL)
			goto fail;
		memcpy(av, argv, n * sizeof(*av));
		av[0] = (char *)rq->arg0;
		argv = av;
	}
	x.prog = prog;
	x.argv = argv;
	x.envp = rq->envp;
	x.errfd = errfd;
	if (rq->sandbox == NULL)
		exec_command(&x);
	errno = sandbox_apply(rq->sandbox, errfd, exec_command, &x);
fail:
	e = errno;
	(void)!write(errfd, &e, sizeof(e));
	_exit(127);
}
