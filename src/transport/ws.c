#include "config.h"

#include <sys/random.h>
#include <sys/socket.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <wslay/wslay.h>

#include "buf.h"
#include "log.h"
#include "rpc/rpc.h"
#include "transport/ws.h"

#define WS_LINGER_MS	2000
/*
 * wslay queues a pong for every ping it reads, unsent ones included: past
 * this many queued messages (or RPC_HIGH_WATER bytes) no more frames are
 * read until the queue is down to half (or RPC_LOW_WATER), so a ping flood
 * from a client that does not read meets back-pressure.
 */
#define WS_QUEUE_MSGS_MAX	1024
/*
 * Our text frames are written straight into one output queue, head and
 * payload side by side (a process/output notification is encoded in
 * place): wslay_event_queue_msg() would copy each message into a buffer of
 * its own and wslay_event_send() write head and payload with a send(2)
 * each.  wslay's own frames (pongs, pings, its close) join the same queue
 * from its send callback, whole and in order, so one send(2) writes all
 * that a loop round queued.  A queue that grew past WS_OUT_KEEP under
 * back-pressure is given back once drained.
 */
#define WS_HEAD_MAX	10		/* a server's frame head: no mask */
#define WS_OUT_KEEP	(1024 * 1024)

static struct {
	struct conn		*c;
	wslay_event_context_ptr	 ctx;
	struct rpc_transport	 t;
	struct buf		 out;		/* whole frames to write, in order */
	size_t			 res_head;	/* head size the reserved room assumed */
	struct ev_timer		 ping, linger;
	int			 paused;
	int			 was_congested;
	int			 not_socket;	/* a pipe (tests): write(2) */
	int			 out_full;	/* reading stopped until the queue drains */
	int			 closing;	/* close frame queued by us */
	int			 detached;
	/*
	 * Set from inside wslay's callbacks (a protocol violation, a hand-over):
	 * the context cannot be freed under wslay_event_recv(), so the
	 * teardown runs from a timer.  No close frame is sent either way.
	 */
	int			 doomed;
	struct ev_timer		 doom;
} ws;

/* ws_init(): what every connection is held to */
static size_t	max_message;
static unsigned	ping_ms;

static void	ws_update(void);

/* Bytes queued and not yet written: ours and what wslay still holds. */
static size_t
ws_queued(void)
{
	return buf_avail(&ws.out) + wslay_event_get_queued_msg_length(ws.ctx);
}

/* Is the outgoing queue too long to read more (with hysteresis)? */
static int
ws_output_full(void)
{
	size_t	bytes = ws_queued();
	size_t	msgs = wslay_event_get_queued_msg_count(ws.ctx);

	if (bytes > RPC_HIGH_WATER || msgs > WS_QUEUE_MSGS_MAX)
		ws.out_full = 1;
	else if (bytes < RPC_LOW_WATER && msgs < WS_QUEUE_MSGS_MAX / 2)
		ws.out_full = 0;
	return ws.out_full;
}

static ssize_t
ws_recv_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *ud)
{
	ssize_t	n;

	/*
	 * wslay reads until the socket is dry: stop it here, between frames
	 * it already holds, once the dispatcher paused or the queue is full.
	 * A doomed connection reads nothing more: handed to the instance that
	 * owns the session, what the client sends next is that instance's (the
	 * hand-over runs inside this very wslay_event_recv()).
	 */
	if (ws.doomed || ws.paused || ws_output_full()) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	n = conn_read(ws.c, buf, len);
	if (n == -1) {
		if (errno == EAGAIN || errno == EINTR)
			wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		else
			wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
		return -1;
	}
	if (n == 0) {
		/* EOF without a close frame: stop reading, keep flushing */
		ws.c->in_eof = 1;
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	return n;
}

/* wslay's frames go to the queue, behind ours: wslay never waits on the socket */
static ssize_t
ws_send_cb(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags, void *ud)
{
	if (buf_append(&ws.out, data, len) == -1) {
		log_warnx("%s: out of memory queueing a frame", ws.c->peer);
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
		return -1;
	}
	return (ssize_t)len;
}

/*
 * Write what the queue holds; -1 when the connection is unusable.  A short
 * write means the socket is full: EPOLLOUT says when to go on.
 */
static int
ws_write_out(void)
{
	size_t	avail;
	ssize_t	n = -1;

	while ((avail = buf_avail(&ws.out)) > 0) {
		if (!ws.not_socket) {
			n = send(ws.c->out_fd, buf_head(&ws.out), avail, MSG_NOSIGNAL);
			if (n == -1 && errno == ENOTSOCK)
				ws.not_socket = 1;
		}
		if (ws.not_socket)
			n = write(ws.c->out_fd, buf_head(&ws.out), avail);
		if (n == -1) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			if (errno != EPIPE && errno != ECONNRESET)
				log_warn("%s: send", ws.c->peer);
			return -1;
		}
		buf_consume(&ws.out, (size_t)n);
		if ((size_t)n < avail)
			break;
	}
	if (buf_avail(&ws.out) == 0 && ws.out.cap > WS_OUT_KEEP)
		buf_free(&ws.out);
	else
		buf_compact(&ws.out);
	return 0;
}

