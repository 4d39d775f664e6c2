/*
 * The spawn helper: a process forked from execd before execd narrows
 * itself, which starts the commands.  A seccomp filter is inherited by
 * every child and can never be lifted, so execd's own allow-list must not
 * be in the ancestry of the commands it runs; the helper's is not.
 *
 * The helper creates each command with clone(CLONE_PARENT): the command
 * is execd's child, not the helper's, so execd reaps it through its
 * signalfd, signals its group and adopts its orphans as before.  The
 * helper reads requests from one socket and does nothing else; at its end
 * of file, however execd ended, it kills every command's process group it
 * knows to be in use (spawn_groups.c) and exits.
 */
#ifndef EXECD_SPAWNER_H
#define EXECD_SPAWNER_H

#include <sys/types.h>

#include "spawn/spawn.h"

struct wire_in;

/* Fork the helper.  -1 when it cannot be started (logged). */
int	 spawner_start(void);
/* Close its socket and reap it. */
void	 spawner_stop(void);
/* Its pid, -1 when there is none (not started, or gone). */
pid_t	 spawner_pid(void);
/* Was it started?  Then children come only from it (EAGAIN once it is gone). */
int	 spawner_used(void);
/* execd reaped it: it is gone for good, and spawning fails from now on. */
void	 spawner_lost(void);
/* execd reaped pid (any child): the helper forgets the groups now empty. */
void	 spawner_reaped(pid_t pid);

/*
 * Start the child of rq (after resolution: prog; a PTY slave path or the
 * three standard descriptors; errfd, where the child writes the errno of
 * a failed step).  Returns the pid, or -1 with errno.
 */
pid_t	 spawner_spawn(const struct spawn_req *rq, const char *prog, const char *slave,
	    const int fds[3], int errfd);
/*
 * Close fd in the helper, not here, and without waiting for it: the last
 * close of a removed directory frees its blocks, which can wait on the
 * disk (a synchronous discard on this file system).
 */
void	 spawner_close_later(const int *fds, size_t n);
/* Can a child make mount and network namespaces?  -1 with errno on failure. */
int	 spawner_probe_ns(int direct);

/* In the helper: one spawn request, decoded (pointers into the message). */
struct spawn_msg {
	struct spawn_req	 rq;
	const char		*prog, *slave;
	char			**argv, **envp;
	int			 fds[3], errfd;
	struct sandbox_plan	*plan;
};

/* 0, or -1 for a malformed request (nothing is left allocated). */
int	 spawner_decode(struct wire_in *r, struct spawn_msg *m);
void	 spawner_msg_free(struct spawn_msg *m);

#endif
