/*
 * The HTTP proxy listener: one request head per connection, credentials
 * from Proxy-Authorization, then either a CONNECT tunnel or a forwarded
 * absolute-URI request.  Refusals are answered before anything reaches
 * the target, with the reference's status codes, x-proxy-error values
 * and bodies.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "b64.h"
#include "jsonx.h"
#include "log.h"
#include "proto/proto.h"
#include "proto/http_head.h"
#include "relay/relay.h"
#include "policy/policy.h"

#define REALM	"execd-proxy"

static void
reply(struct conn *c, int status, const char *phrase, const char *ctype,
    const char *extra, const char *body)
{
	char		head[1024];
	struct buf	all = { 0 };
	int		n;

	n = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n%s\r\n", status, phrase, ctype,
	    strlen(body), extra ? extra : "");
	if (n < 0 || (size_t)n >= sizeof(head) || buf_append(&all, head, (size_t)n) == -1 ||
	    buf_append(&all, body, strlen(body)) == -1) {
		buf_free(&all);
		conn_close(c, "internal_error");
		return;
	}
	conn_reply_close(c, buf_head(&all), buf_avail(&all));
	buf_free(&all);
}

void
http_fail_reply(struct conn *c, int status, const char *phrase, const char *body)
{
	reply(c, status, phrase, "text/plain; charset=utf-8", NULL, body);
}

/* 403 (503 when disabled) with the reference's header and body. */
static void
reply_denied(struct conn *c)
{
	const struct verdict	*v = &c->verdict;
	char			 extra[128];
	char			*json = NULL;
	json_t			*o;
	int			 status = strcmp(v->reason, "proxy_disabled") == 0 ? 503 : 403;
	const char		*phrase = status == 503 ? "Service Unavailable" : "Forbidden";

	snprintf(extra, sizeof(extra), "x-proxy-error: %s\r\n", verdict_header(v));
	if (c->proto == PROTO_HTTP_CONNECT || status == 503) {
		char	body[256];

		snprintf(body, sizeof(body), "%s", verdict_message(v));
		reply(c, status, phrase, "text/plain; charset=utf-8", extra, body);
		return;
	}
	o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:s}", "status", "blocked",
	    "host", c->host, "reason", v->reason, "decision", "deny", "source", v->source,
	    "protocol", "http", "port", (int)c->port, "message", verdict_message(v));
	if (o != NULL)
		json = jx_dump(o, NULL);
	json_decref(o);
	reply(c, status, phrase, "application/json", extra, json ? json : "{}");
	free(json);
}

/* 400, recorded: a host that is no host is "invalid_host", anything else "bad_request". */
static void
bad_request(struct conn *c, const char *body)
{
	struct verdict	v = { 0, "bad_request", "request" };

	/* the head is still in c->in when the target was not read */
	http_note_target(c, (const char *)buf_head(&c->in), buf_avail(&c->in));
	if (c->has_rawhost)
		v.reason = "invalid_host";
	c->result = "bad_request";
	audit_decision(c, &v);
	http_fail_reply(c, 400, "Bad Request", body);
}

/* A head over PROXY_HEAD_MAX: 431, recorded with what its first bytes aimed at. */
static void
head_too_large(struct conn *c)
{
	struct verdict	v = { 0, "request_header_too_large", "request" };

	http_note_target(c, (const char *)buf_head(&c->in), buf_avail(&c->in));
	c->result = "bad_request";
	audit_decision(c, &v);
	http_fail_reply(c, 431, "Request Header Fields Too Large", "request head too large\n");
}

static void
reply_auth_required(struct conn *c, const char *why)
{
	struct verdict	v = { 0, "proxy_auth_required", "proxy_auth" };

	log_info("%s: %s", c->client, why);
	audit_decision(c, &v);
	reply(c, 407, "Proxy Authentication Required", "text/plain; charset=utf-8",
	    "Proxy-Authenticate: Basic realm=\"" REALM "\"\r\n",
	    "Proxy authentication required.\n");
}

/* "Basic base64(id:secret)" to a registration; NULL when it proves nothing. */
static struct reg *
basic_auth(const char *v, size_t vlen)
{
	char		 b64[256], err[128];
	char		*dec, *colon;
	size_t		 dlen;
	struct reg	*r;

	if (vlen < 6 || strncasecmp(v, "Basic ", 6) != 0)
		return NULL;
	v += 6;
	vlen -= 6;
	while (vlen > 0 && *v == ' ') {
		v++;
		vlen--;
	}
	if (vlen == 0 || vlen >= sizeof(b64))
		return NULL;
	memcpy(b64, v, vlen);
	b64[vlen] = '\0';
	if ((dec = b64_decode(b64, vlen, &dlen, err, sizeof(err))) == NULL)
		return NULL;
	if ((colon = memchr(dec, ':', dlen)) == NULL) {
		free(dec);
		return NULL;
	}
	r = reg_auth(dec, (size_t)(colon - dec), colon + 1, dlen - (size_t)(colon - dec) - 1);
	free(dec);
	return r;
}

