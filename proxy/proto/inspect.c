/*
 * An inspected tunnel: after the CONNECT (or SOCKS5) reply the proxy
 * completes TLS with the client as the target, with a leaf minted for
 * it, reads the request inside, lets inspect_req.c decide it, and only
 * then completes TLS with the target, verified, to forward it.  It runs
 * on the connection's descriptors in the one event loop: every wakeup
 * runs the current phase until both sessions would block, and each
 * session's last "want" is what its descriptor is watched for.  Memory
 * is bounded: one request head, one response head, INS_BUF of plaintext
 * each way, and two TLS sessions that release their buffers when idle.
 * No plaintext goes anywhere but the two sessions.
 */
#include "config.h"

#include <sys/socket.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>

#include "log.h"
#include "proto/proto.h"
#include "proto/inspect.h"
#include "proto/http_head.h"
#include "policy/policy.h"
#include "tls/tls.h"

#define LINGER_MS	2000

enum step {
	ST_BLOCKED,	/* both sessions wait: watch the descriptors */
	ST_AGAIN,	/* progress: run again */
	ST_GONE,	/* the connection was closed */
};

static void	ins_io(struct conn *, int, uint32_t);
static void	ins_timeout(struct conn *);
static uint32_t	ins_interest(struct conn *, int);
static void	ins_cancel(struct conn *);

static const struct conn_stage inspect_stage = {
	.io = ins_io,
	.timeout = ins_timeout,
	.interest = ins_interest,
	.cancel = ins_cancel,
};

/* Is this tunnel's content to be inspected?  Limited mode, or a host marked for it. */
int
inspect_wanted(const struct conn *c)
{
	size_t	i;

	if (!tls_ready() || !c->conf->inspect)
		return 0;
	if (policy_limited(&c->conf->policy) ||
	    (c->reg != NULL && c->reg->policy != NULL && policy_limited(c->reg->policy)))
		return 1;
	/* a brokered credential for this origin is put in by the inspecting stage */
	if (c->reg != NULL && broker_wants_host(c->reg->broker, c->host, c->port))
		return 1;
	for (i = 0; i < c->conf->ninspect_hosts; i++)
		if (pattern_matches(c->conf->inspect_hosts[i], c->host))
			return 1;
	return 0;
}

/* After a TLS call that did not complete: 1 and *want set if it only would block. */
static int
blocked(SSL *ssl, int r, uint32_t *want)
{
	switch (SSL_get_error(ssl, r)) {
	case SSL_ERROR_WANT_READ:
		*want |= EPOLLIN;
		return 1;
	case SSL_ERROR_WANT_WRITE:
		*want |= EPOLLOUT;
		return 1;
	default:
		return 0;
	}
}

static void
log_tls(struct conn *c, const char *what)
{
	char	err[256];

	tls_errors(err, sizeof(err));
	log_info("%s: %s %s: %s", c->client, c->host, what, err);
}

static void
finish(struct conn *c, const char *result)
{
	struct inspect	*s = c->ins;

	ERR_clear_error();
	if (s->cs != NULL && SSL_is_init_finished(s->cs))
		SSL_shutdown(s->cs);	/* best effort: a close_notify if it fits */
	shutdown(c->cfd, SHUT_WR);
	if (s->result == NULL)
		s->result = result;
	s->phase = IP_LINGER;
	conn_timer(c, LINGER_MS);
}

static enum step
do_reply(struct conn *c)
{
	struct inspect	*s = c->ins;
	ssize_t		 n;

	while (buf_avail(&s->plain) > 0) {
		n = write(c->cfd, buf_head(&s->plain), buf_avail(&s->plain));
		if (n == -1 && (errno == EAGAIN || errno == EINTR)) {
			s->cwant = EPOLLOUT;
			return ST_BLOCKED;
		}
		if (n <= 0) {
			conn_close(c, "reset");
			return ST_GONE;
		}
		buf_consume(&s->plain, (size_t)n);
	}
	buf_free(&s->plain);
	if ((s->cs = session_server(c->cfd, c->host, c->is_literal)) == NULL) {
		log_tls(c, "client session");
		conn_close(c, "internal_error");
		return ST_GONE;
	}
	s->phase = IP_ACCEPT;
	conn_timer(c, c->conf->handshake_ms);
	return ST_AGAIN;
}

