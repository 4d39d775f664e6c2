/*
 * Just enough HTTP/1.x head parsing for a forward proxy: the request or
 * status line, header fields one by one, comma-separated tokens, and the
 * authority of a request target.  Heads are bounded (PROXY_HEAD_MAX) and
 * parsed in place; nothing here allocates.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "types.h"
#include "proto/http_head.h"
#include "policy/policy.h"

/* Length of the head including its blank line, 0 while incomplete. */
size_t
head_end(const struct buf *b)
{
	const uint8_t	*p = buf_head(b), *e;
	size_t		 n = buf_avail(b);

	if ((e = memmem(p, n, "\r\n\r\n", 4)) != NULL)
		return (size_t)(e - p) + 4;
	if ((e = memmem(p, n, "\n\n", 2)) != NULL)
		return (size_t)(e - p) + 2;
	return 0;
}

/* One line [*p, eol) without its CR LF; *p moves past it. */
static int
next_line(const char **p, const char *end, const char **line, size_t *len)
{
	const char	*nl;

	if (*p >= end)
		return 0;
	if ((nl = memchr(*p, '\n', (size_t)(end - *p))) == NULL)
		nl = end;
	*line = *p;
	*len = (size_t)(nl - *p);
	if (*len > 0 && (*line)[*len - 1] == '\r')
		(*len)--;
	*p = nl < end ? nl + 1 : end;
	return 1;
}

