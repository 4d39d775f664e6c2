/*
 * Starting a command's process: what is asked (the request), and the
 * child's own steps after fork (spawn_child.c), run by the spawn helper
 * (spawner.c) or, before it exists, by execd's own fork.
 */
#ifndef EXECD_SPAWN_H
#define EXECD_SPAWN_H

#include <sys/types.h>

struct sandbox_plan;

struct spawn_req {
	char *const	*argv;
	const char	*arg0;		/* argv[0] the child sees, NULL: argv[0] */
	char *const	*envp;		/* exact environment */
	const char	*cwd;
	int		 tty;
	int		 pipe_stdin;
	unsigned short	 rows, cols;
	/* applied in the child after fork, before exec; NULL: unsandboxed */
	const struct sandbox_plan *sandbox;
	/* given to the child as its descriptor 15 (a shell snapshot); -1: none */
	int		 restore_fd;
	/*
	 * Called in the parent once the child is on its way (the request sent
	 * to the spawn helper, or the fork made), before waiting for its exec
	 * (the sandbox's placeholders: sandbox_spawned); -1: the child is
	 * told not to go on, and its failure is the start's.  NULL: none.
	 */
	int		(*spawned)(void *);
	void		*spawned_arg;
};

#define SPAWN_RESTORE_FD	15

/*
 * The child's side, after fork (in the spawn helper's clone): its own
 * session, the descriptors (a PTY slave path, or the three standard
 * descriptors), the sandbox, exec of prog.  On failure the errno goes to
 * errfd and the child exits 127.
 */
void	spawn_child(const struct spawn_req *rq, const char *prog, const char *slave,
	    int fds[3], int errfd) __attribute__((noreturn));
/*
 * The process the children are born to (the spawn helper clones them as
 * execd's): they die with it.  Unset, the parent found at the fork.
 */
void	spawn_child_parent(pid_t parent);

#endif
