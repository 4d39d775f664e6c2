/*
 * A client connection from accept() to close: which descriptors are
 * watched for what in each state, its timer, its place in the lists.
 * Closed connections are freed from a timer, after the loop has finished
 * dispatching the batch that may still name them.
 */
#include "config.h"

#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "tcplocal.h"
#include "relay/relay.h"
#include "policy/policy.h"

#define LINGER_MS	2000

#define SRC_BUCKETS	1024

/* Unauthenticated connections of one source address. */
struct src_count {
	LIST_ENTRY(src_count)	 entry;
	uint8_t			 addr[16];	/* IPv4 as ::ffff:a.b.c.d */
	unsigned		 n;
};

static struct connlist	live = TAILQ_HEAD_INITIALIZER(live);
static struct connlist	pending = TAILQ_HEAD_INITIALIZER(pending);
static LIST_HEAD(, src_count) sources[SRC_BUCKETS];
static struct connlist	graveyard = TAILQ_HEAD_INITIALIZER(graveyard);
static struct ev_timer	reaper;
static int		reaper_ready;
static unsigned		nconns, npending;

static void	client_io(struct ev_io *, uint32_t, void *);
static void	upstream_io(struct ev_io *, uint32_t, void *);

static void
reap(struct ev_timer *t, void *arg)
{
	struct conn	*c;

	while ((c = TAILQ_FIRST(&graveyard)) != NULL) {
		TAILQ_REMOVE(&graveyard, c, entry);
		if (c->pp->release != NULL)
			c->pp->release(c);
		free(c);
	}
}

void
half_init(struct half *h, int *src, int *dst)
{
	memset(h, 0, sizeof(*h));
	h->src = src;
	h->dst = dst;
	h->pipe[0] = h->pipe[1] = -1;
}

void
half_free(struct half *h)
{
	if (h->pipe[0] != -1)
		close(h->pipe[0]);
	if (h->pipe[1] != -1)
		close(h->pipe[1]);
	h->pipe[0] = h->pipe[1] = -1;
	buf_free(&h->pend);
	buf_free(&h->acc);
}

static void
fmt_peer(const struct sockaddr_storage *ss, char *out, size_t len)
{
	char	a[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &sin->sin_addr, a, sizeof(a));
		snprintf(out, len, "%s:%u", a, ntohs(sin->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &sin6->sin6_addr, a, sizeof(a));
		snprintf(out, len, "[%s]:%u", a, ntohs(sin6->sin6_port));
	} else
		snprintf(out, len, "unknown");
}

static void
conn_timeout(struct ev_timer *t, void *arg)
{
	struct conn	*c = arg;
	uint64_t	 idle;

	switch (c->state) {
	case CS_GREETING:
		conn_close(c, "header_timeout");
		break;
	case CS_DIALING:
		c->stage->timeout(c);
		break;
	case CS_RELAY:
		if (c->stage->timeout != NULL) {
			c->stage->timeout(c);	/* the stage keeps its own deadlines */
			break;
		}
		/* FALLTHROUGH */
	case CS_UDP:
		idle = ev_now() - c->last_io;
		if (idle + 5 < c->conf->idle_ms) {
			conn_timer(c, (unsigned)(c->conf->idle_ms - idle));
			break;
		}
		if (c->forwarded && c->u2c.filter != NULL && c->pp->failed != NULL)
			c->pp->failed(c, DIAL_TIMEOUT);
		else
			conn_close(c, "idle_timeout");
		break;
	case CS_REPLY:
	case CS_LINGER:
		conn_close(c, NULL);
		break;
	case CS_DEAD:
		break;
	}
}

