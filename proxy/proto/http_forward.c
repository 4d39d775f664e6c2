/*
 * Forwarding one absolute-URI (or origin-form with Host) request: the
 * head is rewritten to origin form without hop-by-hop fields and with
 * "Connection: close", the body is relayed as it comes, and the response
 * head is rewritten the same way on its way back.  One request per
 * connection keeps every request under its own policy decision.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proto/proto.h"
#include "proto/http_head.h"
#include "relay/relay.h"
#include "policy/policy.h"

/* Named in any Connection header of the head [p, end)? */
static int
named_by_connection(const char *p, const char *end, const struct hdr *field)
{
	struct reqline	rl;
	struct hdr	h;

	if (head_request_line(&p, end, &rl) == -1)
		return 0;
	while (head_next(&p, end, &h) == 1)
		if (hdr_is(&h, "Connection") && token_in(h.val, h.vlen, field->name, field->nlen))
			return 1;
	return 0;
}

/*
 * Fields a Connection header may not take away: what frames the body (the
 * proxy counts it by them, the upstream must too) and what names the host.
 */
static int
hdr_kept(const struct hdr *h)
{
	return hdr_is(h, "Content-Length") || hdr_is(h, "Transfer-Encoding") ||
	    hdr_is(h, "Host");
}

static int
append_str(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

static int
append_line(struct buf *b, const char *s, size_t n)
{
	return buf_append(b, s, n) == -1 || buf_append(b, "\r\n", 2) == -1 ? -1 : 0;
}

static void
fmt_authority(const struct conn *c, char *out, size_t len)
{
	int	v6 = strchr(c->host, ':') != NULL;

	snprintf(out, len, "%s%s%s:%u", v6 ? "[" : "", c->host, v6 ? "]" : "", c->port);
}

/* Split the target into authority and path; the authority may come from Host. */
static int
split_target(const struct reqline *rl, const char **auth, size_t *alen,
    const char **path, size_t *plen, char *err, size_t errlen)
{
	const char	*t = rl->target, *e = rl->target + rl->tlen, *s;

	/*
	 * A request target has no fragment (RFC 9112 3.2).  Passed on, an
	 * upstream proxy could read "http://a#@b/" as user "a#" at host b.
	 */
	if (memchr(t, '#', rl->tlen) != NULL) {
		snprintf(err, errlen, "fragment in the request target\n");
		return -1;
	}
	if (rl->tlen > 7 && strncasecmp(t, "http://", 7) == 0) {
		*auth = t + 7;
		for (s = *auth; s < e && *s != '/' && *s != '?' && *s != '#'; s++)
			;
		*alen = (size_t)(s - *auth);
		if (memchr(*auth, '@', *alen) != NULL) {
			snprintf(err, errlen, "credentials in the request URL are not supported\n");
			return -1;
		}
		*path = s;
		*plen = (size_t)(e - s);
		return 0;
	}
	if (t[0] == '/') {
		*auth = NULL;
		*path = t;
		*plen = rl->tlen;
		return 0;
	}
	if (rl->tlen > 8 && strncasecmp(t, "https://", 8) == 0)
		snprintf(err, errlen, "https:// requests must use CONNECT\n");
	else
		snprintf(err, errlen, "unsupported request target\n");
	return -1;
}

/* The Host field must name the same host and port as an absolute target. */
static int
host_matches(struct conn *c, const struct hdr *host, char *err, size_t errlen)
{
	char			hh[PROXY_HOST_MAX + 1];
	struct sockaddr_storage	ss;
	uint16_t		hp;
	int			had;

	/* both canonical: equal text is the same name or the same address */
	if (parse_authority(host->val, host->vlen, hh, sizeof(hh), &ss, &hp, 80, &had) == -1) {
		conn_raw_host(c, host->val, host->vlen);
		snprintf(err, errlen, "invalid Host header\n");
		return -1;
	}
	if (strcmp(hh, c->host) != 0 || hp != c->port) {
		snprintf(err, errlen, "Host header does not match request target\n");
		return -1;
	}
	return 0;
}

static int
build_head(struct conn *c, const struct broker *broker, const struct reqline *rl,
    const char *path, size_t plen, const char *head, const char *end,
    const struct hdr *upgrade, int have_host)
{
	struct buf	*b = &c->uhead;
	char		 auth[PROXY_HOST_MAX + 16];
	const char	*p = head;
	struct reqline	 skip;
	struct hdr	 h;

	fmt_authority(c, auth, sizeof(auth));
	if (buf_append(b, rl->method, rl->mlen) == -1 || append_str(b, " ") == -1)
		return -1;
	if (c->conf->upstream != NULL &&
	    (append_str(b, "http://") == -1 || append_str(b, auth) == -1))
		return -1;
	if ((plen == 0 || path[0] == '?') && append_str(b, "/") == -1)
		return -1;
	if (buf_append(b, path, plen) == -1 || append_str(b, " ") == -1 ||
	    append_line(b, rl->version, rl->vlen) == -1)
		return -1;
	if (!have_host && (append_str(b, "Host: ") == -1 ||
	    append_line(b, auth, strlen(auth)) == -1))
		return -1;
	head_request_line(&p, end, &skip);
	while (head_next(&p, end, &h) == 1) {
		if (hdr_hop_by_hop(&h) ||
		    (!hdr_kept(&h) && named_by_connection(head, end, &h)))
			continue;
		switch (broker_rewrite_line(broker, 0, c->host, c->port,
		    plen ? path : "/", plen ? plen : 1, h.line, h.linelen, b)) {
		case -1:
			return -1;
		case 1:
			continue;
		}
		if (append_line(b, h.line, h.linelen) == -1)
			return -1;
	}
	if (upgrade != NULL) {
		if (append_str(b, "Upgrade: ") == -1 ||
		    append_line(b, upgrade->val, upgrade->vlen) == -1 ||
		    append_str(b, "Connection: Upgrade\r\n") == -1)
			return -1;
	} else if (append_str(b, "Connection: close\r\n") == -1)
		return -1;
	if (c->conf->upstream != NULL && c->conf->upstream->auth != NULL &&
	    (append_str(b, "Proxy-Authorization: Basic ") == -1 ||
	    append_line(b, c->conf->upstream->auth, strlen(c->conf->upstream->auth)) == -1))
		return -1;
	return append_str(b, "\r\n");
}

int
http_forward_prepare(struct conn *c, const struct reg *reg, const struct reqline *rl,
    const char *head, size_t headlen, char *err, size_t errlen)
{
	const char	*auth, *path, *p = head, *end = head + headlen;
	size_t		 alen, plen;
	struct reqline	 skip;
	struct hdr	 h, host = { 0 }, upgrade = { 0 };
	int		 have_host = 0, conn_upgrade = 0, had, kind;

	c->proto = PROTO_HTTP;
	c->forwarded = 1;
	if (split_target(rl, &auth, &alen, &path, &plen, err, errlen) == -1)
		return -1;
	head_request_line(&p, end, &skip);
	while (head_next(&p, end, &h) == 1) {
		if (hdr_is(&h, "Host") && !have_host) {
			host = h;
			have_host = 1;
		} else if (hdr_is(&h, "Upgrade"))
			upgrade = h;
		else if (hdr_is(&h, "Connection") && token_in(h.val, h.vlen, "upgrade", 7))
			conn_upgrade = 1;
	}
	if (auth == NULL) {
		if (!have_host) {
			snprintf(err, errlen, "missing host\n");
			return -1;
		}
		auth = host.val;
		alen = host.vlen;
	}
	kind = parse_authority(auth, alen, c->host, sizeof(c->host), &c->lit, &c->port, 80,
	    &had);
	if (kind == -1) {
		c->host[0] = '\0';
		conn_raw_host(c, auth, alen);
		snprintf(err, errlen, "invalid host in request target\n");
		return -1;
	}
	c->is_literal = kind == HOST_ADDR;
	if (have_host && host_matches(c, &host, err, errlen) == -1)
		return -1;
	c->want_upgrade = conn_upgrade && upgrade.name != NULL;
	buf_reset(&c->uhead);
	if (build_head(c, reg ? reg->broker : NULL, rl, path, plen, head, end,
	    c->want_upgrade ? &upgrade : NULL, have_host) == -1) {
		snprintf(err, errlen, "out of memory\n");
		return -1;
	}
	return 0;
}

/* Rewrite one final response head into out. */
static int
rewrite_response(struct conn *c, const char *head, size_t hl, int status, struct buf *out)
{
	const char	*p = head, *end = head + hl, *nl;
	struct hdr	 h;
	int		 upgrade = status == 101 && c->want_upgrade;

	nl = memchr(p, '\n', hl);
	if (buf_append(out, p, (size_t)(nl + 1 - p)) == -1)
		return -1;
	p = nl + 1;
	while (head_next(&p, end, &h) == 1) {
		if (hdr_is(&h, "Upgrade") && upgrade) {
			if (append_line(out, h.line, h.linelen) == -1)
				return -1;
			continue;
		}
		if (hdr_hop_by_hop(&h) || named_by_connection(head, end, &h))
			continue;
		if (append_line(out, h.line, h.linelen) == -1)
			return -1;
	}
	if (append_str(out, upgrade ? "Connection: Upgrade\r\n" : "Connection: close\r\n") == -1)
		return -1;
	return append_str(out, "\r\n");
}

/*
 * The tunnel feeds the upstream's first bytes here until the final
 * response head is through: 0 more please, 1 done, -1 not HTTP.
 * Interim 1xx heads pass unchanged.
 */
static int
response_filter(struct conn *c, struct buf *acc, struct buf *out)
{
	size_t		hl;
	int		status;
	char		line[16];
	const char	*head;

	for (;;) {
		if ((hl = head_end(acc)) == 0)
			return buf_avail(acc) > PROXY_HEAD_MAX ? -1 : 0;
		head = (const char *)buf_head(acc);
		if (hl < 12)
			return -1;
		memcpy(line, head, 12);
		line[12] = '\0';
		if (strncmp(line, "HTTP/1.", 7) != 0 || sscanf(line + 9, "%3d", &status) != 1 ||
		    status < 100 || status > 999)
			return -1;
		if (status >= 200 || status == 101)
			break;
		if (buf_append(out, head, hl) == -1)
			return -1;
		buf_consume(acc, hl);
	}
	if (rewrite_response(c, head, hl, status, out) == -1)
		return -1;
	/* switched: from now on the connection is the new protocol's, both ways */
	if (status == 101 && c->want_upgrade) {
		if (buf_append(&c->c2u.pend, buf_head(&c->early), buf_avail(&c->early)) == -1)
			return -1;
		buf_free(&c->early);
		c->c2u.filter = NULL;
		c->c2u.bounded = 0;
	}
	buf_consume(acc, hl);
	if (buf_avail(acc) > 0 && buf_append(out, buf_head(acc), buf_avail(acc)) == -1)
		return -1;
	buf_reset(acc);
	return 1;
}

/*
 * The client's bytes while its chunked body lasts: the chunks pass, and
 * once the last one and its trailers are through, nothing more.
 */
int
http_chunk_filter(struct conn *c, struct buf *acc, struct buf *out)
{
	long long	k;

	if ((k = chunk_scan(&c->chunks, buf_head(acc), buf_avail(acc))) == -1)
		return -1;
	if (buf_append(out, buf_head(acc), (size_t)k) == -1)
		return -1;
	buf_reset(acc);
	if (!c->chunks.done)
		return 0;
	c->c2u.bounded = 1;
	c->c2u.left = 0;
	return 1;
}

void
http_forward_start(struct conn *c)
{
	c->u2c.filter = response_filter;
}
