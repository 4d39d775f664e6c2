/* One client connection's whole life in this process: loop, dispatcher, cleanup. */
#ifndef EXECD_SERVE_H
#define EXECD_SERVE_H

#include <sys/types.h>

/*
 * Everything an instance needs before its client: the spawn helper, the
 * methods, the loop, and the instance narrowed to its allow-list.  -1 on
 * failure (logged).  A listener does this in a spare instance ahead of
 * the next connection (listen.c).
 */
int	serve_prepare(void);
/*
 * In a listener, before it forks: the tables and bindings every instance
 * would otherwise fill in its own copy (its pages stay shared).
 */
void	serve_warm(void);
/* Then serve the client until the session ends; the process exit status. */
int	serve_run(int in_fd, int out_fd);
/* Both, for an instance started with its connection. */
int	serve_connection(int in_fd, int out_fd);

/* serve_proxy.c: the embedded execd-proxy */
int	serve_proxy_find(void);
pid_t	serve_proxy_launch(int fd);

#endif
