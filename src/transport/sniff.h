/* The first bytes of a connection decide its framing: HTTP upgrade or JSON lines. */
#ifndef EXECD_SNIFF_H
#define EXECD_SNIFF_H

#include <stddef.h>

struct jwt_conf;

/* What the transports are told once, at start-up: limits, and who must authenticate. */
struct transport_conf {
	size_t		 max_message;		/* bytes in one JSON-RPC message */
	unsigned	 header_timeout_ms;	/* a network client's HTTP head arrives within */
	unsigned	 ws_ping_ms;		/* WebSocket keepalive pings; 0: none */
	const char	*token;			/* capability token, NULL: none */
	const struct jwt_conf *jwt;		/* signed bearer tokens, NULL: none */
	int		 no_auth;		/* unauthenticated sockets explicitly allowed */
};

/* Once per instance, before the first connection: each transport gets its part. */
void	transport_init(const struct transport_conf *tc);

/* Serve one client on in_fd/out_fd (equal for a socket); returns when set up. */
int	sniff_start(int in_fd, int out_fd);

#endif
