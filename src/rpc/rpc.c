/*
 * JSON-RPC dispatch for one connection: registered method tables, the
 * lifecycle gate, request ordering and concurrency, and the answer every
 * request gets.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "evloop.h"
#include "log.h"
#include "rpc/errno_text.h"
#include "rpc/rpc.h"
#include "rpc/rpc_int.h"
#include "rpc/rpc_parse.h"

/*
 * Requests read ahead of their answers: past either bound input pauses, so
 * that a client that pipelines without reading gets back-pressure, not
 * execd's memory.
 */
#define RPC_QUEUE_MAX	256	/* parsed requests waiting */
#define RPC_QUEUE_BYTES	RPC_HIGH_WATER	/* their messages' size */
#define RPC_HOOKS_MAX	8
#define RPC_TABLES_MAX	8

struct rpc_req {
	json_t		*id;
	const struct rpc_method *m;
	unsigned	 gen;		/* connection generation it came on */
	struct rpc_req	*next;		/* queue link */
	json_t		*params;
	size_t		 size;		/* of the message it came in */
	json_t		*blob;		/* "" in params for the text below, or NULL */
	const char	*blob_text;	/* in the message, or blob_copy */
	size_t		 blob_len;
	char		*blob_copy;	/* the text, for a request run after its message went */
};

static struct {
	struct rpc_req		*qhead, *qtail;
	size_t			 qlen;
	size_t			 qbytes;	/* sum of the waiting requests' size */
	unsigned		 inflight;
	int			 paused;	/* we told the transport to stop */
	int			 dispatching;
	struct ev_timer		 kick;
	void			(*drain[RPC_HOOKS_MAX])(void);
	size_t			 ndrain;
	void			(*detach[RPC_HOOKS_MAX])(void);
	size_t			 ndetach;
	const struct rpc_method	*tables[RPC_TABLES_MAX];
	size_t			 ntables;
	const struct rpc_gate	*gate;
	unsigned		 concurrency;	/* requests in flight at most */
} rpc;

static void	rpc_dispatch(void);
static void	rpc_not_found(struct rpc_req *, json_t *);
static void	rpc_req_done(struct rpc_req *);

static const struct rpc_method rpc_unknown = { "", NULL, rpc_not_found };

static void
rpc_not_found(struct rpc_req *req, json_t *method)
{
	/* the whole name, however long */
	if (rpc_req_alive(req))
		rpc_send_error_text(req->id, RPC_METHOD_NOT_FOUND,
		    "exec-server stub does not implement `", json_string_value(method),
		    json_string_length(method), "` yet");
	rpc_req_done(req);
}

static void
rpc_kick(struct ev_timer *t, void *arg)
{
	rpc_dispatch();
}

void
rpc_init(unsigned concurrency)
{
	rpc.concurrency = concurrency;
	ev_timer_init(&rpc.kick, rpc_kick, NULL);
}

void
rpc_register(const struct rpc_method *table)
{
	if (rpc.ntables == RPC_TABLES_MAX)
		fatalx("too many method tables");
	rpc.tables[rpc.ntables++] = table;
}

void
rpc_set_gate(const struct rpc_gate *gate)
{
	rpc.gate = gate;
}

void
rpc_attach(struct rpc_transport *t)
{
	rpc_out_set(t);
	rpc.inflight = 0;
	if (rpc.gate != NULL)
		rpc.gate->connection_reset();
}

void
rpc_on_drain(void (*cb)(void))
{
	if (rpc.ndrain < RPC_HOOKS_MAX)
		rpc.drain[rpc.ndrain++] = cb;
}

void
rpc_on_detach(void (*cb)(void))
{
	if (rpc.ndetach < RPC_HOOKS_MAX)
		rpc.detach[rpc.ndetach++] = cb;
}

static void
rpc_req_free(struct rpc_req *req)
{
	json_decref(req->id);
	json_decref(req->params);
	free(req->blob_copy);
	free(req);
}

void
rpc_output_drained(void)
{
	size_t	i;

	for (i = 0; i < rpc.ndrain; i++)
		rpc.drain[i]();
	/* requests held back while the answers waited: run them from the loop */
	if (rpc.qlen > 0 || rpc.paused)
		if (!ev_timer_armed(&rpc.kick))
			ev_timer_start(&rpc.kick, 0);
}

