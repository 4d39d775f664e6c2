/*
 * http(s) URLs parsed and serialised the way the reference's URL parser
 * (WHATWG URL Standard) does, so that what execd sends and the URLs in its
 * error texts match: scheme and host lower-cased, IPv4/IPv6 hosts
 * canonicalised, default port dropped, dot segments resolved, reserved
 * characters percent-encoded, empty path made "/".
 */
#ifndef EXECD_HTTP_URL_H
#define EXECD_HTTP_URL_H

#include <stddef.h>

#define HTTP_URL_ERRLEN	128

enum http_url_status {
	HTTP_URL_OK = 0,
	HTTP_URL_INVALID = -1,		/* err: "empty host", "invalid port number" ... */
	HTTP_URL_SCHEME = -2,		/* parsed, not http/https; err: the scheme */
	HTTP_URL_NOMEM = -3,
};

struct http_url {
	char	*href;		/* serialised, without userinfo (as in error texts) */
	char	*target;	/* href without the fragment: what goes on the wire */
	char	*origin;	/* "http://host[:port]" */
	char	*user;		/* percent-decoded userinfo, NULL when none */
	char	*password;
	int	 https;
	int	 port;		/* explicit port, -1 for the scheme's default */
};

/* base may be NULL; with a base, relative references are resolved against it. */
enum http_url_status http_url_parse(const char *in, const struct http_url *base,
	    struct http_url *u, char *err, size_t errlen);
int	 http_url_same_origin(const struct http_url *a, const struct http_url *b);
void	 http_url_free(struct http_url *u);

#endif
