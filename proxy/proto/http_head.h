/* Parsing HTTP/1.x heads in place (http_head.c). */
#ifndef EXECD_PROXY_HTTP_HEAD_H
#define EXECD_PROXY_HTTP_HEAD_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

struct reqline {
	const char	*method, *target, *version;
	size_t		 mlen, tlen, vlen;
};

struct hdr {
	const char	*line, *name, *val;
	size_t		 linelen, nlen, vlen;
};

size_t	head_end(const struct buf *);
int	head_request_line(const char **p, const char *end, struct reqline *);
int	head_next(const char **p, const char *end, struct hdr *);
int	hdr_is(const struct hdr *, const char *name);
int	token_in(const char *v, size_t vlen, const char *tok, size_t toklen);
struct sockaddr_storage;
int	parse_authority(const char *s, size_t len, char *host, size_t hostlen,
	    struct sockaddr_storage *lit, uint16_t *port, uint16_t defport, int *had_port);

#endif