static enum step
do_accept(struct conn *c)
{
	struct inspect	*s = c->ins;
	int		 r;

	ERR_clear_error();
	if ((r = SSL_accept(s->cs)) == 1) {
		s->phase = IP_HEAD;
		conn_timer(c, c->conf->header_ms);
		return ST_AGAIN;
	}
	if (blocked(s->cs, r, &s->cwant))
		return ST_BLOCKED;
	log_tls(c, "client handshake");
	conn_close(c, "tls_handshake_failed");
	return ST_GONE;
}

static enum step
do_head(struct conn *c)
{
	struct inspect	*s = c->ins;
	int		 r;

	for (;;) {
		if (buf_avail(&s->head) > 0 && head_end(&s->head) > 0)
			return inspect_decide(c) ? ST_AGAIN : ST_GONE;
		if (buf_avail(&s->head) > PROXY_HEAD_MAX)
			return inspect_answer(c, 431, "Request Header Fields Too Large", NULL,
			    "request head too large\n") ? ST_AGAIN : ST_GONE;
		if (buf_reserve(&s->head, 4096) == -1) {
			conn_close(c, "internal_error");
			return ST_GONE;
		}
		ERR_clear_error();
		r = SSL_read(s->cs, s->head.data + s->head.len, (int)(s->head.cap - s->head.len));
		if (r > 0) {
			s->head.len += (size_t)r;
			continue;
		}
		if (blocked(s->cs, r, &s->cwant))
			return ST_BLOCKED;
		/* the client left without a request: nothing to record but the tunnel */
		conn_close(c, buf_avail(&s->head) > 0 ? "reset" : "ok");
		return ST_GONE;
	}
}

static enum step
do_connect(struct conn *c)
{
	struct inspect	*s = c->ins;
	const char	*why;
	int		 r;

	ERR_clear_error();
	if ((r = SSL_connect(s->us)) == 1) {
		s->phase = IP_FORWARD;
		conn_timer(c, c->conf->idle_ms);
		return ST_AGAIN;
	}
	if (blocked(s->us, r, &s->uwant))
		return ST_BLOCKED;
	if ((why = session_verify_error(s->us)) != NULL)
		log_info("%s: %s: the target's certificate is refused: %s", c->client, c->host,
		    why);
	else
		log_tls(c, "target handshake");
	s->result = s->req.result = "upstream_tls_failed";
	s->req.status = 502;
	audit_request(c, &s->req, &s->verdict);
	return inspect_answer(c, 502, "Bad Gateway", NULL, "mitm upstream error") ? ST_AGAIN :
	    ST_GONE;
}

/*
 * Bytes from one session into a buffer, at most max; 1 progress, 0
 * blocked, -1 EOF or error.  Room at the tail for a record will do: the
 * buffer is compacted only when there is less.
 */
static int
pull(SSL *ssl, struct buf *b, size_t max, uint32_t *want)
{
	size_t	room = b->cap - b->len;
	int	r;

	if (room < max && room >= 16384)
		max = room;
	else if (buf_reserve(b, max) == -1)
		return -1;
	ERR_clear_error();
	if ((r = SSL_read(ssl, b->data + b->len, (int)max)) > 0) {
		b->len += (size_t)r;
		return 1;
	}
	return blocked(ssl, r, want) ? 0 : -1;
}

/* A buffer out through one session; 1 progress, 0 blocked or empty, -1 error. */
static int
push(SSL *ssl, struct buf *b, uint64_t *count, uint32_t *want)
{
	int	r;

	if (buf_avail(b) == 0)
		return 0;
	ERR_clear_error();
	if ((r = SSL_write(ssl, buf_head(b), (int)(buf_avail(b) > INT32_MAX ? INT32_MAX :
	    buf_avail(b)))) > 0) {
		buf_consume(b, (size_t)r);
		if (count != NULL)
			*count += (uint64_t)r;
		return 1;
	}
	return blocked(ssl, r, want) ? 0 : -1;
}

/* The response head read so far; with it complete, what followed it is body. */
static int
take_response(struct conn *c)
{
	struct inspect	*s = c->ins;
	size_t		 n;

	while (!s->resp_started && buf_avail(&s->rhead) > 0 && head_end(&s->rhead) > 0)
		if (inspect_response_head(c) == -1)
			return -1;
	if (!s->resp_started) {
		if (buf_avail(&s->rhead) > PROXY_HEAD_MAX)
			return -1;
		return 0;
	}
	n = buf_avail(&s->rhead);
	if (s->resp_bounded && n > s->resp_left)
		n = (size_t)s->resp_left;	/* past the framing: dropped */
	if (buf_append(&s->down, buf_head(&s->rhead), n) == -1)
		return -1;
	if (s->resp_bounded)
		s->resp_left -= n;
	s->req.bytes_down += n;
	inspect_wipe(&s->rhead);	/* the body is read straight into down */
	return 0;
}

