/* Socket address helpers shared by execd-proxy's front, protocols and relay. */
#ifndef EXECD_SOCKX_H
#define EXECD_SOCKX_H

#include <sys/socket.h>

#include <stdint.h>

/* The port (host order) of an AF_INET or AF_INET6 address. */
void	sockaddr_set_port(struct sockaddr_storage *ss, uint16_t port);

#endif