static void
src_key(const struct sockaddr_storage *ss, uint8_t key[16])
{
	static const uint8_t	mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	memset(key, 0, 16);
	if (ss->ss_family == AF_INET) {
		memcpy(key, mapped, 12);
		memcpy(key + 12, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6)
		memcpy(key, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
}

static struct src_count *
src_find(const uint8_t key[16], int create)
{
	struct src_count	*sc;
	uint32_t		 h = 2166136261u;
	size_t			 i;

	for (i = 0; i < 16; i++)
		h = (h ^ key[i]) * 16777619u;
	LIST_FOREACH(sc, &sources[h % SRC_BUCKETS], entry)
		if (memcmp(sc->addr, key, 16) == 0)
			return sc;
	if (!create || (sc = calloc(1, sizeof(*sc))) == NULL)
		return NULL;
	memcpy(sc->addr, key, 16);
	LIST_INSERT_HEAD(&sources[h % SRC_BUCKETS], sc, entry);
	return sc;
}

/* The connection has authenticated or is closing: it no longer counts as pending. */
static void
unpending(struct conn *c)
{
	if (!c->counted_pending)
		return;
	c->counted_pending = 0;
	npending--;
	TAILQ_REMOVE(&pending, c, pend_entry);
	if (c->src != NULL && --c->src->n == 0) {
		LIST_REMOVE(c->src, entry);
		free(c->src);
	}
	c->src = NULL;
}

static void
evict(struct conn *c, const char *why)
{
	static uint64_t	last;

	if (ev_now() - last > 5000) {
		log_warnx("connection limit reached (%s, %u unauthenticated): closing the "
		    "oldest unauthenticated connections", why, npending);
		last = ev_now();
	}
	log_info("%s: unauthenticated connection closed to make room (%s)", c->client, why);
	conn_close(c, NULL);
}

/*
 * Room for a new connection from peer?  Unauthenticated ones are bounded
 * in all and per source address; at a bound the oldest of them (of that
 * source) is closed to make room, so an idle flood delays nobody who
 * sends a request head promptly.  -1: no room at all (max-connections).
 */
int
conn_admit(const struct proxy_conf *conf, const struct sockaddr_storage *peer)
{
	struct src_count	*sc;
	struct conn		*c;
	uint8_t			 key[16];

	src_key(peer, key);
	if ((sc = src_find(key, 0)) != NULL && sc->n >= conf->max_pending_source) {
		TAILQ_FOREACH(c, &pending, pend_entry)
			if (c->src == sc)
				break;
		if (c != NULL)
			evict(c, "max-pending-per-source");
	}
	if (npending >= conf->max_pending && (c = TAILQ_FIRST(&pending)) != NULL)
		evict(c, "max-pending");
	if (nconns >= conf->max_conns && (c = TAILQ_FIRST(&pending)) != NULL)
		evict(c, "max-connections");
	return nconns >= conf->max_conns || npending >= conf->max_pending ? -1 : 0;
}

/*
 * A socket whose peer is on loopback gets the configured algorithm
 * (tcplocal.h: pacing there costs more than the bytes).  A refusal leaves
 * the host's, which works, and is logged once, not per connection.
 */
void
conn_local_cc(const struct proxy_conf *conf, int fd, const struct sockaddr_storage *peer)
{
	static int	warned;

	if (conf->loopback_cc[0] == '\0')
		return;
	if (tcp_local_cc(fd, (const struct sockaddr *)peer, conf->loopback_cc) == -1 &&
	    !warned) {
		log_warn("loopback-congestion-control %s (the host's algorithm stays)",
		    conf->loopback_cc);
		warned = 1;
	}
}

struct conn *
conn_new(const struct proto_handler *pp, struct proxy_conf *conf, int fd,
    const struct sockaddr_storage *peer)
{
	uint8_t		key[16];

	struct conn	*c;
	int		 one = 1;

	if (!reaper_ready) {
		ev_timer_init(&reaper, reap, NULL);
		reaper_ready = 1;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL) {
		log_warn("%s connection", pp->name);
		close(fd);
		return NULL;
	}
	c->pp = pp;
	c->proto = pp->kind;
	c->forwarded = pp->forwarding;
	c->cfd = fd;
	c->ufd = -1;
	c->conf = conf_ref(conf);
	c->started = c->last_io = ev_now();
	fmt_peer(peer, c->client, sizeof(c->client));
	half_init(&c->c2u, &c->cfd, &c->ufd);
	half_init(&c->u2c, &c->ufd, &c->cfd);
	ev_timer_init(&c->timer, conn_timeout, c);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	conn_local_cc(conf, fd, peer);
	TAILQ_INSERT_TAIL(&live, c, entry);
	nconns++;
	npending++;
	c->counted_pending = 1;
	TAILQ_INSERT_TAIL(&pending, c, pend_entry);
	src_key(peer, key);
	if ((c->src = src_find(key, 1)) != NULL)
		c->src->n++;
	c->state = CS_GREETING;
	conn_timer(c, c->conf->header_ms);
	conn_want(c);
	return c;
}

static void
set_interest(struct conn *c, struct ev_io *io, int fd, uint32_t ev, ev_io_cb *cb)
{
	if (fd == -1)
		return;
	if (ev == 0) {
		if (io->active)
			ev_io_del(io);
		return;
	}
	if (io->active) {
		ev_io_set(io, ev);
		return;
	}
	if (ev_io_add(io, fd, ev, cb, c) == -1)
		conn_close(c, "internal_error");
}

/* Watch each descriptor for exactly what the current state needs. */
void
conn_want(struct conn *c)
{
	uint32_t	cev = 0, uev = 0;

	switch (c->state) {
	case CS_GREETING:
		/* the audit sink is behind: no new request is read until it catches up */
		cev = (audit_blocked() ? 0 : EPOLLIN) | (buf_avail(&c->out) ? EPOLLOUT : 0);
		break;
	case CS_DIALING:
		uev = c->uwant;
		break;
	case CS_RELAY:
		cev = c->stage->interest(c, c->cfd);
		uev = c->stage->interest(c, c->ufd);
		break;
	case CS_REPLY:
		cev = EPOLLOUT;
		break;
	case CS_LINGER:
	case CS_UDP:
		cev = EPOLLIN;
		break;
	case CS_DEAD:
		return;
	}
	set_interest(c, &c->cio, c->cfd, cev, client_io);
	if (c->state != CS_DEAD)
		set_interest(c, &c->uio, c->ufd, uev, upstream_io);
}

void
conn_timer(struct conn *c, unsigned ms)
{
	ev_timer_start(&c->timer, ms);
}

/* Read what the client sent into c->in; -1 when it is gone. */
static int
read_client(struct conn *c)
{
	ssize_t	n;

	if (buf_reserve(&c->in, 4096) == -1)
		return -1;
	n = read(c->cfd, c->in.data + c->in.len, c->in.cap - c->in.len);
	if (n > 0) {
		c->in.len += (size_t)n;
		return 0;
	}
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return 0;
	return -1;
}

/* Write what is in c->out; -1 on error, 1 while some is left. */
int
conn_flush(struct conn *c)
{
	ssize_t	n;

	while (buf_avail(&c->out) > 0) {
		n = write(c->cfd, buf_head(&c->out), buf_avail(&c->out));
		if (n > 0) {
			buf_consume(&c->out, (size_t)n);
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return 1;
		return -1;
	}
	return 0;
}

static void
linger_read(struct conn *c)
{
	char	sink[4096];
	ssize_t	n;

	while ((n = read(c->cfd, sink, sizeof(sink))) > 0)
		;
	if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR))
		conn_close(c, NULL);
}

static void
client_io(struct ev_io *io, uint32_t events, void *arg)
{
	struct conn	*c = arg;
	int		 r;

	switch (c->state) {
	case CS_GREETING:
		if ((events & EPOLLOUT) && conn_flush(c) == -1) {
			conn_close(c, NULL);
			return;
		}
		if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
			if (read_client(c) == -1) {
				conn_close(c, NULL);
				return;
			}
			c->pp->input(c);
		}
		break;
	case CS_RELAY:
		c->last_io = ev_now();
		c->stage->io(c, c->cfd, events);
		return;
	case CS_REPLY:
		if ((r = conn_flush(c)) == -1) {
			conn_close(c, NULL);
			return;
		}
		if (r == 0) {
			shutdown(c->cfd, SHUT_WR);
			c->state = CS_LINGER;
			conn_timer(c, LINGER_MS);
		}
		break;
	case CS_LINGER:
	case CS_UDP:
		/* nothing more is expected on the TCP side: EOF ends it */
		linger_read(c);
		break;
	case CS_DIALING:
	case CS_DEAD:
		break;
	}
	if (c->state != CS_DEAD && c->state != CS_DIALING)
		conn_want(c);
}

