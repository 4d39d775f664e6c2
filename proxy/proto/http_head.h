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

/* What the fields of a request head say about its framing (head_note()). */
struct head_facts {
	unsigned	 hosts, lengths, encodings, upgrades;
	uint64_t	 length;	/* Content-Length */
	int		 chunked;	/* Transfer-Encoding: chunked */
};

size_t	head_end(const struct buf *);
int	head_note(struct head_facts *, const struct hdr *);
int	head_facts_ok(const struct head_facts *);
int	head_request_line(const char **p, const char *end, struct reqline *);
int	head_next(const char **p, const char *end, struct hdr *);
int	hdr_is(const struct hdr *, const char *name);
int	hdr_hop_by_hop(const struct hdr *);
int	token_in(const char *v, size_t vlen, const char *tok, size_t toklen);
struct chunk_scan;
long long chunk_scan(struct chunk_scan *, const uint8_t *p, size_t n);
struct sockaddr_storage;
int	parse_authority(const char *s, size_t len, char *host, size_t hostlen,
	    struct sockaddr_storage *lit, uint16_t *port, uint16_t defport, int *had_port);

#endif
