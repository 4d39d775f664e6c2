/* Listening sockets: accept, and serve each client in its own forked instance. */
#ifndef EXECD_LISTEN_H
#define EXECD_LISTEN_H

/* "ws://127.0.0.1:8765" -> a bound, listening socket; prints the client URL. */
int	listen_open(const char *url, int allow_remote, char *client_url, size_t urllen);
/*
 * Serve listening fds until SIGTERM, each client by serve_fn(in, out) in a
 * forked instance; returns the exit status.
 */
int	listen_serve(const int *fds, int nfds, int (*serve_fn)(int in_fd, int out_fd));
/* Inherited by systemd: the LISTEN_FDS descriptors (3...), or 0. */
int	listen_inherited(int *fds, int max);

#endif
