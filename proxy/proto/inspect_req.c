/*
 * What an inspected tunnel decides about the request inside it, and the
 * heads it sends on.  The request head gets the proxy's hygiene checks;
 * CONNECT is refused (405), a Host or target naming anything but the
 * CONNECT target is refused (400), then both policies decide as for a
 * plain HTTP request (limited mode: GET, HEAD, OPTIONS without a body or
 * an Upgrade).  What passes goes up in origin form without hop-by-hop
 * fields and with "Connection: close": one request per tunnel, each
 * under its own decision and audit record.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"
#include "proto/inspect.h"
#include "proto/http_head.h"
#include "policy/policy.h"
#include "tls/tls.h"

/* Plaintext leaves memory cleared, not just freed. */
void
inspect_wipe(struct buf *b)
{
	if (b->data != NULL)
		OPENSSL_cleanse(b->data, b->cap);
	buf_free(b);
}

/* Our own answer, over TLS, then the tunnel ends.  Always 1: run the next phase. */
int
inspect_answer(struct conn *c, int status, const char *phrase, const char *extra,
    const char *body)
{
	struct inspect	*s = c->ins;
	char		 head[512];
	int		 n;

	n = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\nContent-Type: text/plain; "
	    "charset=utf-8\r\nContent-Length: %zu\r\nConnection: close\r\n%s\r\n", status,
	    phrase, strlen(body), extra ? extra : "");
	buf_reset(&s->down);
	if (n < 0 || (size_t)n >= sizeof(head) || buf_append(&s->down, head, (size_t)n) == -1 ||
	    buf_append(&s->down, body, strlen(body)) == -1)
		s->result = "internal_error";
	s->req.status = status;
	s->phase = IP_ANSWER;
	conn_timer(c, c->conf->header_ms);
	return 1;
}

static int
refuse(struct conn *c, const char *reason, int status, const char *phrase, const char *body)
{
	struct inspect	*s = c->ins;
	struct verdict	 v = { 0, reason, "inspection" };

	s->req.result = "denied";
	s->req.status = status;
	audit_request(c, &s->req, &v);
	return inspect_answer(c, status, phrase, NULL, body);
}

/* Does an authority (Host, or an absolute target's) name the CONNECT target? */
static int
same_target(const struct conn *c, const char *a, size_t n)
{
	char			host[PROXY_HOST_MAX + 1];
	struct sockaddr_storage	lit;
	uint16_t		port;
	int			had_port;

	if (parse_authority(a, n, host, sizeof(host), &lit, &port, 443, &had_port) == -1)
		return 0;
	return strcmp(host, c->host) == 0 && port == c->port;
}

/* The path of the target: origin form as it is, absolute form checked and cut. */
static int
target_path(const struct conn *c, const struct reqline *rl, const char **path, size_t *plen)
{
	const char	*t = rl->target, *e = t + rl->tlen, *a;
	size_t		 skip;

	*path = t;
	*plen = rl->tlen;
	if (t[0] == '/' || (rl->tlen == 1 && t[0] == '*'))
		return 0;
	if (rl->tlen > 8 && strncasecmp(t, "https://", 8) == 0)
		skip = 8;
	else if (rl->tlen > 7 && strncasecmp(t, "http://", 7) == 0)
		skip = 7;
	else
		return -1;
	for (a = t + skip; a < e && *a != '/' && *a != '?'; a++)
		;
	if (!same_target(c, t + skip, (size_t)(a - t - skip)))
		return -1;
	*path = a < e ? a : "/";
	*plen = a < e ? (size_t)(e - a) : 1;
	return 0;
}

