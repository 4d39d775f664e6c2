/*
 * Session resume across connections.  Each instance serves one connection,
 * so a reconnecting client lands in a new instance: that instance hands its
 * connection (the descriptor, with SCM_RIGHTS) and the initialize request to
 * the instance that owns the session, through a per-session Unix socket in
 * the state directory.  The owner keeps its processes for the detach TTL.
 */
#ifndef EXECD_RESUME_H
#define EXECD_RESUME_H

#include <sys/types.h>

#include <jansson.h>

/*
 * expired: the session was not resumed within the TTL, end it.
 * take_over: serve the connection fd handed over by a new instance; 0 with
 * *peer naming it, or -1 (fd is then still ours to close).
 */
void	resume_init(const char *state_dir, unsigned ttl_ms, void (*expired)(void),
	    int (*take_over)(int fd, const char **peer));
/* After a successful initialize on a WebSocket: make the session reachable. */
int	resume_publish(const char *session_id);
/* The connection went away: keep the session for the TTL, or not. 1 if kept. */
int	resume_detached(void);
int	resume_waiting(void);		/* detached and waiting for a client */
/*
 * In a new instance: hand fd and the initialize request (id, params) to the
 * owner of session_id. 0: handed over (this instance is done), -1: no such
 * session, -2: it is attached elsewhere.
 */
int	resume_handoff(const char *session_id, int fd, json_t *id, json_t *params);
/* Remove our socket (at exit). */
void	resume_cleanup(void);
/*
 * Remove the session sockets in dir (and their owner files) whose instance
 * is gone: its pid is dead or is gone (-1: none known), and a connect is
 * refused.  A live owner's socket is left alone.  The count removed.
 */
int	resume_sweep(const char *dir, pid_t gone);

#endif