static void
set_method(struct conn *c, const struct reqline *rl)
{
	size_t	n = rl->mlen < sizeof(c->method) ? rl->mlen : sizeof(c->method) - 1;

	memcpy(c->method, rl->method, n);
	c->method[n] = '\0';
}

static int
start_connect_request(struct conn *c, const struct reqline *rl)
{
	int	had_port, kind;

	c->proto = PROTO_HTTP_CONNECT;
	c->forwarded = 0;
	kind = parse_authority(rl->target, rl->tlen, c->host, sizeof(c->host), &c->lit,
	    &c->port, 0, &had_port);
	if (kind == -1) {
		c->host[0] = '\0';
		conn_raw_host(c, rl->target, rl->tlen);
		return -1;
	}
	c->is_literal = kind == HOST_ADDR;
	return 0;
}

static int
limited(const struct conn *c)
{
	return policy_limited(&c->conf->policy) ||
	    (c->reg->policy != NULL && policy_limited(c->reg->policy));
}

/*
 * Requests pipelined behind this one (limited mode): each is decided as
 * the first, and one that would be refused refuses the connection.  None
 * is forwarded: the upstream is told "Connection: close".
 */
static int
pipelined_refused(struct conn *c, const char *p, size_t n)
{
	struct verdict	 v = { 0, "method_not_allowed", "mode_guard" };
	struct reqline	 rl;
	const char	*end = p + n, *e;

	while (p < end && (e = memmem(p, (size_t)(end - p), "\r\n\r\n", 4)) != NULL) {
		if (head_request_line(&p, e + 4, &rl) == -1 || rl.mlen >= sizeof(c->method))
			return 0;
		p = e + 4;
		if ((rl.mlen == 3 && memcmp(rl.method, "GET", 3) == 0) ||
		    (rl.mlen == 4 && memcmp(rl.method, "HEAD", 4) == 0) ||
		    (rl.mlen == 7 && memcmp(rl.method, "OPTIONS", 7) == 0))
			continue;
		set_method(c, &rl);
		c->verdict = v;
		c->result = "denied";
		audit_decision(c, &v);
		reply_denied(c);
		return 1;
	}
	return 0;
}

/*
 * The request's body is all the client may send upstream: Content-Length
 * bytes, or the chunks up to the last one and its trailers; after it (or
 * at once, without one) the client is not read again, and an Upgrade
 * request's connection carries more (what came behind its head first)
 * only once the upstream has answered 101 (http_forward.c).  Limited mode
 * refuses what would be pipelined.
 */
static int
frame_request(struct conn *c, const struct head_facts *f)
{
	size_t		n = buf_avail(&c->in), body = n;
	long long	k;

	c->req_shape = (f->length > 0 || f->chunked ? REQ_BODY : 0) |
	    (f->upgrades > 0 ? REQ_UPGRADE : 0);
	if (buf_append(&c->c2u.pend, buf_head(&c->uhead), buf_avail(&c->uhead)) == -1) {
		conn_close(c, "internal_error");
		return -1;
	}
	c->c2u.bounded = 1;
	c->c2u.left = 0;
	if (f->chunked) {
		memset(&c->chunks, 0, sizeof(c->chunks));
		if ((k = chunk_scan(&c->chunks, buf_head(&c->in), n)) == -1) {
			bad_request(c, "malformed chunked body\n");
			return -1;
		}
		body = (size_t)k;
		if (!c->chunks.done) {
			/* the rest of the chunks go through http_chunk_filter() */
			c->c2u.bounded = 0;
			c->c2u.filter = http_chunk_filter;
			return 0;
		}
	} else if (n <= f->length) {
		c->c2u.left = f->length - n;
		return 0;
	} else
		body = (size_t)f->length;
	if (limited(c) && pipelined_refused(c, (const char *)buf_head(&c->in) + body,
	    n - body))
		return -1;
	/* the new protocol's first bytes, if the upstream switches to it */
	if (c->want_upgrade && buf_append(&c->early, (const char *)buf_head(&c->in) + body,
	    n - body) == -1) {
		conn_close(c, "internal_error");
		return -1;
	}
	c->in.len -= n - body;	/* the rest is never forwarded */
	return 0;
}