static int
is_tchar(int ch)
{
	return isalnum(ch) || (ch != 0 && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

/* "METHOD SP target SP HTTP/1.x"; *p is left at the first header line. */
int
head_request_line(const char **p, const char *end, struct reqline *rl)
{
	const char	*line, *sp1, *sp2;
	size_t		 len, i;

	if (!next_line(p, end, &line, &len) || len == 0)
		return -1;
	if ((sp1 = memchr(line, ' ', len)) == NULL)
		return -1;
	rl->method = line;
	rl->mlen = (size_t)(sp1 - line);
	if (rl->mlen == 0 || rl->mlen > 15)
		return -1;
	for (i = 0; i < rl->mlen; i++)
		if (!is_tchar((unsigned char)line[i]))
			return -1;
	rl->target = sp1 + 1;
	if ((sp2 = memchr(rl->target, ' ', (size_t)(line + len - rl->target))) == NULL)
		return -1;
	rl->tlen = (size_t)(sp2 - rl->target);
	if (rl->tlen == 0)
		return -1;
	for (i = 0; i < rl->tlen; i++)
		if ((unsigned char)rl->target[i] <= ' ' || rl->target[i] == 0x7f)
			return -1;
	rl->version = sp2 + 1;
	rl->vlen = (size_t)(line + len - rl->version);
	if (rl->vlen != 8 || strncmp(rl->version, "HTTP/1.", 7) != 0 ||
	    (rl->version[7] != '0' && rl->version[7] != '1'))
		return -1;
	return 0;
}

/* 1 and *h filled, 0 at the end of the head, -1 malformed. */
int
head_next(const char **p, const char *end, struct hdr *h)
{
	const char	*line, *colon;
	size_t		 len, i;

	if (!next_line(p, end, &line, &len) || len == 0)
		return 0;
	if (line[0] == ' ' || line[0] == '\t')
		return -1;		/* obsolete line folding */
	if ((colon = memchr(line, ':', len)) == NULL || colon == line)
		return -1;
	h->line = line;
	h->linelen = len;
	h->name = line;
	h->nlen = (size_t)(colon - line);
	for (i = 0; i < h->nlen; i++)
		if (!is_tchar((unsigned char)line[i]))
			return -1;
	h->val = colon + 1;
	h->vlen = (size_t)(line + len - h->val);
	while (h->vlen > 0 && (*h->val == ' ' || *h->val == '\t')) {
		h->val++;
		h->vlen--;
	}
	while (h->vlen > 0 && (h->val[h->vlen - 1] == ' ' || h->val[h->vlen - 1] == '\t'))
		h->vlen--;
	return 1;
}

/*
 * One field of a request head into *f; -1 for what the reference answers
 * with 400: CR, NUL or another control byte inside a value, a
 * Content-Length that is not a plain number, a Transfer-Encoding other
 * than "chunked".
 */
int
head_note(struct head_facts *f, const struct hdr *h)
{
	size_t		i;
	uint64_t	v = 0;

	for (i = 0; i < h->vlen; i++)
		if (((unsigned char)h->val[i] < ' ' && h->val[i] != '\t') || h->val[i] == 0x7f)
			return -1;
	if (hdr_is(h, "Host"))
		f->hosts++;
	else if (hdr_is(h, "Upgrade"))
		f->upgrades++;
	else if (hdr_is(h, "Transfer-Encoding")) {
		f->encodings++;
		if (h->vlen != 7 || strncasecmp(h->val, "chunked", 7) != 0)
			return -1;
		f->chunked = 1;
	} else if (hdr_is(h, "Content-Length")) {
		f->lengths++;
		if (h->vlen == 0 || h->vlen > 15)
			return -1;
		for (i = 0; i < h->vlen; i++) {
			if (!isdigit((unsigned char)h->val[i]))
				return -1;
			v = v * 10 + (uint64_t)(h->val[i] - '0');
		}
		f->length = v;
	}
	return 0;
}

/* One Host, one Content-Length, one Transfer-Encoding, never the last two together. */
int
head_facts_ok(const struct head_facts *f)
{
	return f->hosts <= 1 && f->lengths <= 1 && f->encodings <= 1 &&
	    !(f->lengths && f->encodings);
}

int
hdr_is(const struct hdr *h, const char *name)
{
	return strlen(name) == h->nlen && strncasecmp(h->name, name, h->nlen) == 0;
}

/* A field that concerns one connection only: never forwarded as it came. */
int
hdr_hop_by_hop(const struct hdr *h)
{
	static const char *const hop_by_hop[] = {
		"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authorization",
		"Proxy-Authenticate", "TE", "Upgrade", NULL,
	};
	size_t	i;

	for (i = 0; hop_by_hop[i] != NULL; i++)
		if (hdr_is(h, hop_by_hop[i]))
			return 1;
	return 0;
}

/* Is tok one of the comma-separated tokens of v? */
int
token_in(const char *v, size_t vlen, const char *tok, size_t toklen)
{
	const char	*e = v + vlen, *s;
	size_t		 n;

	while (v < e) {
		while (v < e && (*v == ' ' || *v == '\t' || *v == ','))
			v++;
		s = v;
		while (v < e && *v != ',')
			v++;
		n = (size_t)(v - s);
		while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
			n--;
		if (n == toklen && strncasecmp(s, tok, n) == 0)
			return 1;
	}
	return 0;
}

/*
 * "host:port", "[v6]:port" or, with defport, a bare host.  The host comes
 * out canonical (host_parse()), an address in *lit; HOST_NAME, HOST_ADDR
 * or -1.  *had_port tells whether a port was written.
 */
int
parse_authority(const char *s, size_t len, char *host, size_t hostlen,
    struct sockaddr_storage *lit, uint16_t *port, uint16_t defport, int *had_port)
{
	const char	*colon = NULL, *rb, *h = s, *e = s + len;
	char		 num[8];
	unsigned long	 v;
	char		*endp;
	size_t		 hl, nl;
	int		 kind;

	*had_port = 0;
	if (len == 0)
		return -1;
	if (*s == '[') {
		if ((rb = memchr(s, ']', len)) == NULL)
			return -1;
		if (rb + 1 < e && rb[1] != ':')
			return -1;
		colon = rb + 1 < e ? rb + 1 : NULL;
		hl = (size_t)(rb + 1 - s);
	} else {
		colon = memchr(s, ':', len);
		if (colon != NULL && memchr(colon + 1, ':', (size_t)(e - colon - 1)) != NULL)
			return -1;	/* an unbracketed IPv6 literal is ambiguous */
		hl = colon ? (size_t)(colon - s) : len;
	}
	if ((kind = host_parse(h, hl, host, hostlen, lit)) == -1)
		return -1;
	if (colon == NULL) {
		if (defport == 0)
			return -1;
		*port = defport;
		return kind;
	}
	nl = (size_t)(e - colon - 1);
	if (nl == 0 || nl >= sizeof(num))
		return -1;
	memcpy(num, colon + 1, nl);
	num[nl] = '\0';
	if (!isdigit((unsigned char)num[0]) || num[0] == '0')
		return -1;
	errno = 0;
	v = strtoul(num, &endp, 10);
	if (errno != 0 || *endp != '\0' || v == 0 || v > 65535)
		return -1;
	*port = (uint16_t)v;
	*had_port = 1;
	return kind;
}

/* ------------------------------------------------------- chunked bodies */

enum {
	CK_SIZE,	/* hex digits of a chunk size */
	CK_EXT,		/* ";name=value" after them */
	CK_SIZE_LF,
	CK_DATA,
	CK_DATA_CR,
	CK_DATA_LF,
	CK_TRAILER,	/* at the start of a trailer line or the final CRLF */
	CK_TRAILER_LINE,
	CK_TRAILER_LF,
	CK_END_LF,
};

#define CHUNK_DIGITS	15	/* a size below 2^60 */
#define CHUNK_LINE_MAX	4096	/* a size line with its extensions */

/*
 * How many of the n bytes at p belong to a chunked body (RFC 9112 7.1),
 * whose state *ck carries from call to call; ck->done once its last chunk
 * and trailers are through, and what follows is no part of it.  -1 for
 * anything malformed: a bare LF, a size that is not hex, no CRLF after a
 * chunk's data, a size line above CHUNK_LINE_MAX, trailers above
 * PROXY_HEAD_MAX.
 */
long long
chunk_scan(struct chunk_scan *ck, const uint8_t *p, size_t n)
{
	size_t	i = 0, take;
	int	ch;

	while (i < n && !ck->done) {
		if (ck->state == CK_DATA) {
			take = ck->left < n - i ? (size_t)ck->left : n - i;
			ck->left -= take;
			i += take;
			if (ck->left == 0)
				ck->state = CK_DATA_CR;
			continue;
		}
		ch = p[i++];
		if ((ck->state == CK_SIZE || ck->state == CK_EXT) && ++ck->line > CHUNK_LINE_MAX)
			return -1;
		if (ck->state >= CK_TRAILER && ++ck->total > PROXY_HEAD_MAX)
			return -1;
		switch (ck->state) {
		case CK_SIZE:
			if (isxdigit(ch) && ck->digits < CHUNK_DIGITS) {
				ck->left = ck->left << 4 | (uint64_t)(isdigit(ch) ? ch - '0' :
				    tolower(ch) - 'a' + 10);
				ck->digits++;
			} else if (ck->digits > 0 && ch == '\r')
				ck->state = CK_SIZE_LF;
			else if (ck->digits > 0 && (ch == ';' || ch == ' ' || ch == '\t'))
				ck->state = CK_EXT;
			else
				return -1;
			break;
		case CK_EXT:
			if (ch == '\r')
				ck->state = CK_SIZE_LF;
			else if ((ch < ' ' && ch != '\t') || ch == 0x7f)
				return -1;
			break;
		case CK_SIZE_LF:
			if (ch != '\n')
				return -1;
			ck->digits = 0;
			ck->line = 0;
			ck->state = ck->left > 0 ? CK_DATA : CK_TRAILER;
			break;
		case CK_DATA_CR:
			if (ch != '\r')
				return -1;
			ck->state = CK_DATA_LF;
			break;
		case CK_DATA_LF:
			if (ch != '\n')
				return -1;
			ck->state = CK_SIZE;
			break;
		case CK_TRAILER:
			if (ch == '\r')
				ck->state = CK_END_LF;
			else if (ch < ' ' || ch == 0x7f)
				return -1;
			else
				ck->state = CK_TRAILER_LINE;
			break;
		case CK_TRAILER_LINE:
			if (ch == '\r')
				ck->state = CK_TRAILER_LF;
			else if ((ch < ' ' && ch != '\t') || ch == 0x7f)
				return -1;
			break;
		case CK_TRAILER_LF:
			if (ch != '\n')
				return -1;
			ck->state = CK_TRAILER;
			break;
		case CK_END_LF:
			if (ch != '\n')
				return -1;
			ck->done = 1;
			break;
		}
	}
	return (long long)i;
}