/* Read no further ahead: too many requests wait, or their answers do. */
static int
rpc_input_full(void)
{
	return rpc.qlen >= RPC_QUEUE_MAX || rpc.qbytes >= RPC_QUEUE_BYTES || rpc_congested();
}

/* Input paused may go on: the queues are down to their low-water marks. */
static int
rpc_input_drained(void)
{
	/* the transport tells when its output drained below its low-water mark */
	return rpc.qlen < RPC_QUEUE_MAX / 2 && rpc.qbytes < RPC_LOW_WATER && !rpc_congested();
}

/* A request is finished: free it and let the next one in. */
static void
rpc_req_done(struct rpc_req *req)
{
	/* a request of a connection that is gone no longer holds a slot */
	if (req->gen == rpc_out_gen() && rpc.inflight > 0)
		rpc.inflight--;
	rpc_req_free(req);
	if (!rpc.dispatching && rpc.qlen > 0 && !ev_timer_armed(&rpc.kick))
		ev_timer_start(&rpc.kick, 0);
}

json_t *
rpc_req_id(const struct rpc_req *req)
{
	return req->id;
}

const char *
rpc_req_string(const struct rpc_req *req, json_t *v, size_t *len)
{
	if (v != NULL && v == req->blob) {
		*len = req->blob_len;
		return req->blob_text;
	}
	*len = json_string_length(v);
	return json_string_value(v);
}

/* A request still queued when its message goes keeps a copy of its blob. */
static void
rpc_req_keep_blob(struct rpc_req *req)
{
	if (req->blob == NULL || req->blob_copy != NULL)
		return;
	if ((req->blob_copy = malloc(req->blob_len > 0 ? req->blob_len : 1)) == NULL)
		log_warnx("out of memory keeping %zu bytes of %s", req->blob_len, req->m->name);
	else
		memcpy(req->blob_copy, req->blob_text, req->blob_len);
	req->blob_text = req->blob_copy;
}

int
rpc_req_alive(const struct rpc_req *req)
{
	return rpc_attached() && req->gen == rpc_out_gen();
}

void
rpc_reply(struct rpc_req *req, json_t *result)
{
	json_t	*msg;

	if (rpc_req_alive(req)) {
		msg = json_object();
		if (msg == NULL || json_object_set(msg, "id", req->id) == -1 ||
		    json_object_set_new(msg, "result", result) == -1) {
			log_warnx("cannot build a response to %s", req->m->name);
			json_decref(msg);
		} else
			rpc_send(msg);
	} else
		json_decref(result);
	rpc_req_done(req);
}

/* The answer to req around the result at buf + room, in place if the envelope fits. */
static void
rpc_send_around(struct rpc_req *req, char *buf, size_t room, size_t len)
{
	static const char	 head[] = "{\"id\":", mid[] = ",\"result\":";
	struct rpc_transport	*t = rpc_transport();
	char			*id, *msg = NULL;
	size_t			 idlen, hl;

	if ((id = jx_dump(req->id, &idlen)) == NULL) {
		log_warnx("out of memory answering %s", req->m->name);
		return;
	}
	hl = sizeof(head) - 1 + idlen + sizeof(mid) - 1;
	if (hl > room && (msg = malloc(hl + len + 1)) == NULL) {
		log_warnx("out of memory answering %s", req->m->name);
		free(id);
		return;
	}
	if (msg != NULL)
		memcpy(msg + hl, buf + room, len);
	else
		msg = buf + room - hl;
	memcpy(msg, head, sizeof(head) - 1);
	memcpy(msg + sizeof(head) - 1, id, idlen);
	memcpy(msg + sizeof(head) - 1 + idlen, mid, sizeof(mid) - 1);
	msg[hl + len] = '}';
	if (t->send(t->ctx, msg, hl + len + 1) == -1)
		log_debug("send on a closing connection dropped");
	if (msg != buf + room - hl)
		free(msg);
	free(id);
}

void
rpc_reply_json(struct rpc_req *req, char *buf, size_t room, size_t len)
{
	if (rpc_req_alive(req))
		rpc_send_around(req, buf, room, len);
	free(buf);
	rpc_req_done(req);
}

static void	rpc_fail_v(struct rpc_req *, int, json_t *, const char *, va_list)
		    __attribute__((format(printf, 4, 0)));

