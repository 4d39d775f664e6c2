/*
 * SOCKS5 (RFC 1928) with username/password authentication (RFC 1929):
 * the registration's id and secret.  CONNECT, and UDP ASSOCIATE where the
 * policy allows UDP (socks5_udp.c; "not allowed by ruleset" otherwise, as
 * the reference answers).  BIND is not supported.
 */
#include "config.h"

#include <arpa/inet.h>

#include <stdio.h>
#include <string.h>

#include "log.h"
#include "proto/proto.h"
#include "relay/relay.h"
#include "policy/policy.h"

#define SOCKS_VER		5
#define SOCKS_AUTH_VER		1
#define SOCKS_M_USERPASS	0x02
#define SOCKS_M_NONE_OK		0xff
#define SOCKS_CMD_CONNECT	1
#define SOCKS_CMD_BIND		2
#define SOCKS_CMD_UDP		3
#define SOCKS_ATYP_V4		1
#define SOCKS_ATYP_NAME		3
#define SOCKS_ATYP_V6		4

enum socks_rep {
	REP_OK = 0,
	REP_FAILURE = 1,
	REP_NOT_ALLOWED = 2,
	REP_NET_UNREACH = 3,
	REP_HOST_UNREACH = 4,
	REP_REFUSED = 5,
	REP_TTL_EXPIRED = 6,
	REP_CMD_UNSUPPORTED = 7,
	REP_ATYP_UNSUPPORTED = 8,
};

enum socks_step {
	SS_GREETING,
	SS_AUTH,
	SS_REQUEST,
};

static void	udp_associate(struct conn *);

static int
send_now(struct conn *c, const void *p, size_t n)
{
	if (buf_append(&c->out, p, n) == -1)
		return -1;
	return conn_flush(c) == -1 ? -1 : 0;
}

static void
reply_close(struct conn *c, enum socks_rep rep)
{
	uint8_t	r[10] = { SOCKS_VER, (uint8_t)rep, 0, SOCKS_ATYP_V4 };

	conn_reply_close(c, r, sizeof(r));
}

static void
refuse_auth(struct conn *c, const char *why, const uint8_t *msg, size_t len)
{
	struct verdict	v = { 0, "proxy_auth_required", "proxy_auth" };

	log_info("%s: SOCKS5 %s", c->client, why);
	audit_decision(c, &v);
	conn_reply_close(c, msg, len);
}

/* Bytes that are no SOCKS5 at all: recorded as such, then closed. */
static void
refuse_garbage(struct conn *c, const char *what)
{
	struct verdict	v = { 0, "bad_request", "request" };

	log_info("%s: SOCKS5: %s", c->client, what);
	c->result = "bad_request";
	audit_decision(c, &v);
	conn_close(c, NULL);
}

/*
 * SOCKS4 and 4a (VN CD DSTPORT DSTIP USERID NUL [HOST NUL]) are not
 * served, but their request is read (at most SOCKS4_MAX bytes) so that
 * the refusal is recorded with the destination it asked for, and
 * answered "rejected" (0x5b).  1 when more bytes are needed.
 */
#define SOCKS4_MAX	(8 + 256 + PROXY_HOST_MAX + 2)
static int
socks4_refuse(struct conn *c)
{
	static const uint8_t	 rejected[8] = { 0, 0x5b };
	struct verdict		 v = { 0, "unsupported_protocol", "request" };
	const uint8_t		*b = buf_head(&c->in), *user, *name = NULL, *nul;
	size_t			 n = buf_avail(&c->in), end = n < SOCKS4_MAX ? n : SOCKS4_MAX;

	if (n < 8)
		return 1;
	c->port = (uint16_t)(b[2] << 8 | b[3]);
	snprintf(c->method, sizeof(c->method), "SOCKS4_%s", b[1] == 1 ? "CONNECT" :
	    b[1] == 2 ? "BIND" : "UNKNOWN");
	user = b + 8;
	nul = memchr(user, 0, end - 8);
	/* 0.0.0.x, x not 0: SOCKS4a, a name follows the user id */
	if (nul != NULL && b[4] == 0 && b[5] == 0 && b[6] == 0 && b[7] != 0) {
		name = nul + 1;
		nul = memchr(name, 0, (size_t)(b + end - name));
	}
	if (nul == NULL && n < SOCKS4_MAX)
		return 1;
	if (name != NULL) {
		size_t	len = nul != NULL ? (size_t)(nul - name) : (size_t)(b + end - name);

		if (host_parse((const char *)name, len, c->host, sizeof(c->host),
		    &c->lit) == -1) {
			c->host[0] = '\0';
			conn_raw_host(c, name, len);
		}
	} else if (b[4] != 0 || b[5] != 0 || b[6] != 0)
		addr_from_bytes(AF_INET, b + 4, &c->lit, c->host, sizeof(c->host));
	log_info("%s: SOCKS4 request refused", c->client);
	c->result = "unsupported_protocol";
	audit_decision(c, &v);
	conn_reply_close(c, rejected, sizeof(rejected));
	return -1;
}

