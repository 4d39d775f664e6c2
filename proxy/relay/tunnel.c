/*
 * The relay between client and upstream once a request is allowed.  Each
 * direction moves bytes with splice(2) through its own pipe, so payload
 * never enters user space; without a pipe (descriptors exhausted) it falls
 * back to read/write.  Half-closes are passed on; the relay ends when both
 * directions have ended, on an error, or when idle too long.
 */
#include "config.h"

#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "relay/relay.h"

#define PUMP_BUDGET	(1024 * 1024)	/* per direction per wakeup: fairness */
#define COPY_CHUNK	(64 * 1024)
/*
 * Pipes start at the kernel's default size; a direction whose source once
 * had a whole default pipe's worth waiting gets a BULK_PIPE one at once,
 * so a bulk transfer runs through the big pipe from its first splices.  Big
 * pipes for every relay would use up the per-user pipe allowance
 * (fs.pipe-user-pages-soft) after a few dozen relays and leave the rest
 * with tiny pipes; interactive traffic never has that much queued.
 */
#define SPLICE_CHUNK	(1024 * 1024)
#define BULK_PIPE	(1024 * 1024)

enum pump_result {
	PUMP_OK,
	PUMP_ERROR,		/* reset or other I/O failure */
	PUMP_FILTER_FAILED,	/* the response head filter refused */
};

static int
half_done(const struct half *h)
{
	return h->eof && h->shut;
}