static void
upstream_io(struct ev_io *io, uint32_t events, void *arg)
{
	struct conn	*c = arg;

	if (c->state == CS_RELAY)
		c->last_io = ev_now();
	if (c->state == CS_DIALING || c->state == CS_RELAY)
		c->stage->io(c, c->ufd, events);
}

static void
stage_cancel(struct conn *c)
{
	if (c->stage != NULL && c->stage->cancel != NULL)
		c->stage->cancel(c);
}

/* Send a final reply, then close (lingering, so the client gets to read it). */
void
conn_reply_close(struct conn *c, const void *msg, size_t len)
{
	stage_cancel(c);
	if (c->ufd != -1) {
		if (c->uio.active)
			ev_io_del(&c->uio);
		close(c->ufd);
		c->ufd = -1;
	}
	buf_reset(&c->out);
	if (buf_append(&c->out, msg, len) == -1) {
		conn_close(c, "internal_error");
		return;
	}
	c->state = CS_REPLY;
	conn_timer(c, c->conf->header_ms);
	client_io(&c->cio, EPOLLOUT, c);
}

/*
 * Keep a host that was refused as invalid, for the audit record only: as
 * the client wrote it, empty if it was (the record escapes its bytes).
 */
void
conn_raw_host(struct conn *c, const void *p, size_t n)
{
	c->rawhostlen = n < sizeof(c->rawhost) ? n : sizeof(c->rawhost);
	if (c->rawhostlen > 0)
		memcpy(c->rawhost, p, c->rawhostlen);
	c->has_rawhost = 1;
}

