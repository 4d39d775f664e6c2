/* execd's run-time settings, fixed after start-up. */
#ifndef EXECD_EXECD_H
#define EXECD_EXECD_H

#include <stddef.h>
#include <stdint.h>

#define EXECD_VERSION_STRING	PACKAGE_VERSION

struct jwt_conf;

struct execd_conf {
	size_t		 max_message;		/* bytes in one JSON-RPC message */
	size_t		 retention_bytes;	/* output kept per process */
	size_t		 retention_chunks;
	unsigned	 kill_grace_ms;		/* SIGTERM -> SIGKILL */
	unsigned	 closed_keep_ms;	/* a closed process stays readable */
	unsigned	 concurrency;		/* requests in flight per connection */
	unsigned	 header_timeout_ms;	/* HTTP upgrade must arrive within */
	const char	*token;			/* capability token, NULL: none */
	const struct jwt_conf *jwt;		/* signed bearer tokens, NULL: none */
	int		 no_auth;		/* explicitly allow unauthenticated sockets */
	const char	*proxy_control;		/* execd-proxy control socket, NULL: none */
	const char	*proxy_program;		/* the embedded execd-proxy, NULL: found */
	int		 no_embedded_proxy;	/* without a sidecar, no networkProxy */
	const char	*state_dir;		/* per-session sockets for resume */
	unsigned	 resume_ttl_ms;		/* a detached session lives this long; 0: no resume */
	unsigned	 ws_ping_ms;		/* WebSocket keepalive pings, as the reference's 30 s */
};

extern struct execd_conf conf;

#endif
