#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "transport/jsonl.h"
#include "rpc/rpc.h"

#define JSONL_READ	(256 * 1024)
/*
 * Output on a pipe (stdio: ssh, a parent process) goes through the
 * kernel's default 64 KiB at a time, one wakeup of the reader per 64 KiB;
 * a stream of 1 MiB bodyDeltas or a 90 MB fs/readFile answer then runs at
 * the pace of those round trips (measured: a 64 MiB streamed body took
 * 0.62 s of which 0.2 was data with a 1 MiB pipe).  While that much is
 * queued, the pipe grows to BULK_PIPE; it goes back to its size when the
 * queue is empty, so an idle instance does not hold the user's pipe
 * allowance (fs.pipe-user-pages-soft), whose exhaustion would give the
 * user's other new pipes a page or two.  Best effort both ways.
 */
#define BULK_QUEUED	(256 * 1024)
#define BULK_PIPE	(1024 * 1024)
#define SHRINK_MIN_MS	20
#define SHRINK_MAX_MS	5000

static struct {
	struct conn		*c;
	struct rpc_transport	 t;
	struct buf		 in, out;
	size_t			 scanned;	/* bytes of in already searched for '\n' */
	int			 paused;
	int			 closing;	/* flush, then close */
	int			 was_congested;
	int			 pipe_size;	/* its size before it grew, 0: not grown */
	int			 no_grow;	/* not a pipe, or refused: not again until drained */
	struct ev_timer		 shrink;	/* ask again while the reader holds the bytes */
	unsigned		 shrink_ms;
	struct ev_timer		 linger;	/* a peer that no longer reads is not waited for */
} jl;

#define JSONL_LINGER_MS	2000

static size_t	max_message;		/* jsonl_init() */

static void	jsonl_update(void);

void
jsonl_init(size_t max)
{
	max_message = max;
}

static void
jsonl_finish(void)
{
	if (jl.c == NULL)
		return;
	ev_timer_stop(&jl.linger);
	ev_timer_stop(&jl.shrink);
	conn_close(jl.c);
	jl.c = NULL;
	buf_free(&jl.in);
	buf_free(&jl.out);
	rpc_detach();
}

/* Hand every whole line to the dispatcher. */
static void
jsonl_lines(void)
{
	uint8_t	*nl, *line;
	size_t	 len;

	/* nothing new since the last look: nothing to split (and no buffer yet at the start) */
	while (!jl.paused && !jl.closing && buf_avail(&jl.in) > jl.scanned) {
		line = buf_head(&jl.in);
		nl = memchr(line + jl.scanned, '\n', buf_avail(&jl.in) - jl.scanned);
		if (nl == NULL) {
			jl.scanned = buf_avail(&jl.in);
			if (jl.scanned > max_message) {
				/* as the reference: an over-long line ends the connection */
				log_warnx("%s: message over %zu bytes: closing", jl.c->peer,
				    max_message);
				jl.closing = 1;
				rpc_detach();
			}
			return;
		}
		len = (size_t)(nl - line);
		jl.scanned = 0;
		if (len > max_message) {
			log_warnx("%s: message over %zu bytes: closing", jl.c->peer, max_message);
			jl.closing = 1;
			rpc_detach();
			return;
		}
		if (len > 0 && line[len - 1] == '\r')
			len--;
		/* whitespace-only lines are skipped, as the reference does */
		if (strspn((char *)line, " \t\r") < len) {
			if (rpc_input((const char *)line, len) == 1)
				jl.paused = 1;
		}
		if (jl.c == NULL)
			return;
		buf_consume(&jl.in, (size_t)(nl - line) + 1);
	}
}

static void
jsonl_on_read(struct conn *c)
{
	ssize_t	n;

	if (buf_reserve(&jl.in, JSONL_READ) == -1) {
		log_warnx("%s: out of memory", c->peer);
		jl.closing = 1;
		rpc_detach();
		jsonl_update();
		return;
	}
	n = conn_read(c, jl.in.data + jl.in.len, JSONL_READ);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		if (n == -1)
			log_warn("%s: read", c->peer);
		c->in_eof = 1;
		jl.closing = 1;
		rpc_detach();
		jsonl_update();
		return;
	}
	jl.in.len += (size_t)n;
	jsonl_lines();
	jsonl_update();
}

/*
 * A write fell short with BULK_QUEUED still queued: 1 if the pipe grew.
 * Not a pipe (F_GETPIPE_SZ fails), already that big, or refused: not
 * asked again before the queue has drained.
 */
static int
grow_pipe(int fd)
{
	int	size;

	if (jl.pipe_size != 0 || jl.no_grow || buf_avail(&jl.out) < BULK_QUEUED)
		return 0;
	if ((size = fcntl(fd, F_GETPIPE_SZ)) == -1 || size >= BULK_PIPE ||
	    fcntl(fd, F_SETPIPE_SZ, BULK_PIPE) == -1) {
		jl.no_grow = 1;
		return 0;
	}
	jl.pipe_size = size;
	return 1;
}

/*
 * The queue is empty: give the pages back.  That fails (EBUSY) while the
 * reader has not yet taken what the pipe holds; then again later, less
 * and less often, until it has or more output comes.
 */
