/*
 * The connection's output side: which transport is attached, and what is
 * sent on it (messages, errors, notifications).  The dispatcher (rpc.c)
 * sits on top of it.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "buf.h"
#include "log.h"
#include "rpc/rpc.h"
#include "rpc/rpc_int.h"

static struct {
	struct rpc_transport	*t;
	unsigned		 gen;		/* bumped on every attach/detach */
} tx;

void
rpc_out_set(struct rpc_transport *t)
{
	tx.t = t;
	tx.gen++;
}

unsigned
rpc_out_gen(void)
{
	return tx.gen;
}

struct rpc_transport *
rpc_transport(void)
{
	return tx.t;
}

int
rpc_attached(void)
{
	return tx.t != NULL;
}

int
rpc_congested(void)
{
	return tx.t != NULL && tx.t->pending(tx.t->ctx) > RPC_HIGH_WATER;
}

void
rpc_send(json_t *msg)
{
	struct rpc_transport	*t = rpc_transport();
	char			*s;
	size_t			 len;

	if (t == NULL) {
		json_decref(msg);
		return;
	}
	s = jx_dump(msg, &len);
	json_decref(msg);
	if (s == NULL) {
		log_warnx("cannot serialise a message");
		return;
	}
	if (t->send(t->ctx, s, len) == -1)
		log_debug("send on a closing connection dropped");
	free(s);
}

void
rpc_send_error(json_t *id, int code, const char *msg)
{
	rpc_send_error_data(id, code, msg, NULL);
}

void
rpc_send_error_data(json_t *id, int code, const char *msg, json_t *data)
{
	json_t	*err;
	char	*fixed;

	/* a message cut to fit a jx_err goes whole, as the reference sends it */
	msg = jx_err_whole(msg);
	/* a client's identifier in msg may hold a NUL, kept as jx_id() keeps it */
	err = json_pack("{s:{s:i,s:o},s:O}", "error", "code", code, "message", jx_id_json(msg),
	    "id", id);
	if (err == NULL && (fixed = jx_utf8_lossy(msg)) != NULL) {
		/* never a request left unanswered for its message's bytes */
		err = json_pack("{s:{s:i,s:o},s:O}", "error", "code", code, "message",
		    jx_id_json(fixed), "id", id);
		free(fixed);
	}
	if (err == NULL) {
		log_warnx("cannot build an error response");
		return;
	}
	/* without its data the error still goes: the code and message say what failed */
	if (data != NULL && json_object_set(json_object_get(err, "error"), "data", data) == -1)
		log_warnx("cannot attach an error's data");
	rpc_send(err);
}

void
rpc_notify(const char *method, json_t *params)
{
	json_t	*msg;

	if (!rpc_attached()) {
		json_decref(params);
		return;
	}
	msg = json_pack("{s:s,s:o}", "method", method, "params", params);
	if (msg == NULL) {
		log_warnx("cannot build notification %s", method);
		return;
	}
	rpc_send(msg);
}

/*
 * Room for a message of at most n bytes (one more for the encoder's NUL):
 * in the transport's queue when it offers that, else a buffer of its own.
 */
static char *
out_reserve(struct rpc_transport *t, size_t n)
{
	return t->reserve != NULL ? t->reserve(t->ctx, n) : malloc(n + 1);
}

/* Queue the n bytes written at p, which out_reserve() gave. */
static int
out_commit(struct rpc_transport *t, char *p, size_t n)
{
	int	r;

	if (t->reserve != NULL)
		return t->commit(t->ctx, n);
	r = t->send(t->ctx, p, n);
	free(p);
	return r;
}

/*
 * The hot path of process output: jansson would check and escape every byte
 * of a large base64 string, which cannot need escaping.  jansson writes the
 * message with the field empty and last; the base64 text goes between its
 * quotes.
 */
void
rpc_notify_b64(const char *method, json_t *params, const char *key, const void *data,
    size_t len)
{
	struct rpc_transport	*t = rpc_transport();
	json_t			*msg;
	char			*head, *out;
	size_t			 hlen, n;

	if (t == NULL || json_object_set_new(params, key, json_string("")) == -1) {
		json_decref(params);
		return;
	}
	msg = json_pack("{s:s,s:o}", "method", method, "params", params);
	head = msg != NULL ? jx_dump(msg, &hlen) : NULL;
	json_decref(msg);
	/* ...,"key":""}} */
	if (head == NULL || hlen < 4 || strcmp(head + hlen - 4, "\"\"}}") != 0 ||
	    (out = out_reserve(t, hlen + B64_ENCLEN(len))) == NULL) {
		log_warnx("cannot build notification %s", method);
		free(head);
		return;
	}
	memcpy(out, head, hlen - 3);
	n = hlen - 3 + b64_encode_to(out + hlen - 3, data, len);
	memcpy(out + n, "\"}}", 3);
	n += 3;
	free(head);
	if (out_commit(t, out, n) == -1)
		log_debug("send on a closing connection dropped");
}

void
rpc_notify_raw_b64(const char *head, size_t hlen, const void *data, size_t len,
    const char *tail, size_t tlen)
{
	struct rpc_transport	*t = rpc_transport();
	char			*out;
	size_t			 n;

	if (t == NULL)
		return;
	if ((out = out_reserve(t, hlen + B64_ENCLEN(len) + tlen)) == NULL) {
		log_warnx("cannot build a notification of %zu bytes", len);
		return;
	}
	memcpy(out, head, hlen);
	n = hlen + b64_encode_to(out + hlen, data, len);
	memcpy(out + n, tail, tlen);
	n += tlen;
	if (out_commit(t, out, n) == -1)
		log_debug("send on a closing connection dropped");
}

/* rpc_send_error() for a text that may hold NUL bytes (a method name, a duplicate key) */
void
rpc_send_error_text(json_t *id, int code, const char *head, const void *text, size_t len,
    const char *tail)
{
	struct buf	 b = { 0 };
	json_t		*msg = NULL, *err = NULL;

	if (buf_append(&b, head, strlen(head)) == 0 && buf_append(&b, text, len) == 0 &&
	    buf_append(&b, tail, strlen(tail)) == 0)
		msg = json_stringn(b.len > 0 ? (const char *)b.data : "", b.len);
	if (msg != NULL)
		err = json_pack("{s:{s:i,s:o},s:O}", "error", "code", code, "message", msg,
		    "id", id);
	buf_free(&b);
	if (err == NULL) {
		log_warnx("cannot build an error response");
		return;
	}
	rpc_send(err);
}