static void
rpc_fail_v(struct rpc_req *req, int code, json_t *data, const char *fmt, va_list ap)
{
	char	*msg;

	if (vasprintf(&msg, fmt, ap) == -1) {
		log_warnx("out of memory for an error message");
		msg = NULL;
	}
	if (rpc_req_alive(req))
		rpc_send_error_data(req->id, code, msg != NULL ? msg : "out of memory", data);
	free(msg);
	rpc_req_done(req);
}

void
rpc_fail(struct rpc_req *req, int code, const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	rpc_fail_v(req, code, NULL, fmt, ap);
	va_end(ap);
}

void
rpc_fail_kind(struct rpc_req *req, int code, const char *kind, const char *fmt, ...)
{
	json_t	*data;
	va_list	 ap;

	/* NULL when out of memory: the error goes without its data */
	data = kind != NULL ? json_pack("{s:s}", "kind", kind) : NULL;
	va_start(ap, fmt);
	rpc_fail_v(req, code, data, fmt, ap);
	va_end(ap);
	json_decref(data);
}

void
rpc_fail_params(struct rpc_req *req, const struct jx_err *e)
{
	rpc_fail(req, RPC_INVALID_PARAMS, "%s", e->msg);
}

int
rpc_errno_code(int errnum)
{
	switch (errnum) {
	case ENOENT:
		return RPC_NOT_FOUND;
	case EACCES:
	case EPERM:
	case EINVAL:
		return RPC_INVALID_REQUEST;
	default:
		return RPC_INTERNAL_ERROR;
	}
}

void
rpc_fail_errno(struct rpc_req *req, int errnum)
{
	char	text[256];

	rpc_fail(req, rpc_errno_code(errnum), "%s", errno_text(errnum, text, sizeof(text)));
}

static const struct rpc_method *
rpc_lookup(const char *name)
{
	const struct rpc_method	*m;
	size_t			 i;

	for (i = 0; i < rpc.ntables; i++)
		for (m = rpc.tables[i]; m->name != NULL; m++)
			if (strcmp(m->name, name) == 0)
				return m;
	return NULL;
}

int
rpc_admit(struct rpc_req *req)
{
	const char	*gate;

	if (rpc.gate == NULL || (gate = rpc.gate->gate(req->m)) == NULL)
		return 1;
	rpc_fail(req, RPC_INVALID_REQUEST, "%s", gate);
	return 0;
}

static void
rpc_run(struct rpc_req *req)
{
	rpc.inflight++;
	if (!(req->m->flags & RPC_SELF_GATED) && !rpc_admit(req))
		return;
	req->m->fn(req, req->params);
}

static void
rpc_dispatch(void)
{
	struct rpc_transport	*t;
	struct rpc_req		*req;

	if (rpc.dispatching)
		return;
	rpc.dispatching = 1;
	/*
	 * While answers wait on a congested transport no new request runs:
	 * its answer would only grow the queue.  rpc_output_drained() goes on.
	 */
	while (rpc.qhead != NULL && rpc.inflight < rpc.concurrency && !rpc_congested()) {
		req = rpc.qhead;
		rpc.qhead = req->next;
		if (rpc.qhead == NULL)
			rpc.qtail = NULL;
		rpc.qlen--;
		rpc.qbytes -= req->size;
		rpc_run(req);
	}
	rpc.dispatching = 0;
	if (rpc.paused && rpc_input_drained() && (t = rpc_transport()) != NULL) {
		rpc.paused = 0;
		t->resume_input(t->ctx);
	}
}

/* For rpc_parse(): whether a request to this method takes this params member unparsed. */
static int
rpc_wants_blob(const char *method, size_t mlen, const char *key, size_t klen)
{
	const struct rpc_method	*m;
	size_t			 i;

	for (i = 0; i < rpc.ntables; i++)
		for (m = rpc.tables[i]; m->name != NULL; m++)
			if (m->blob != NULL && strlen(m->name) == mlen &&
			    memcmp(m->name, method, mlen) == 0)
				return strlen(m->blob) == klen && memcmp(m->blob, key, klen) == 0;
	return 0;
}

