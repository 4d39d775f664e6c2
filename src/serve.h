/* One client connection's whole life in this process: loop, dispatcher, cleanup. */
#ifndef EXECD_SERVE_H
#define EXECD_SERVE_H

#include <sys/types.h>

/* Returns the process exit status. */
int	serve_connection(int in_fd, int out_fd);

/* serve_proxy.c: the embedded execd-proxy */
int	serve_proxy_find(void);
pid_t	serve_proxy_launch(int fd);

#endif
