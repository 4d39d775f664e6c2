/* Starting one child: fork, its own session and process group, pipes or a PTY, exec. */
#ifndef EXECD_PROC_SPAWN_H
#define EXECD_PROC_SPAWN_H

#include <sys/types.h>

struct spawn_req {
	char *const	*argv;
	const char	*arg0;		/* argv[0] the child sees, NULL: argv[0] */
	char *const	*envp;		/* exact environment */
	const char	*cwd;
	int		 tty;
	int		 pipe_stdin;
	unsigned short	 rows, cols;
	/* run in the child after fork, before exec; returns an errno or 0 */
	int		(*child_hook)(void *arg);
	void		*child_hook_arg;
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

#endif
