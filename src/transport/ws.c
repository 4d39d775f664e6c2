#include "config.h"

#include <sys/random.h>
#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <wslay/wslay.h>

#include "log.h"
#include "execd.h"
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

static struct {
	struct conn		*c;
	wslay_event_context_ptr	 ctx;
	struct rpc_transport	 t;
	struct ev_timer		 ping, linger;
	int			 paused;
	int			 was_congested;
	int			 not_socket;	/* a pipe (tests): write(2), no MSG_MORE */
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

static void	ws_update(void);

/* Is the outgoing queue too long to read more (with hysteresis)? */
static int
ws_output_full(void)
{
	size_t	bytes = wslay_event_get_queued_msg_length(ws.ctx);
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

static ssize_t
ws_send_cb(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags, void *ud)
{
	ssize_t	n;

	/* a frame's head waits for its payload: one segment, one wakeup for the peer */
	if (!ws.not_socket) {
		n = send(ws.c->out_fd, data, len,
		    MSG_NOSIGNAL | ((flags & WSLAY_MSG_MORE) ? MSG_MORE : 0));
		if (n == -1 && errno == ENOTSOCK)
			ws.not_socket = 1;
	}
	if (ws.not_socket)
		n = write(ws.c->out_fd, data, len);
	if (n == -1) {
		if (errno == EAGAIN || errno == EINTR)
			wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		else
			wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
		return -1;
	}
	return n;
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
	if (wslay_event_send(ws.ctx) != 0) {
		ws_finish();
		return;
	}
	if (ws.was_congested && wslay_event_get_queued_msg_length(ws.ctx) < RPC_LOW_WATER) {
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
	wr = wslay_event_want_write(ws.ctx);
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
	if (wslay_event_get_queued_msg_length(ws.ctx) > RPC_HIGH_WATER)
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
	ev_timer_start(&ws.ping, conf.ws_ping_ms);
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

static int
ws_send(void *ctx, const char *data, size_t len)
{
	struct wslay_event_msg	msg = { WSLAY_TEXT_FRAME, (const uint8_t *)data, len };

	if (ws.c == NULL || ws.detached)
		return -1;
	if (wslay_event_queue_msg(ws.ctx, &msg) != 0)
		return -1;
	if (wslay_event_get_queued_msg_length(ws.ctx) > RPC_HIGH_WATER)
		ws.was_congested = 1;
	ws_update();
	return 0;
}

static size_t
ws_pending(void *ctx)
{
	return ws.c == NULL ? 0 : wslay_event_get_queued_msg_length(ws.ctx);
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

int
ws_start(struct conn *c)
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
	wslay_event_config_set_max_recv_msg_length(ws.ctx, conf.max_message);
	ws.t.send = ws_send;
	ws.t.pending = ws_pending;
	ws.t.resume_input = ws_resume;
	ws.t.close = ws_close;
	ws.t.takeover_fd = ws_takeover_fd;
	ws.t.abandon = ws_abandon;
	snprintf(ws.t.name, sizeof(ws.t.name), "exec-server websocket %s", c->peer);
	ws.t.framing = "websocket ";
	ev_timer_init(&ws.ping, ws_ping, NULL);
	ev_timer_init(&ws.linger, ws_linger_done, NULL);
	ev_timer_init(&ws.doom, ws_doom_run, NULL);
	if (conf.ws_ping_ms > 0)
		ev_timer_start(&ws.ping, conf.ws_ping_ms);
	conn_set_handlers(c, ws_on_read, ws_on_write, NULL);
	rpc_attach(&ws.t);
	ws_update();
	return 0;
}