static struct rpc_req *
rpc_enqueue(const struct rpc_msg *msg, size_t size)
{
	struct rpc_req	*req;

	if ((req = calloc(1, sizeof(*req))) == NULL) {
		rpc_send_error(msg->id, RPC_INTERNAL_ERROR, "out of memory");
		return NULL;
	}
	req->id = json_incref(msg->id);
	req->gen = rpc_out_gen();
	req->params = json_incref(msg->params);
	req->size = size;
	req->blob = msg->blob;
	req->blob_text = msg->blob_text;
	req->blob_len = msg->blob_len;
	req->m = rpc_lookup(msg->method);
	if (req->m == NULL) {
		/* answered in turn, like any other request */
		json_decref(req->params);
		req->blob = NULL;
		if ((req->params = json_string(msg->method)) == NULL) {
			rpc_req_free(req);
			return NULL;
		}
		req->m = &rpc_unknown;
	}
	if (rpc.qtail != NULL)
		rpc.qtail->next = req;
	else
		rpc.qhead = req;
	rpc.qtail = req;
	rpc.qlen++;
	rpc.qbytes += size;
	return req;
}

int
rpc_input(const char *data, size_t len)
{
	struct rpc_transport	*t = rpc_transport();
	struct rpc_msg		 m;
	struct rpc_req		*req;
	enum rpc_msg_kind	 kind;
	json_t			*minus1;
	char			 head[256];
	int			 stdio;

	if (t == NULL)
		return 1;
	stdio = strncmp(t->name, "exec-server stdio", 17) == 0;
	kind = rpc_parse(data, len, &m, rpc_wants_blob);
	/* the reference's stdio reader skips blank lines and gives up on non-UTF-8 */
	if (stdio && (kind == RPC_MSG_BLANK || kind == RPC_MSG_NOT_UTF8)) {
		if (kind == RPC_MSG_NOT_UTF8) {
			log_info("invalid UTF-8 on stdin: closing");
			t->close(t->ctx);
		}
		rpc_msg_clear(&m);
		return 0;
	}
	switch (kind) {
	case RPC_MSG_BLANK:
	case RPC_MSG_NOT_UTF8:
	case RPC_MSG_MALFORMED:
		snprintf(head, sizeof(head), "failed to parse %sJSON-RPC message from %s: ",
		    t->framing, t->name);
		if ((minus1 = json_integer(-1)) != NULL)
			rpc_send_error_text(minus1, RPC_INVALID_REQUEST, head,
			    buf_head(&m.err), buf_avail(&m.err), "");
		json_decref(minus1);
		break;
	case RPC_MSG_REQUEST:
		if (memchr(m.method, '\0', m.method_len) != NULL) {
			/*
			 * No method has a NUL in its name, and the name table
			 * holds C strings: answer here, out of turn.
			 */
			rpc_send_error_text(m.id, RPC_METHOD_NOT_FOUND,
			    "exec-server stub does not implement `", m.method, m.method_len,
			    "` yet");
			break;
		}
		req = rpc_enqueue(&m, len);
		rpc_dispatch();
		/* still queued (nothing else was queued meanwhile): its message goes now */
		if (req != NULL && rpc.qtail == req)
			rpc_req_keep_blob(req);
		break;
	case RPC_MSG_NOTIFICATION:
		if (m.method_len == 11 && memcmp(m.method, "initialized", 11) == 0 &&
		    rpc.gate != NULL && rpc.gate->initialized() == 0)
			break;
		/* as the reference: a protocol violation ends the connection */
		log_info("unexpected notification %.*s: closing", (int)m.method_len, m.method);
		t->close(t->ctx);
		break;
	case RPC_MSG_RESPONSE:
		if (rpc_call_answer(m.id, m.root) == 0)
			break;
		log_info("unexpected response from the client: closing");
		t->close(t->ctx);
		break;
	}
	rpc_msg_clear(&m);
	if (rpc_input_full()) {
		rpc.paused = 1;
		return 1;
	}
	return 0;
}

void
rpc_detach(void)
{
	struct rpc_req	*req;
	size_t		 i;

	if (!rpc_attached())
		return;
	rpc_out_set(NULL);
	rpc.inflight = 0;
	while ((req = rpc.qhead) != NULL) {
		rpc.qhead = req->next;
		rpc_req_free(req);
	}
	rpc.qtail = NULL;
	rpc.qlen = 0;
	rpc.qbytes = 0;
	rpc.paused = 0;
	rpc_call_fail_all();
	for (i = 0; i < rpc.ndetach; i++)
		rpc.detach[i]();
}
