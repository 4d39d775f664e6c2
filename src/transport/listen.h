/* Listening sockets: accept, and serve each client in its own forked instance. */
#ifndef EXECD_LISTEN_H
#define EXECD_LISTEN_H

#include <sys/types.h>

#include <stddef.h>

/* "ws://127.0.0.1:8765" -> a bound, listening socket; prints the client URL. */
int	listen_open(const char *url, int allow_remote, char *client_url, size_t urllen);
/*
 * Serve listening fds until SIGTERM, each client by serve_fn(in, out) in a
 * forked instance; returns the exit status.  When an instance ends, however
 * it ends, gone_fn(pid) removes what it kept outside itself, and the
 * listener (their subreaper) kills the processes it left.
 */
int	listen_serve(const int *fds, int nfds, int (*serve_fn)(int in_fd, int out_fd),
	    void (*gone_fn)(pid_t pid));
/* Inherited by systemd: the LISTEN_FDS descriptors (3...), or 0. */
int	listen_inherited(int *fds, int max);

#endif
