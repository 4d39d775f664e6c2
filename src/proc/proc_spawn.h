/*
 * Starting one child: the program resolved, pipes or a PTY, the spawn
 * helper asked (or a fork), the exec's outcome read back.
 */
#ifndef EXECD_PROC_SPAWN_H
#define EXECD_PROC_SPAWN_H

#include <sys/types.h>

#include <jansson.h>

#include "spawn/spawn.h"

struct spawn_res {
	pid_t	pid;
	int	out_fd;		/* stdout, or the PTY master */
	int	err_fd;		/* stderr, -1 with a PTY */
	int	in_fd;		/* stdin writer, -1 when stdin is /dev/null */
};

/*
 * 0 on success; else -1 with *err set to the errno of what failed (0 when
 * no OS call failed: a PTY program not found on PATH) and msg to the
 * reference's wording of it.
 */
int	proc_spawn(const struct spawn_req *rq, struct spawn_res *res, int *err,
	    char *msg, size_t msglen);
/*
 * For a PTY command whose relative program prog holds a NUL: the reference's
 * words (malloc'd, the NUL as jx_id() keeps it); else NULL.
 */
char	*proc_pty_nul_words(json_t *prog, const char *cwd, json_t *env, int with_arg0);

#endif