static void
shrink_pipe(void)
{
	if (jl.pipe_size == 0 || jl.c == NULL || buf_avail(&jl.out) > 0)
		return;
	if (fcntl(jl.c->out_fd, F_SETPIPE_SZ, jl.pipe_size) != -1 || errno != EBUSY) {
		jl.pipe_size = 0;
		jl.shrink_ms = 0;
		ev_timer_stop(&jl.shrink);
		return;
	}
	jl.shrink_ms = jl.shrink_ms == 0 ? SHRINK_MIN_MS :
	    jl.shrink_ms * 2 > SHRINK_MAX_MS ? SHRINK_MAX_MS : jl.shrink_ms * 2;
	ev_timer_start(&jl.shrink, jl.shrink_ms);
}

static void
shrink_later(struct ev_timer *t, void *arg)
{
	shrink_pipe();
}

static void
jsonl_on_write(struct conn *c)
{
	ssize_t	n;

	while (buf_avail(&jl.out) > 0) {
		n = write(c->out_fd, buf_head(&jl.out), buf_avail(&jl.out));
		if (n == -1) {
			if (errno == EAGAIN && grow_pipe(c->out_fd))
				continue;
			if (errno == EAGAIN || errno == EINTR)
				break;
			if (errno != EPIPE)
				log_warn("%s: write", c->peer);
			buf_reset(&jl.out);
			jl.closing = 1;
			rpc_detach();
			break;
		}
		buf_consume(&jl.out, (size_t)n);
	}
	if (buf_avail(&jl.out) == 0) {
		jl.no_grow = 0;
		shrink_pipe();
	} else {
		jl.shrink_ms = 0;
		buf_compact(&jl.out);
	}
	if (jl.was_congested && buf_avail(&jl.out) < RPC_LOW_WATER) {
		jl.was_congested = 0;
		rpc_output_drained();
	}
	jsonl_update();
}

static void
jsonl_update(void)
{
	if (jl.c == NULL)
		return;
	if (jl.closing && buf_avail(&jl.out) == 0) {
		jsonl_finish();
		return;
	}
	if (jl.closing && !ev_timer_armed(&jl.linger))
		ev_timer_start(&jl.linger, JSONL_LINGER_MS);
	conn_want(jl.c, !jl.paused && !jl.closing, buf_avail(&jl.out) > 0);
}

/* A line of at most n bytes written in place at the queue's end (jsonl_commit). */
static char *
jsonl_reserve(void *ctx, size_t n)
{
	if (jl.c == NULL || n > SIZE_MAX - 1 || buf_reserve(&jl.out, n + 1) == -1)
		return NULL;
	return (char *)jl.out.data + jl.out.len;
}

static int
jsonl_commit(void *ctx, size_t n)
{
	if (jl.c == NULL)
		return -1;
	jl.out.len += n;
	jl.out.data[jl.out.len++] = '\n';
	if (buf_avail(&jl.out) > RPC_HIGH_WATER)
		jl.was_congested = 1;
	conn_want(jl.c, !jl.paused && !jl.closing, 1);
	return 0;
}

static int
jsonl_send(void *ctx, const char *msg, size_t len)
{
	char	*p;

	if ((p = jsonl_reserve(ctx, len)) == NULL)
		return -1;
	memcpy(p, msg, len);
	return jsonl_commit(ctx, len);
}

static size_t
jsonl_pending(void *ctx)
{
	return buf_avail(&jl.out);
}

static void
jsonl_resume(void *ctx)
{
	jl.paused = 0;
	jsonl_lines();
	jsonl_update();
}

static void
jsonl_close(void *ctx)
{
	jl.closing = 1;
	rpc_detach();
	jsonl_update();
}

static void
jsonl_linger_done(struct ev_timer *t, void *arg)
{
	log_info("%s: output not taken within %d ms of the end: dropped", jl.c->peer,
	    JSONL_LINGER_MS);
	jsonl_finish();
}

int
jsonl_start(struct conn *c)
{
	memset(&jl, 0, sizeof(jl));
	jl.c = c;
	jl.t.ctx = NULL;
	jl.t.send = jsonl_send;
	jl.t.reserve = jsonl_reserve;
	jl.t.commit = jsonl_commit;
	jl.t.pending = jsonl_pending;
	jl.t.resume_input = jsonl_resume;
	jl.t.close = jsonl_close;
	snprintf(jl.t.name, sizeof(jl.t.name), "exec-server stdio");
	jl.t.framing = "";
	/* bytes the sniffer already read are the start of the first line */
	if (buf_avail(&c->pre) > 0 &&
	    buf_append(&jl.in, buf_head(&c->pre), buf_avail(&c->pre)) == -1)
		return -1;
	buf_reset(&c->pre);
	conn_set_handlers(c, jsonl_on_read, jsonl_on_write, NULL);
	ev_timer_init(&jl.linger, jsonl_linger_done, NULL);
	ev_timer_init(&jl.shrink, shrink_later, NULL);
	rpc_attach(&jl.t);
	jsonl_lines();
	jsonl_update();
	return 0;
}
