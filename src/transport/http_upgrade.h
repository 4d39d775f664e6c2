/* The HTTP side of a WebSocket listener: routes, auth and the RFC 6455 upgrade. */
#ifndef EXECD_HTTP_UPGRADE_H
#define EXECD_HTTP_UPGRADE_H

#include <stddef.h>

struct jwt_conf;

/*
 * The reference (hyper) takes a head of about 400 KiB (a little more,
 * depending on how the bytes arrive) and 100 header fields; over that, 431.
 */
#define HTTP_HEAD_MAX		(400 * 1024)
#define HTTP_HEADERS_MAX	100

enum http_verdict {
	HTTP_INCOMPLETE,	/* need more bytes */
	HTTP_RESPOND,		/* send resp, then close */
	HTTP_UPGRADE,		/* send resp (101), then WebSocket */
};

struct http_result {
	enum http_verdict	 verdict;
	size_t			 head_len;	/* bytes of the request head */
	char			 resp[1024];
	size_t			 resp_len;
	int			 status;
	int			 http10;	/* answer as HTTP/1.0 */
	int			 head_method;	/* a HEAD request: no body */
};

/* Once, before the first head: the capability token and the JWT check, each NULL: none. */
void	http_upgrade_init(const char *token, const struct jwt_conf *jwt);
/*
 * Look at the bytes received so far. need_auth: a capability token must be
 * presented (the one http_upgrade_init() was given).
 */
void	http_upgrade_parse(const char *data, size_t len, int need_auth,
	    struct http_result *r);
/* base64(SHA-1(key + GUID)) into out (29 bytes at least) */
int	http_ws_accept(const char *key, size_t keylen, char *out, size_t outlen);

#endif