static int
response_done(const struct inspect *s)
{
	return s->u_eof || (s->resp_started && s->resp_bounded && s->resp_left == 0);
}

/*
 * A chunked body: the bytes just pulled in (after before) end with its
 * last chunk at the latest; what follows it is cut off, and the client
 * is not read again.  -1: malformed chunks.
 */
static int
chunks_end(struct conn *c, size_t before)
{
	struct inspect	*s = c->ins;
	long long	 k;

	if ((k = chunk_scan(&c->chunks, (const uint8_t *)buf_head(&s->up) + before,
	    buf_avail(&s->up) - before)) == -1)
		return -1;
	if (c->chunks.done) {
		s->up.len -= buf_avail(&s->up) - before - (size_t)k;
		s->req_left = 0;
	}
	return 0;
}

static int
pump_up(struct conn *c, int *progress)
{
	struct inspect	*s = c->ins;
	size_t		 room, before = buf_avail(&s->up);
	int		 r;

	if (s->req_left > 0 && before < INS_BUF) {
		room = INS_BUF - before;
		if (room > s->req_left)
			room = (size_t)s->req_left;
		if ((r = pull(s->cs, &s->up, room, &s->cwant)) == -1)
			s->req_left = 0;	/* the client is done sending */
		else if (r == 1 && s->req_chunked && chunks_end(c, before) == -1)
			return -1;
		if (r == 1) {
			if (!s->req_chunked)
				s->req_left -= buf_avail(&s->up) - before;
			s->req.bytes_up += buf_avail(&s->up) - before;
			*progress = 1;
		}
	}
	if ((r = push(s->us, &s->up, NULL, &s->uwant)) == -1)
		return -1;
	*progress |= r;
	return 0;
}

/* The response: its head through rhead, its body straight into down. */
static int
pump_down(struct conn *c, int *progress)
{
	struct inspect	*s = c->ins;
	size_t		 before, max;
	int		 r;

	if (!response_done(s) && buf_avail(&s->down) < INS_BUF) {
		max = INS_BUF - buf_avail(&s->down);
		if (s->resp_started) {
			if (s->resp_bounded && max > s->resp_left)
				max = (size_t)s->resp_left;
			before = buf_avail(&s->down);
			if ((r = pull(s->us, &s->down, max, &s->uwant)) == -1)
				s->u_eof = 1;
			else if (r == 1) {
				s->req.bytes_down += buf_avail(&s->down) - before;
				if (s->resp_bounded)
					s->resp_left -= buf_avail(&s->down) - before;
				*progress = 1;
			}
		} else {
			if ((r = pull(s->us, &s->rhead, max, &s->uwant)) == -1)
				s->u_eof = 1;
			*progress |= r == 1;
			if (take_response(c) == -1)
				return -1;
		}
	}
	if ((r = push(s->cs, &s->down, NULL, &s->cwant)) == -1)
		return -1;
	*progress |= r;
	return 0;
}

static enum step
do_forward(struct conn *c)
{
	struct inspect	*s = c->ins;
	int		 progress = 0;

	if (pump_up(c, &progress) == -1) {
		s->u_eof = 1;
		log_tls(c, "writing to the target");
	}
	if (pump_down(c, &progress) == -1) {
		log_tls(c, "forwarding the response");
		s->req.result = "reset";
		audit_request(c, &s->req, &s->verdict);
		conn_close(c, "reset");
		return ST_GONE;
	}
	if (response_done(s) && buf_avail(&s->down) == 0) {
		if (!s->resp_started) {
			s->req.result = "upstream_failure";
			s->req.status = 502;
			audit_request(c, &s->req, &s->verdict);
			s->result = "upstream_failure";
			return inspect_answer(c, 502, "Bad Gateway", NULL, "mitm upstream error") ?
			    ST_AGAIN : ST_GONE;
		}
		s->req.result = "ok";
		audit_request(c, &s->req, &s->verdict);
		/* a clean end keeps the target's session resumable */
		ERR_clear_error();
		SSL_shutdown(s->us);
		finish(c, "ok");
		return ST_AGAIN;
	}
	return progress ? ST_AGAIN : ST_BLOCKED;
}

