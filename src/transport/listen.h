/* Listening sockets: accept, and serve each client in its own forked instance. */
#ifndef EXECD_LISTEN_H
#define EXECD_LISTEN_H

#include <sys/types.h>

#include <stddef.h>

/*
 * "ws://127.0.0.1:8765" -> a bound, listening socket; client_url gets the
 * URL a client connects to, with token (NULL: none) as its path.
 */
int	listen_open(const char *url, int allow_remote, const char *token, char *client_url,
	    size_t urllen);
/* What a forked instance runs, and what the listener does when one ends. */
struct listen_ops {
	/*
	 * Once, in the listener before its first fork: what every instance
	 * would otherwise do the same way itself (NULL: nothing).
	 */
	void	(*warm)(void);
	int	(*prepare)(void);		/* -1: the instance cannot serve */
	int	(*run)(int in_fd, int out_fd);	/* the client; the exit status */
	void	(*gone)(pid_t pid);
};
/*
 * Serve listening fds until SIGTERM, each client in a forked instance
 * (prepared ahead, see listen.c); returns the exit status.  When an
 * instance ends, however it ends, gone(pid) removes what it kept outside
 * itself, and the listener (their subreaper) kills the processes it left.
 */
int	listen_serve(const int *fds, int nfds, const struct listen_ops *ops);
/* Inherited by systemd: the LISTEN_FDS descriptors (3...), or 0. */
int	listen_inherited(int *fds, int max);

#endif