static int
would_block(void)
{
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

/* Pending bytes and spliced bytes out to dst; 1 when dst is full. */
static int
drain(struct half *h, size_t *moved)
{
	ssize_t	n;

	while (buf_avail(&h->pend) > 0) {
		n = write(*h->dst, buf_head(&h->pend), buf_avail(&h->pend));
		if (n == -1)
			return would_block() ? 1 : -1;
		buf_consume(&h->pend, (size_t)n);
		h->bytes += (uint64_t)n;
		*moved += (size_t)n;
	}
	while (h->inpipe > 0) {
		n = splice(h->pipe[0], NULL, *h->dst, NULL, h->inpipe,
		    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n == -1)
			return would_block() ? 1 : -1;
		h->inpipe -= (size_t)n;
		h->bytes += (uint64_t)n;
		*moved += (size_t)n;
	}
	return 0;
}

static size_t
bounded(const struct half *h, size_t want)
{
	return h->bounded && h->left < want ? (size_t)h->left : want;
}

/* Best effort: EPERM past the allowance leaves the pipe as it is. */
static void
grow_pipe(struct half *h)
{
	int	size;

	h->bulk = 1;
	if ((size = fcntl(h->pipe[0], F_SETPIPE_SZ, BULK_PIPE)) > 0)
		h->pipe_size = (size_t)size;
}

/* One read from src into the filter, the pipe or the buffer; 1 when src is empty. */
static int
fill(struct conn *c, struct half *h)
{
	ssize_t	n;
	size_t	want, room;
	int	r;

	if (h->filter != NULL) {
		if (buf_reserve(&h->acc, 16 * 1024) == -1)
			return -1;
		n = read(*h->src, h->acc.data + h->acc.len, h->acc.cap - h->acc.len);
		if (n == -1)
			return would_block() ? 1 : -1;
		if (n == 0)
			return -2;	/* EOF before the head was complete */
		h->acc.len += (size_t)n;
		if ((r = h->filter(c, &h->acc, &h->pend)) == -1)
			return -2;
		if (r == 1) {
			h->filter = NULL;
			buf_free(&h->acc);
		}
		return 0;
	}
	/* a request's body is all the client may send: what follows is never read */
	if (h->bounded && h->left == 0)
		return 1;
	if (h->pipe[0] != -1) {
		want = bounded(h, SPLICE_CHUNK);
		room = h->pipe_size > h->inpipe ? h->pipe_size - h->inpipe : 0;
		n = splice(*h->src, NULL, h->pipe[1], NULL, want,
		    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0)
			h->inpipe += (size_t)n;
		if (n > 0 && (size_t)n >= h->pipe_size && !h->bulk)
			grow_pipe(h);
	} else {
		if (buf_reserve(&h->pend, COPY_CHUNK) == -1)
			return -1;
		room = want = bounded(h, h->pend.cap - h->pend.len);
		n = read(*h->src, h->pend.data + h->pend.len, want);
		if (n > 0)
			h->pend.len += (size_t)n;
	}
	/* less than there was room for: src is empty, no need to ask it again now */
	if (n > 0 && (size_t)n < want && (size_t)n < room)
		h->src_dry = 1;
	if (n > 0 && h->bounded)
		h->left -= (uint64_t)n;
	if (n == 0)
		h->eof = 1;
	if (n == -1)
		return would_block() ? 1 : -1;
	return 0;
}

/* Which directions tunnel_io() pumps */
#define PUMP_C2U	0x1
#define PUMP_U2C	0x2

static void	tunnel_io(struct conn *, int);
static void	tunnel_ready(struct conn *, int, uint32_t);
static uint32_t	tunnel_interest(struct conn *, int);

static const struct conn_stage tunnel_stage = {
	.io = tunnel_ready,
	.interest = tunnel_interest,
};

static enum pump_result
pump(struct conn *c, struct half *h)
{
	size_t	moved = 0;
	int	r;

	h->src_dry = 0;
	while (!half_done(h)) {
		if ((r = drain(h, &moved)) == -1)
			return PUMP_ERROR;
		if (r == 1)
			break;
		if (h->eof) {
			shutdown(*h->dst, SHUT_WR);
			h->shut = 1;
			break;
		}
		/* epoll (level-triggered) tells when src has more */
		if (h->src_dry || moved >= PUMP_BUDGET)
			break;
		if ((r = fill(c, h)) == -2)
			return PUMP_FILTER_FAILED;
		if (r == -1)
			return PUMP_ERROR;
		if (r == 1)
			break;
	}
	return PUMP_OK;
}

static void
open_pipe(struct half *h)
{
	int	size;

	if (pipe2(h->pipe, O_NONBLOCK | O_CLOEXEC) == -1) {
		/* EMFILE/ENFILE: this relay copies through user space instead */
		h->pipe[0] = h->pipe[1] = -1;
		return;
	}
	/* a user past the pipe allowance gets one-page pipes */
	h->pipe_size = (size = fcntl(h->pipe[0], F_GETPIPE_SZ)) > 0 ? (size_t)size : 4096;
}

void
tunnel_start(struct conn *c)
{
	c->stage = &tunnel_stage;
	c->state = CS_RELAY;
	c->last_io = ev_now();
	if (c->conf->splice) {
		open_pipe(&c->c2u);
		open_pipe(&c->u2c);
	}
	conn_timer(c, c->conf->idle_ms);
	tunnel_io(c, PUMP_C2U | PUMP_U2C);
}

/* The client's reply (200, SOCKS5 success) goes before anything an upstream proxy sent. */
void
tunnel_start_reply(struct conn *c, const void *reply, size_t n)
{
	struct buf	b = { 0 };

	if (buf_append(&b, reply, n) == -1 ||
	    buf_append(&b, buf_head(&c->u2c.pend), buf_avail(&c->u2c.pend)) == -1) {
		buf_free(&b);
		conn_close(c, "internal_error");
		return;
	}
	buf_free(&c->u2c.pend);
	c->u2c.pend = b;
	tunnel_start(c);
}

static void
tunnel_io(struct conn *c, int which)
{
	enum pump_result	r = PUMP_OK;

	if (which & PUMP_C2U)
		r = pump(c, &c->c2u);
	if (r == PUMP_OK && (which & PUMP_U2C))
		r = pump(c, &c->u2c);
	if (r == PUMP_FILTER_FAILED) {
		if (c->pp->failed != NULL)
			c->pp->failed(c, DIAL_UPSTREAM);
		else
			conn_close(c, "error");
		return;
	}
	if (r == PUMP_ERROR) {
		conn_close(c, errno == ECONNRESET || errno == EPIPE ? "reset" : "error");
		return;
	}
	/* a forwarded request is over once its response is */
	if (half_done(&c->u2c) && (half_done(&c->c2u) || c->forwarded)) {
		conn_close(c, "ok");
		return;
	}
	conn_want(c);
}

/*
 * fd is ready: the direction reading it when it is readable, the one
 * writing it when it is writable, both on an error or hang-up.  The other
 * descriptor is not asked (a splice per wakeup that would fail EAGAIN).
 */
static void
tunnel_ready(struct conn *c, int fd, uint32_t events)
{
	int	reads = fd == c->cfd ? PUMP_C2U : PUMP_U2C, writes = reads ^ 3, which = 0;

	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		which |= reads;
	if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR))
		which |= writes;
	tunnel_io(c, which);
}

static uint32_t
tunnel_interest(struct conn *c, int fd)
{
	const struct half	*h;
	uint32_t		 ev = 0;

	if (fd == -1)
		return 0;
	h = fd == c->cfd ? &c->c2u : &c->u2c;	/* the half reading fd */
	if (!h->eof && buf_avail(&h->pend) == 0 && h->inpipe == 0 &&
	    !(h->bounded && h->left == 0))
		ev |= EPOLLIN;
	h = fd == c->cfd ? &c->u2c : &c->c2u;	/* the half writing fd */
	if (!h->shut && (buf_avail(&h->pend) > 0 || h->inpipe > 0))
		ev |= EPOLLOUT;
	return ev;
}