static int
policy_allows(struct conn *c, int shape, struct verdict *v)
{
	const struct sockaddr_storage	*lit = c->is_literal ? &c->lit : NULL;
	const char			*m = c->ins->req.method;

	int				 undecided;

	policy_check_host(&c->conf->policy, "baseline_policy", c->host, lit, c->port, m, shape,
	    PROTO_HTTP, v);
	if (!v->allow || c->reg == NULL || c->reg->policy == NULL)
		return v->allow;
	/* the owner's decider let this host through for the tunnel: the rest still holds */
	if (c->override)
		policy_check_host_undecided(c->reg->policy, "process_policy", c->host, lit,
		    c->port, m, shape, PROTO_HTTP, &undecided, v);
	else
		policy_check_host(c->reg->policy, "process_policy", c->host, lit, c->port, m,
		    shape, PROTO_HTTP, v);
	return v->allow;
}

static int
denied(struct conn *c, const struct verdict *v)
{
	struct inspect	*s = c->ins;
	char		 extra[128];
	char		 body[256];

	s->req.result = "denied";
	s->req.status = 403;
	audit_request(c, &s->req, v);
	snprintf(extra, sizeof(extra), "x-proxy-error: %s\r\n", verdict_header(v));
	snprintf(body, sizeof(body), "%s", verdict_message(v));
	return inspect_answer(c, 403, "Forbidden", extra, body);
}

/* The head as it goes up; -1 out of memory. */
static int
upstream_head(struct conn *c, const struct reqline *rl, const char *path, size_t plen,
    const char *p, const char *end)
{
	struct buf	*b = &c->ins->up;
	struct hdr	 h;

	if (buf_append(b, rl->method, rl->mlen) == -1 || buf_append(b, " ", 1) == -1 ||
	    buf_append(b, path, plen) == -1 || buf_append(b, " HTTP/1.1\r\n", 11) == -1)
		return -1;
	while (head_next(&p, end, &h) == 1) {
		if (hdr_hop_by_hop(&h))
			continue;
		switch (broker_rewrite_line(c->reg ? c->reg->broker : NULL, 1, c->host, c->port,
		    path, plen, h.line, h.linelen, b)) {
		case -1:
			return -1;
		case 1:
			continue;
		}
		if (buf_append(b, h.line, h.linelen) == -1 || buf_append(b, "\r\n", 2) == -1)
			return -1;
	}
	return buf_append(b, "Connection: close\r\n\r\n", 21);
}

/* Begin the target's TLS, with what the client sent after the head as the body's start. */
static int
forward(struct conn *c, size_t hl, const struct head_facts *f)
{
	struct inspect	*s = c->ins;
	size_t		 extra = buf_avail(&s->head) - hl;
	long long	 k;

	s->req_chunked = f->chunked;
	s->req_left = f->chunked ? UINT64_MAX : f->length;
	if (f->chunked) {
		/* the chunks up to the last one (inspect.c follows them) */
		memset(&c->chunks, 0, sizeof(c->chunks));
		if ((k = chunk_scan(&c->chunks, buf_head(&s->head) + hl, extra)) == -1)
			return refuse(c, "bad_request", 400, "Bad Request",
			    "malformed chunked body\n");
		extra = (size_t)k;
		if (c->chunks.done)
			s->req_left = 0;
	} else if (extra > s->req_left)
		extra = (size_t)s->req_left;	/* pipelined requests are not served */
	if (buf_append(&s->up, buf_head(&s->head) + hl, extra) == -1)
		return -1;
	s->req_left -= extra;
	s->req.bytes_up += extra;
	inspect_wipe(&s->head);
	if ((s->us = session_client(c->ufd, c->host, c->is_literal, c->port)) == NULL)
		return -1;
	s->phase = IP_CONNECT;
	conn_timer(c, c->conf->handshake_ms);
	return 1;
}

