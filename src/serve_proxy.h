/*
 * The embedded execd-proxy: an instance's own sidecar, started on a
 * socketpair at its first networkProxy process (serve_proxy.c).
 */
#ifndef EXECD_SERVE_PROXY_H
#define EXECD_SERVE_PROXY_H

#include <sys/types.h>

/* Whether there is an execd-proxy program to start: 0 found, -1 not (logged once). */
int	serve_proxy_find(void);
/* Start it with fd as its control connection; its pid, or -1 (logged). */
pid_t	serve_proxy_launch(int fd);

#endif