/* VER NMETHODS METHODS...; 1 when more bytes are needed. */
static int
greeting(struct conn *c)
{
	static const uint8_t	 pick[2] = { SOCKS_VER, SOCKS_M_USERPASS };
	static const uint8_t	 none[2] = { SOCKS_VER, SOCKS_M_NONE_OK };
	const uint8_t		*b = buf_head(&c->in);
	size_t			 n = buf_avail(&c->in);

	if (n > 0 && b[0] == 4)
		return socks4_refuse(c);
	if (n < 2)
		return 1;
	if (b[0] != SOCKS_VER) {
		refuse_garbage(c, "not a SOCKS5 greeting");
		return -1;
	}
	if (n < 2u + b[1])
		return 1;
	if (memchr(b + 2, SOCKS_M_USERPASS, b[1]) == NULL) {
		refuse_auth(c, "client offered no username/password method", none, sizeof(none));
		return -1;
	}
	buf_consume(&c->in, 2u + b[1]);
	if (send_now(c, pick, sizeof(pick)) == -1) {
		conn_close(c, NULL);
		return -1;
	}
	c->socks_step = SS_AUTH;
	return 0;
}

/* VER ULEN UNAME PLEN PASSWD */
static int
authenticate(struct conn *c)
{
	static const uint8_t	 ok[2] = { SOCKS_AUTH_VER, 0 };
	static const uint8_t	 bad[2] = { SOCKS_AUTH_VER, 1 };
	const uint8_t		*b = buf_head(&c->in);
	size_t			 n = buf_avail(&c->in), ulen, plen;
	struct reg		*r;

	if (n < 2)
		return 1;
	if (b[0] != SOCKS_AUTH_VER) {
		refuse_garbage(c, "not a username/password login");
		return -1;
	}
	ulen = b[1];
	if (n < 3 + ulen)
		return 1;
	plen = b[2 + ulen];
	if (n < 3 + ulen + plen)
		return 1;
	r = reg_auth((const char *)b + 2, ulen, (const char *)b + 3 + ulen, plen);
	if (r == NULL) {
		refuse_auth(c, "bad credentials", bad, sizeof(bad));
		return -1;
	}
	if (conn_attach_reg(c, r) == -1) {
		struct verdict v = { 0, "connection_limit", "proxy_state" };

		c->reg = r;
		audit_decision(c, &v);
		c->reg = NULL;
		conn_reply_close(c, bad, sizeof(bad));
		return -1;
	}
	buf_consume(&c->in, 3 + ulen + plen);
	if (send_now(c, ok, sizeof(ok)) == -1) {
		conn_close(c, NULL);
		return -1;
	}
	c->socks_step = SS_REQUEST;
	return 0;
}

/* VER CMD RSV ATYP DST.ADDR DST.PORT into c->host, c->lit, c->port. */
static int
request_target(struct conn *c, const uint8_t *b, size_t n, size_t *used)
{
	size_t	alen;
	int	kind;

	switch (b[3]) {
	case SOCKS_ATYP_V4:
	case SOCKS_ATYP_V6:
		alen = b[3] == SOCKS_ATYP_V4 ? 4 : 16;
		if (n < 4 + alen + 2)
			return 1;
		addr_from_bytes(alen == 4 ? AF_INET : AF_INET6, b + 4, &c->lit, c->host,
		    sizeof(c->host));
		c->is_literal = 1;
		break;
	case SOCKS_ATYP_NAME:
		if (n < 5)
			return 1;
		alen = 1 + (size_t)b[4];
		if (n < 4 + alen + 2)
			return 1;
		/* the same reading as an HTTP host: no escapes, no bytes c-ares would bend */
		kind = host_parse((const char *)b + 5, alen - 1, c->host, sizeof(c->host),
		    &c->lit);
		if (kind == -1) {
			c->host[0] = '\0';
			conn_raw_host(c, b + 5, alen - 1);
			c->port = (uint16_t)(b[4 + alen] << 8 | b[5 + alen]);
			return -1;
		}
		c->is_literal = kind == HOST_ADDR;
		break;
	default:
		return -2;
	}
	c->port = (uint16_t)(b[4 + alen] << 8 | b[5 + alen]);
	*used = 4 + alen + 2;
	return 0;
}

