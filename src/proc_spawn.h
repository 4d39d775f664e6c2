/* Starting one child: fork, its own session and process group, pipes or a PTY, exec. */
#ifndef EXECD_PROC_SPAWN_H
#define EXECD_PROC_SPAWN_H

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
};

struct spawn_res {
	pid_t	pid;
	int	out_fd;		/* stdout, or the PTY master */
	int	err_fd;		/* stderr, -1 with a PTY */
	int	in_fd;		/* stdin writer, -1 when stdin is /dev/null */
};

/*
 * 0 on success; else -1 with *err set to the errno of what failed and msg to
 * the reference's wording of it.
 */
int	proc_spawn(const struct spawn_req *rq, struct spawn_res *res, int *err,
	    char *msg, size_t msglen);
/*
 * The child's side, after fork (in the spawn helper's clone): its own
 * session, the descriptors, the sandbox, exec.  On failure the errno goes
 * to errfd and the child exits 127.
 */
void	proc_spawn_exec(const struct spawn_req *rq, const char *prog, const char *slave,
	    int fds[3], int errfd) __attribute__((noreturn));

#endif