int
conn_attach_reg(struct conn *c, struct reg *r)
{
	if (r->nconns >= c->conf->max_conns_client)
		return -1;
	c->reg = r;
	r->nconns++;
	TAILQ_INSERT_TAIL(&r->conns, c, reg_entry);
	unpending(c);
	return 0;
}

/* why: the result recorded for a relay that was allowed; NULL for none. */
void
conn_close(struct conn *c, const char *why)
{
	if (c->state == CS_DEAD)
		return;
	if (c->allowed && !c->audited_close)
		audit_tunnel_close(c, why ? why : c->result ? c->result : "ok");
	c->audited_close = 1;
	c->state = CS_DEAD;
	stage_cancel(c);
	if (c->pp->close != NULL)
		c->pp->close(c);
	ev_timer_stop(&c->timer);
	if (c->cio.active)
		ev_io_del(&c->cio);
	if (c->uio.active)
		ev_io_del(&c->uio);
	if (c->cfd != -1)
		close(c->cfd);
	if (c->ufd != -1)
		close(c->ufd);
	c->cfd = c->ufd = -1;
	half_free(&c->c2u);
	half_free(&c->u2c);
	buf_free(&c->in);
	buf_free(&c->out);
	buf_free(&c->uhead);
	buf_free(&c->early);
	if (c->reg != NULL) {
		TAILQ_REMOVE(&c->reg->conns, c, reg_entry);
		c->reg->nconns--;
		c->reg = NULL;
	}
	unpending(c);
	nconns--;
	conf_unref(c->conf);
	c->conf = NULL;
	TAILQ_REMOVE(&live, c, entry);
	TAILQ_INSERT_TAIL(&graveyard, c, entry);
	ev_timer_start(&reaper, 0);
}

void
conn_close_reg(struct reg *r)
{
	struct conn	*c;

	while ((c = TAILQ_FIRST(&r->conns)) != NULL)
		conn_close(c, "unregistered");
}

void
conn_close_all(void)
{
	struct conn	*c;

	while ((c = TAILQ_FIRST(&live)) != NULL)
		conn_close(c, "shutdown");
	reap(NULL, NULL);
	if (reaper_ready)
		ev_timer_stop(&reaper);
}

/* The audit sink caught up: read the requests that waited. */
void
conn_resume_all(void)
{
	struct conn	*c, *next;

	for (c = TAILQ_FIRST(&live); c != NULL; c = next) {
		next = TAILQ_NEXT(c, entry);
		if (c->state == CS_GREETING) {
			conn_want(c);
			if (buf_avail(&c->in) > 0 && c->state == CS_GREETING)
				c->pp->input(c);
		}
	}
}

unsigned
conn_count(void)
{
	return nconns;
}

unsigned
conn_pending(void)
{
	return npending;
}