/* A request refused before any policy: recorded, then the reply. */
static void
refuse_request(struct conn *c, const char *reason, enum socks_rep rep)
{
	struct verdict	v = { 0, reason, "request" };

	c->result = reason;
	audit_decision(c, &v);
	reply_close(c, rep);
}

static int
request(struct conn *c)
{
	const uint8_t	*b = buf_head(&c->in);
	size_t		 n = buf_avail(&c->in), used = 0;
	int		 r;

	if (n < 4)
		return 1;
	if (b[0] != SOCKS_VER) {
		refuse_garbage(c, "not a SOCKS5 request");
		return -1;
	}
	if ((r = request_target(c, b, n, &used)) == 1)
		return 1;
	snprintf(c->method, sizeof(c->method), "%s", b[1] == SOCKS_CMD_CONNECT ? "CONNECT" :
	    b[1] == SOCKS_CMD_UDP ? "UDP_ASSOCIATE" : b[1] == SOCKS_CMD_BIND ? "BIND" :
	    "UNKNOWN");
	if (r == -2) {
		refuse_request(c, "bad_request", REP_ATYP_UNSUPPORTED);
		return -1;
	}
	if (r == -1) {
		refuse_request(c, "invalid_host", REP_FAILURE);
		return -1;
	}
	if (c->port == 0 && b[1] == SOCKS_CMD_CONNECT) {
		refuse_request(c, "bad_request", REP_FAILURE);
		return -1;
	}
	switch (b[1]) {
	case SOCKS_CMD_CONNECT:
		break;
	case SOCKS_CMD_UDP:
		buf_consume(&c->in, used);
		udp_associate(c);
		return -1;
	default:
		refuse_request(c, "command_not_supported", REP_CMD_UNSUPPORTED);
		return -1;
	}
	buf_consume(&c->in, used);
	if (buf_avail(&c->in) > 0 &&
	    buf_append(&c->c2u.pend, buf_head(&c->in), buf_avail(&c->in)) == -1) {
		conn_close(c, "internal_error");
		return -1;
	}
	buf_free(&c->in);
	ev_timer_stop(&c->timer);
	/* HTTPS (port 443) can be inspected; limited mode allows nothing else */
	if (c->port == 443 && inspect_wanted(c)) {
		c->inspect = 1;
		c->req_shape |= REQ_INSPECTED;
	}
	c->raw_tcp = 1;
	dial_start(c);
	return -1;	/* no more greeting input */
}

static int
udp_permitted(const struct policy *pol, const char *source, struct verdict *v)
{
	v->allow = 0;
	v->source = "mode_guard";
	v->reason = "method_not_allowed";
	if (!pol->enabled) {
		v->reason = "proxy_disabled";
		v->source = "proxy_state";
	} else if (pol->socks5 && pol->socks5_udp && pol->mode == MODE_FULL) {
		v->allow = 1;
		v->reason = "allow";
		v->source = source;
	}
	return v->allow;
}