static int
ws_genmask_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, void *ud)
{
	return getrandom(buf, len, 0) == (ssize_t)len ? 0 : -1;
}

static void
ws_on_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *a, void *ud)
{
	if (a->opcode != WSLAY_TEXT_FRAME && a->opcode != WSLAY_BINARY_FRAME)
		return;
	if (ws.detached)
		return;
	if (rpc_input((const char *)a->msg, a->msg_length) == 1)
		ws.paused = 1;
}

static void
ws_detach(void)
{
	if (!ws.detached) {
		ws.detached = 1;
		rpc_detach();
	}
	/* nobody resumes us now; what still comes is read only to see the peer's close */
	ws.paused = 0;
}

static void
ws_finish(void)
{
	if (ws.c == NULL)
		return;
	ev_timer_stop(&ws.ping);
	ev_timer_stop(&ws.linger);
	ev_timer_stop(&ws.doom);
	ws_detach();
	wslay_event_context_free(ws.ctx);
	buf_free(&ws.out);
	conn_close(ws.c);
	ws.c = NULL;
}

/*
 * After our close, once wslay stops reading (a protocol error), whatever
 * the peer still sends is read and dropped until its EOF: left unread,
 * bytes buffered in c->pre would have conn_want() call us again at once,
 * for ever.
 */
static void
ws_discard_input(struct conn *c)
{
	uint8_t	sink[4096];
	ssize_t	n;

	while ((n = conn_read(c, sink, sizeof(sink))) > 0)
		;
	if (n == 0 || (errno != EAGAIN && errno != EINTR))
		c->in_eof = 1;
}

static void
ws_on_read(struct conn *c)
{
	if (ws.doomed)
		return;
	if (wslay_event_get_close_sent(ws.ctx) && !wslay_event_want_read(ws.ctx)) {
		ws_discard_input(c);
		ws_update();
		return;
	}
	if (wslay_event_recv(ws.ctx) != 0) {
		ws_finish();
		return;
	}
	ws_update();
}

static void
ws_on_write(struct conn *c)
{
	if (ws.doomed)
		return;
	/* wslay's frames queued since the last write join the queue first */
	if (wslay_event_send(ws.ctx) != 0 || ws_write_out() == -1) {
		ws_finish();
		return;
	}
	if (ws.was_congested && ws_queued() < RPC_LOW_WATER) {
		ws.was_congested = 0;
		rpc_output_drained();
	}
	ws_update();
}

static void
ws_linger_done(struct ev_timer *t, void *arg)
{
	ws_finish();
}

static void
ws_update(void)
{
	int	rd, wr;

	if (ws.c == NULL || ws.doomed)
		return;
	rd = wslay_event_want_read(ws.ctx) && !ws.c->in_eof;
	wr = wslay_event_want_write(ws.ctx) || buf_avail(&ws.out) > 0;
	if (ws.c->in_eof || (!rd && wslay_event_get_close_received(ws.ctx)))
		ws_detach();
	if (!wr && (ws.c->in_eof || wslay_event_get_close_received(ws.ctx))) {
		ws_finish();
		return;
	}
	if (!wr && wslay_event_get_close_sent(ws.ctx)) {
		/* our close is out: let the peer see it before the socket goes */
		conn_shutdown_write(ws.c);
		if (!ev_timer_armed(&ws.linger))
			ev_timer_start(&ws.linger, WS_LINGER_MS);
		ws_detach();
		rd = !ws.c->in_eof;
	}
	if (!rd && !wr) {
		ws_finish();
		return;
	}
	/* pongs grow the queue too: the dispatcher hears when it drains */
	if (ws_queued() > RPC_HIGH_WATER)
		ws.was_congested = 1;
	conn_want(ws.c, rd && !ws.paused && !ws_output_full(), wr);
}

static void
ws_ping(struct ev_timer *t, void *arg)
{
	struct wslay_event_msg	msg = { WSLAY_PING, NULL, 0 };

	if (ws.c == NULL)
		return;
	wslay_event_queue_msg(ws.ctx, &msg);
	ws_update();
	ev_timer_start(&ws.ping, ping_ms);
}

static int
ws_takeover_fd(void *ctx)
{
	/* a socket only: a pair of pipes cannot be handed to another instance */
	if (ws.c == NULL || ws.c->in_fd != ws.c->out_fd || ws.c->in_eof)
		return -1;
	return ws.c->in_fd;
}

static void
ws_doom_run(struct ev_timer *t, void *arg)
{
	ws_finish();
}

static void
ws_doom(void)
{
	ws_detach();
	if (ws.c == NULL || ws.doomed)
		return;
	ws.doomed = 1;
	conn_want(ws.c, 0, 0);
	ev_timer_start(&ws.doom, 0);
}

static void
ws_abandon(void *ctx)
{
	/* no close frame: the connection lives on in the instance that took it */
	ws_doom();
}

static size_t
ws_head_len(size_t n)
{
	return n < 126 ? 2 : n <= 0xffff ? 4 : 10;
}