static void
http_input(struct conn *c)
{
	struct reqline	 rl;
	struct hdr	 h;
	struct head_facts f = { 0 };
	const char	*p, *end;
	size_t		 hl;
	struct reg	*r = NULL;
	int		 saw_auth = 0, rv, bad = 0;
	char		 err[256];

	if ((hl = head_end(&c->in)) == 0) {
		if (buf_avail(&c->in) > PROXY_HEAD_MAX)
			head_too_large(c);
		return;
	}
	ev_timer_stop(&c->timer);
	p = (const char *)buf_head(&c->in);
	end = p + hl;
	if (head_request_line(&p, end, &rl) == -1) {
		bad_request(c, "malformed request\n");
		return;
	}
	set_method(c, &rl);
	while ((rv = head_next(&p, end, &h)) == 1) {
		if (head_note(&f, &h) == -1)
			bad = 1;
		if (hdr_is(&h, "Proxy-Authorization")) {
			saw_auth = 1;
			r = basic_auth(h.val, h.vlen);
		}
	}
	if (rv == -1) {
		bad_request(c, "malformed header\n");
		return;
	}
	if (strcmp(c->method, "CONNECT") == 0)
		rv = start_connect_request(c, &rl);
	else
		rv = http_forward_prepare(c, r, &rl, (const char *)buf_head(&c->in), hl,
		    err, sizeof(err));
	if (r == NULL) {
		reply_auth_required(c, saw_auth ? "bad proxy credentials" :
		    "no proxy credentials");
		return;
	}
	if (conn_attach_reg(c, r) == -1) {
		struct verdict v = { 0, "connection_limit", "proxy_state" };

		c->reg = r;	/* for the audit record only */
		audit_decision(c, &v);
		c->reg = NULL;
		reply(c, 429, "Too Many Requests", "text/plain; charset=utf-8",
		    "x-proxy-error: blocked-by-policy\r\n", "Too many connections.\n");
		return;
	}
	if (rv == -1) {
		bad_request(c, strcmp(c->method, "CONNECT") == 0 ?
		    "invalid CONNECT target\n" : err);
		return;
	}
	if (bad || !head_facts_ok(&f)) {
		bad_request(c, "malformed header\n");
		return;
	}
	buf_consume(&c->in, hl);
	if (c->proto == PROTO_HTTP && frame_request(c, &f) == -1)
		return;
	if (c->proto == PROTO_HTTP_CONNECT && inspect_wanted(c)) {
		c->inspect = 1;
		c->req_shape |= REQ_INSPECTED;
	}
	/* bytes after the head (a body, early TLS) go upstream after what we send */
	if (buf_avail(&c->in) > 0 &&
	    buf_append(&c->c2u.pend, buf_head(&c->in), buf_avail(&c->in)) == -1) {
		conn_close(c, "internal_error");
		return;
	}
	buf_free(&c->in);
	buf_free(&c->uhead);
	dial_start(c);
}

static const char *
fail_result(enum dial_fail f)
{
	switch (f) {
	case DIAL_OK:
		return "ok";
	case DIAL_DENIED:
		return "denied";
	case DIAL_DNS:
		return "dns_failure";
	case DIAL_TIMEOUT:
		return "timeout";
	case DIAL_REFUSED:
		return "connection_refused";
	case DIAL_UNREACH:
		return "unreachable";
	case DIAL_UPSTREAM:
		break;
	}
	return "upstream_failure";
}

static void
reply_dial_failure(struct conn *c, enum dial_fail f)
{
	c->result = fail_result(f);
	switch (f) {
	case DIAL_DENIED:
		reply_denied(c);
		break;
	case DIAL_DNS:
		http_fail_reply(c, 502, "Bad Gateway", "DNS lookup failed\n");
		break;
	case DIAL_TIMEOUT:
		http_fail_reply(c, 504, "Gateway Timeout", "upstream timed out\n");
		break;
	default:
		http_fail_reply(c, 502, "Bad Gateway", "upstream failure\n");
		break;
	}
}

static void
http_dial_done(struct conn *c)
{
	static const char	 ok[] = "HTTP/1.1 200 OK\r\n\r\n";

	if (c->fail != DIAL_OK) {
		reply_dial_failure(c, c->fail);
		return;
	}
	if (c->proto == PROTO_HTTP_CONNECT && c->inspect) {
		inspect_start(c, ok, sizeof(ok) - 1);
		return;
	}
	if (c->proto == PROTO_HTTP_CONNECT) {
		tunnel_start_reply(c, ok, sizeof(ok) - 1);
		return;
	}
	http_forward_start(c);
	tunnel_start(c);
}

/* The forwarded request failed after dialling: 502/504 unless the response began. */
static void
http_forward_failed(struct conn *c, enum dial_fail f)
{
	if (c->u2c.bytes > 0 || buf_avail(&c->u2c.pend) > 0) {
		conn_close(c, fail_result(f));
		return;
	}
	half_free(&c->c2u);
	half_free(&c->u2c);
	reply_dial_failure(c, f);
}

const struct proto_handler http_proto = {
	.name = "HTTP",
	.kind = PROTO_HTTP,
	.forwarding = 1,
	.input = http_input,
	.dial_done = http_dial_done,
	.failed = http_forward_failed,
};