/* A complete head is in s->head: refuse it, or start forwarding it.  1: go on. */
int
inspect_decide(struct conn *c)
{
	struct inspect		*s = c->ins;
	struct reqline		 rl;
	struct hdr		 h;
	struct head_facts	 f = { 0 };
	const char		*p = (const char *)buf_head(&s->head), *end, *path, *host = NULL;
	size_t			 hl = head_end(&s->head), plen, hostlen = 0;
	int			 bad = 0, rv, shape;
	struct verdict		 v;

	end = p + hl;
	if (head_request_line(&p, end, &rl) == -1)
		return refuse(c, "bad_request", 400, "Bad Request", "malformed request\n");
	snprintf(s->req.method, sizeof(s->req.method), "%.*s", (int)rl.mlen, rl.method);
	s->req.pathlen = rl.tlen;
	s->no_body = strcmp(s->req.method, "HEAD") == 0;
	while ((rv = head_next(&p, end, &h)) == 1) {
		if (head_note(&f, &h) == -1)
			bad = 1;
		if (hdr_is(&h, "Host")) {
			host = h.val;
			hostlen = h.vlen;
		}
	}
	if (rv == -1 || bad || !head_facts_ok(&f))
		return refuse(c, "bad_request", 400, "Bad Request", "malformed header\n");
	if (strcmp(s->req.method, "CONNECT") == 0)
		return refuse(c, "method_not_allowed", 405, "Method Not Allowed",
		    "CONNECT not supported inside MITM");
	if (host == NULL || !same_target(c, host, hostlen) ||
	    target_path(c, &rl, &path, &plen) == -1)
		return refuse(c, "host_mismatch", 400, "Bad Request", "host mismatch");
	s->req.pathlen = plen;
	shape = (f.length > 0 || f.chunked ? REQ_BODY : 0) | (f.upgrades > 0 ? REQ_UPGRADE : 0);
	if (!policy_allows(c, shape, &v))
		return denied(c, &v);
	s->verdict = v;
	p = (const char *)buf_head(&s->head);
	if (head_request_line(&p, end, &rl) == -1 || upstream_head(c, &rl, path, plen, p,
	    end) == -1 || forward(c, hl, &f) == -1) {
		s->result = "internal_error";
		return inspect_answer(c, 500, "Internal Server Error", NULL, "error\n");
	}
	return 1;
}

/* The status line; -1 when it is none. */
static int
status_of(const char *p, size_t n)
{
	int	st;

	if (n < 12 || strncmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ' ||
	    sscanf(p + 9, "%3d", &st) != 1 || st < 100 || st > 999)
		return -1;
	return st;
}

/*
 * A complete response head is in s->rhead: down it goes with "Connection:
 * close" for its hop-by-hop fields, and its framing decides when the
 * response is over.  -1: it is no response head.
 */
int
inspect_response_head(struct conn *c)
{
	struct inspect		*s = c->ins;
	struct head_facts	 f = { 0 };
	struct hdr		 h;
	const char		*p = (const char *)buf_head(&s->rhead), *end, *nl;
	size_t			 hl = head_end(&s->rhead);
	int			 st, rv;

	end = p + hl;
	if ((st = status_of(p, hl)) == -1 || (nl = memchr(p, '\n', hl)) == NULL)
		return -1;
	if (buf_append(&s->down, p, (size_t)(nl + 1 - p)) == -1)
		return -1;
	p = nl + 1;
	while ((rv = head_next(&p, end, &h)) == 1) {
		if (head_note(&f, &h) == -1)
			return -1;
		if (!hdr_hop_by_hop(&h) && (buf_append(&s->down, h.line, h.linelen) == -1 ||
		    buf_append(&s->down, "\r\n", 2) == -1))
			return -1;
	}
	if (rv == -1 || f.lengths > 1 ||
	    buf_append(&s->down, "Connection: close\r\n\r\n", 21) == -1)
		return -1;
	s->req.status = st;
	/* an interim answer (100 Continue): the final one follows */
	if (st >= 100 && st < 200 && st != 101) {
		buf_consume(&s->rhead, hl);
		return 0;
	}
	s->resp_started = 1;
	if (s->no_body || st == 204 || st == 304) {
		s->resp_bounded = 1;
		s->resp_left = 0;
	} else if (f.lengths == 1 && !f.chunked) {
		s->resp_bounded = 1;
		s->resp_left = f.length;
	}
	buf_consume(&s->rhead, hl);
	return 0;
}