/*
 * Room for a text frame of at most n bytes (and the encoder's NUL) at the
 * queue's end, its payload written in place; the head goes in front of it
 * at ws_commit().  NULL once our close is out or the peer's came: wslay
 * refused messages then too.
 */
static char *
ws_reserve(void *ctx, size_t n)
{
	if (ws.c == NULL || ws.detached || wslay_event_get_close_sent(ws.ctx) ||
	    wslay_event_get_close_received(ws.ctx) || n > SIZE_MAX - WS_HEAD_MAX - 1 ||
	    buf_reserve(&ws.out, WS_HEAD_MAX + n + 1) == -1)
		return NULL;
	ws.res_head = ws_head_len(n);
	return (char *)ws.out.data + ws.out.len + ws.res_head;
}

static int
ws_commit(void *ctx, size_t n)
{
	uint8_t	*h;
	size_t	 hl = ws_head_len(n), i;

	if (ws.c == NULL)
		return -1;
	h = ws.out.data + ws.out.len;
	/* shorter than reserved, past a length boundary: the head is smaller (RFC 6455 5.2) */
	if (hl != ws.res_head)
		memmove(h + hl, h + ws.res_head, n);
	h[0] = 0x80 | WSLAY_TEXT_FRAME;		/* FIN, one frame a message */
	if (hl == 2)
		h[1] = (uint8_t)n;
	else if (hl == 4) {
		h[1] = 126;
		h[2] = (uint8_t)(n >> 8);
		h[3] = (uint8_t)n;
	} else {
		h[1] = 127;
		for (i = 0; i < 8; i++)
			h[2 + i] = (uint8_t)((uint64_t)n >> (56 - 8 * i));
	}
	ws.out.len += hl + n;
	if (ws_queued() > RPC_HIGH_WATER)
		ws.was_congested = 1;
	ws_update();
	return 0;
}

static int
ws_send(void *ctx, const char *data, size_t len)
{
	char	*p;

	if ((p = ws_reserve(ctx, len)) == NULL)
		return -1;
	memcpy(p, data, len);
	return ws_commit(ctx, len);
}

static size_t
ws_pending(void *ctx)
{
	return ws.c == NULL ? 0 : ws_queued();
}

/* Write what is queued now: 0 once all of it went. */
static int
ws_flush(void *ctx)
{
	if (ws.c == NULL || ws.doomed || wslay_event_send(ws.ctx) != 0 || ws_write_out() == -1)
		return -1;
	return buf_avail(&ws.out) == 0 && !wslay_event_want_write(ws.ctx) ? 0 : -1;
}

static void
ws_resume(void *ctx)
{
	ws.paused = 0;
	ws_update();
}

static void
ws_close(void *ctx)
{
	/* the reference drops the connection on a protocol violation */
	ws_doom();
}

void
ws_init(size_t max, unsigned ping)
{
	max_message = max;
	ping_ms = ping;
}

int
ws_start(struct conn *c)
{
	return ws_start_after(c, NULL, 0);
}

int
ws_start_after(struct conn *c, const char *head, size_t len)
{
	struct wslay_event_callbacks cb = {
		ws_recv_cb, ws_send_cb, ws_genmask_cb, NULL, NULL, NULL, ws_on_msg,
	};

	memset(&ws, 0, sizeof(ws));
	ws.c = c;
	if (wslay_event_context_server_init(&ws.ctx, &cb, NULL) != 0) {
		log_warnx("%s: wslay context: out of memory", c->peer);
		return -1;
	}
	wslay_event_config_set_max_recv_msg_length(ws.ctx, max_message);
	if (buf_append(&ws.out, head, len) == -1) {
		log_warnx("%s: out of memory", c->peer);
		wslay_event_context_free(ws.ctx);
		return -1;
	}
	ws.t.send = ws_send;
	ws.t.reserve = ws_reserve;
	ws.t.commit = ws_commit;
	ws.t.pending = ws_pending;
	ws.t.resume_input = ws_resume;
	ws.t.close = ws_close;
	ws.t.takeover_fd = ws_takeover_fd;
	ws.t.flush = ws_flush;
	ws.t.abandon = ws_abandon;
	snprintf(ws.t.name, sizeof(ws.t.name), "exec-server websocket %s", c->peer);
	ws.t.framing = "websocket ";
	ev_timer_init(&ws.ping, ws_ping, NULL);
	ev_timer_init(&ws.linger, ws_linger_done, NULL);
	ev_timer_init(&ws.doom, ws_doom_run, NULL);
	if (ping_ms > 0)
		ev_timer_start(&ws.ping, ping_ms);
	conn_set_handlers(c, ws_on_read, ws_on_write, NULL);
	rpc_attach(&ws.t);
	/*
	 * Frames that came with the request (an initialize, typically) are
	 * answered in this round, so the 101 and the answer leave together;
	 * wslay is not running here, nothing is reentered.
	 */
	if (buf_avail(&c->pre) > 0)
		ws_on_read(c);
	else
		ws_update();
	return 0;
}
