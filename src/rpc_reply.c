/* Answers, errors and notifications: what the dispatcher sends. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "buf.h"
#include "log.h"
#include "errno_text.h"
#include "rpc.h"
#include "rpc_int.h"

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
	json_t	*err;

	err = json_pack("{s:{s:i,s:s},s:O}", "error", "code", code, "message", msg,
	    "id", id);
	if (err == NULL) {
		log_warnx("cannot build an error response");
		return;
	}
	rpc_send(err);
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

void
rpc_reply_json(struct rpc_req *req, char *result, size_t len)
{
	static const char	 head[] = "{\"id\":", mid[] = ",\"result\":";
	struct rpc_transport	*t = rpc_transport();
	char			*id, *msg;
	size_t			 idlen, n;

	if (rpc_req_alive(req) && (id = jx_dump(req->id, &idlen)) != NULL) {
		n = sizeof(head) - 1 + idlen + sizeof(mid) - 1 + len + 1;
		if ((msg = malloc(n)) != NULL) {
			memcpy(msg, head, sizeof(head) - 1);
			memcpy(msg + sizeof(head) - 1, id, idlen);
			memcpy(msg + sizeof(head) - 1 + idlen, mid, sizeof(mid) - 1);
			/* the result is freed before the copy is sent: one large buffer less */
			memcpy(msg + n - len - 1, result, len);
			msg[n - 1] = '}';
			free(result);
			result = NULL;
			if (t->send(t->ctx, msg, n) == -1)
				log_debug("send on a closing connection dropped");
			free(msg);
		} else
			log_warnx("out of memory answering %s", req->m->name);
		free(id);
	}
	free(result);
	rpc_req_done(req);
}

void
rpc_fail(struct rpc_req *req, int code, const char *fmt, ...)
{
	char	 msg[4096];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (rpc_req_alive(req))
		rpc_send_error(req->id, code, msg);
	rpc_req_done(req);
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
	    (out = malloc(hlen + B64_ENCLEN(len) + 1)) == NULL) {
		log_warnx("cannot build notification %s", method);
		free(head);
		return;
	}
	memcpy(out, head, hlen - 3);
	n = hlen - 3 + b64_encode_to(out + hlen - 3, data, len);
	memcpy(out + n, "\"}}", 3);
	n += 3;
	free(head);
	if (t->send(t->ctx, out, n) == -1)
		log_debug("send on a closing connection dropped");
	free(out);
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