/* Each destination is decided as its datagrams come; here only UDP as such. */
static void
udp_associate(struct conn *c)
{
	struct sockaddr_storage	 bnd, from = c->lit;
	struct verdict		 v;
	uint8_t			 r[22] = { SOCKS_VER, REP_OK, 0 };
	size_t			 n;
	uint16_t		 from_port = c->port;
	int			 from_addr = c->is_literal;

	c->proto = PROTO_SOCKS5_UDP;
	c->forwarded = 0;
	snprintf(c->method, sizeof(c->method), "UDP_ASSOCIATE");
	/* DST is where the client will send from, not a destination: keep it out */
	c->host[0] = '\0';
	c->port = 0;
	c->is_literal = 0;
	if (c->conf->upstream != NULL) {
		/* an HTTP upstream carries no datagrams: UDP would go around it */
		v.allow = 0;
		v.reason = "udp_via_upstream";
		v.source = "proxy_state";
	} else if (udp_permitted(&c->conf->policy, "baseline_policy", &v) &&
	    c->reg->policy != NULL)
		udp_permitted(c->reg->policy, "process_policy", &v);
	audit_decision(c, &v);
	if (!v.allow) {
		reply_close(c, REP_NOT_ALLOWED);
		return;
	}
	if (udp_assoc_open(c, &bnd, from_addr ? &from : NULL, from_port) == -1) {
		log_warn("%s: UDP association", c->client);
		reply_close(c, REP_FAILURE);
		return;
	}
	c->allowed = 1;
	r[3] = bnd.ss_family == AF_INET ? SOCKS_ATYP_V4 : SOCKS_ATYP_V6;
	if (bnd.ss_family == AF_INET) {
		memcpy(r + 4, &((struct sockaddr_in *)&bnd)->sin_addr, 4);
		memcpy(r + 8, &((struct sockaddr_in *)&bnd)->sin_port, 2);
		n = 10;
	} else {
		memcpy(r + 4, &((struct sockaddr_in6 *)&bnd)->sin6_addr, 16);
		memcpy(r + 20, &((struct sockaddr_in6 *)&bnd)->sin6_port, 2);
		n = 22;
	}
	if (send_now(c, r, n) == -1) {
		conn_close(c, NULL);
		return;
	}
	ev_timer_stop(&c->timer);
	c->state = CS_UDP;
	c->last_io = ev_now();
	conn_timer(c, c->conf->idle_ms);
	conn_want(c);
}

static void
socks_input(struct conn *c)
{
	int	r = 0;

	while (r == 0 && c->state == CS_GREETING) {
		switch (c->socks_step) {
		case SS_GREETING:
			r = greeting(c);
			break;
		case SS_AUTH:
			r = authenticate(c);
			break;
		default:
			r = request(c);
			break;
		}
	}
}

static enum socks_rep
fail_rep(enum dial_fail f)
{
	switch (f) {
	case DIAL_OK:
		return REP_OK;
	case DIAL_DENIED:
		return REP_NOT_ALLOWED;
	case DIAL_DNS:
		return REP_HOST_UNREACH;
	case DIAL_TIMEOUT:
		return REP_TTL_EXPIRED;
	case DIAL_REFUSED:
		return REP_REFUSED;
	case DIAL_UNREACH:
		return REP_NET_UNREACH;
	case DIAL_UPSTREAM:
		break;
	}
	return REP_FAILURE;
}

static void
socks_dial_done(struct conn *c)
{
	uint8_t			 r[22] = { SOCKS_VER, REP_OK, 0 };
	struct sockaddr_storage	 ss;
	socklen_t		 len = sizeof(ss);
	size_t			 n;

	if (c->fail != DIAL_OK) {
		c->result = c->fail == DIAL_DENIED ? "denied" : c->fail == DIAL_DNS ?
		    "dns_failure" : c->fail == DIAL_TIMEOUT ? "timeout" : "upstream_failure";
		reply_close(c, fail_rep(c->fail));
		return;
	}
	memset(&ss, 0, sizeof(ss));
	if (getsockname(c->ufd, (struct sockaddr *)&ss, &len) == -1 ||
	    (ss.ss_family != AF_INET && ss.ss_family != AF_INET6))
		ss.ss_family = AF_INET;
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)&ss;

		r[3] = SOCKS_ATYP_V4;
		memcpy(r + 4, &sin->sin_addr, 4);
		memcpy(r + 8, &sin->sin_port, 2);
		n = 10;
	} else {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&ss;

		r[3] = SOCKS_ATYP_V6;
		memcpy(r + 4, &sin6->sin6_addr, 16);
		memcpy(r + 20, &sin6->sin6_port, 2);
		n = 22;
	}
	if (c->inspect)
		inspect_start(c, r, n);
	else
		tunnel_start_reply(c, r, n);
}

/* A UDP association lives as long as its TCP connection. */
static void
socks_close(struct conn *c)
{
	udp_assoc_close(c->udp);
}

static void
socks_release(struct conn *c)
{
	udp_assoc_free(c->udp);
}

const struct proto_handler socks5_proto = {
	.name = "SOCKS5",
	.kind = PROTO_SOCKS5,
	.input = socks_input,
	.dial_done = socks_dial_done,
	.close = socks_close,
	.release = socks_release,
};