static enum step
do_answer(struct conn *c)
{
	struct inspect	*s = c->ins;
	int		 r;

	while ((r = push(s->cs, &s->down, NULL, &s->cwant)) == 1)
		;
	if (r == -1) {
		conn_close(c, "reset");
		return ST_GONE;
	}
	if (buf_avail(&s->down) > 0)
		return ST_BLOCKED;
	finish(c, s->req.status >= 500 ? "upstream_failure" : "denied");
	return ST_AGAIN;
}

static enum step
do_linger(struct conn *c)
{
	char	sink[4096];
	ssize_t	n;

	while ((n = read(c->cfd, sink, sizeof(sink))) > 0)
		;
	if (n == -1 && (errno == EAGAIN || errno == EINTR)) {
		c->ins->cwant = EPOLLIN;
		return ST_BLOCKED;
	}
	conn_close(c, c->ins->result);
	return ST_GONE;
}

static enum step
step(struct conn *c)
{
	switch (c->ins->phase) {
	case IP_REPLY:
		return do_reply(c);
	case IP_ACCEPT:
		return do_accept(c);
	case IP_HEAD:
		return do_head(c);
	case IP_CONNECT:
		return do_connect(c);
	case IP_FORWARD:
		return do_forward(c);
	case IP_ANSWER:
		return do_answer(c);
	case IP_LINGER:
		return do_linger(c);
	}
	return ST_BLOCKED;
}

static void
run(struct conn *c)
{
	struct inspect	*s = c->ins;
	enum step	 st;

	do {
		s->cwant = s->uwant = 0;
		st = step(c);
	} while (st == ST_AGAIN);
	if (st == ST_GONE)
		return;
	/* the tunnel's close record counts what crossed the wire */
	if (s->cs != NULL) {
		c->c2u.bytes = BIO_number_read(SSL_get_rbio(s->cs));
		c->u2c.bytes = BIO_number_written(SSL_get_wbio(s->cs));
	}
	conn_want(c);
}

static void
ins_io(struct conn *c, int fd, uint32_t events)
{
	run(c);
}

static uint32_t
ins_interest(struct conn *c, int fd)
{
	if (fd == -1)
		return 0;
	return fd == c->cfd ? c->ins->cwant : c->ins->uwant;
}

static void
ins_timeout(struct conn *c)
{
	struct inspect	*s = c->ins;
	uint64_t	 idle;

	switch (s->phase) {
	case IP_FORWARD:
		idle = ev_now() - c->last_io;
		if (idle + 5 < c->conf->idle_ms) {
			conn_timer(c, (unsigned)(c->conf->idle_ms - idle));
			return;
		}
		s->req.result = "idle_timeout";
		audit_request(c, &s->req, &s->verdict);
		conn_close(c, "idle_timeout");
		return;
	case IP_CONNECT:
		s->result = s->req.result = "timeout";
		s->req.status = 504;
		audit_request(c, &s->req, &s->verdict);
		inspect_answer(c, 504, "Gateway Timeout", NULL, "mitm upstream error");
		run(c);
		return;
	case IP_HEAD:
		conn_close(c, "header_timeout");
		return;
	case IP_REPLY:
	case IP_ACCEPT:
		log_info("%s: %s: TLS handshake timed out", c->client, c->host);
		conn_close(c, "handshake_timeout");
		return;
	case IP_ANSWER:
	case IP_LINGER:
		conn_close(c, s->result);
		return;
	}
}

static void
ins_cancel(struct conn *c)
{
	struct inspect	*s = c->ins;

	if (s == NULL)
		return;
	SSL_free(s->cs);
	SSL_free(s->us);
	buf_free(&s->plain);
	inspect_wipe(&s->head);
	inspect_wipe(&s->rhead);
	inspect_wipe(&s->up);
	inspect_wipe(&s->down);
	free(s);
	c->ins = NULL;
}

/*
 * The target is connected: send the client its reply (the CONNECT 200 or
 * the SOCKS5 success), then take over both descriptors.
 */
void
inspect_start(struct conn *c, const void *reply, size_t n)
{
	struct inspect	*s;

	/* TLS starts after our reply: an early byte is no handshake we could take */
	if (buf_avail(&c->c2u.pend) > 0 || buf_avail(&c->u2c.pend) > 0) {
		conn_close(c, "bad_request");
		return;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL || buf_append(&s->plain, reply, n) == -1) {
		free(s);
		conn_close(c, "internal_error");
		return;
	}
	s->verdict = c->verdict;
	c->ins = s;
	c->stage = &inspect_stage;
	c->state = CS_RELAY;
	c->last_io = ev_now();
	conn_timer(c, c->conf->handshake_ms);
	run(c);
}
