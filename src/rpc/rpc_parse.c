/*
 * The JSON-RPC envelope, judged as the reference judges it.
 *
 * The reference reads a message with serde_json into a value that refuses
 * duplicate keys and holds numbers of any size, tells the kind of message
 * from the keys present, decodes the envelope fields into its structs
 * (JSONRPCRequest, ...), and only then looks for trailing characters.
 * jansson builds our tree, but its syntax errors, positions, number range
 * and NUL handling are not serde's: rpc_scan.c reads the bytes first the
 * way serde_json does and has the last word on syntax.
 */
#include "config.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "jsonx.h"
#include "rpc/rpc_parse.h"
#include "rpc/rpc_scan.h"

static void
err_printf(struct rpc_msg *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
err_printf(struct rpc_msg *m, const char *fmt, ...)
{
	char	tmp[256];
	va_list	ap;
	int	n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		buf_append(&m->err, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* A string as Rust's Debug shows it. */
static void
err_debug_string(struct rpc_msg *m, json_t *v)
{
	if (jx_debug_str(&m->err, json_string_value(v), json_string_length(v)) == -1)
		log_warnx("out of memory for an error message");
}

static int
err_type(struct rpc_msg *m, json_t *v, const char *expected)
{
	char	what[64];

	if (json_is_string(v)) {
		err_printf(m, "invalid type: string ");
		err_debug_string(m, v);
	} else {
		jx_describe(v, what, sizeof(what));
		err_printf(m, "invalid type: %s", what);
	}
	err_printf(m, ", expected %s", expected);
	return -1;
}

/* The envelope's fields, as the reference's serde structs declare them. */
typedef int	check_fn(struct rpc_msg *, json_t *, const struct scan *);

struct field {
	const char	*name;
	check_fn	*check;		/* NULL: any value */
	int		 required;
};

struct shape {
	const char		*name;
	const struct field	*fields;
	size_t			 nfields;
};

static int
check_string(struct rpc_msg *m, json_t *v, const struct scan *s)
{
	return json_is_string(v) ? 0 : err_type(m, v, "a string");
}

static int
check_opt_string(struct rpc_msg *m, json_t *v, const struct scan *s)
{
	return json_is_null(v) ? 0 : check_string(m, v, s);
}

/* An untagged enum of a string and an i64, fed serde_json's big numbers. */
static int
check_request_id(struct rpc_msg *m, json_t *v, const struct scan *s)
{
	if (json_is_string(v) || (json_is_integer(v) && s->id_kind == NUM_I64))
		return 0;
	if (s->id_wide != NUM_NONE) {
		err_printf(m, "invalid type: integer `%.*s` as %s, expected any value",
		    (int)s->id_len, (const char *)s->p + s->id_off,
		    s->id_wide == NUM_U128 ? "u128" : "i128");
		return -1;
	}
	err_printf(m, "data did not match any variant of untagged enum RequestId");
	return -1;
}

static int
check_code(struct rpc_msg *m, json_t *v, const struct scan *s)
{
	if (json_is_integer(v) && s->code_kind == NUM_I64)
		return 0;
	if (json_is_number(v)) {
		err_printf(m, "invalid number");
		return -1;
	}
	return err_type(m, v, "i64");
}

static int	check_struct(struct rpc_msg *, json_t *, const struct shape *,
		    const struct scan *);

static const struct field trace_fields[] = {
	{ "traceparent", check_opt_string, 0 },
	{ "tracestate", check_opt_string, 0 },
};
static const struct shape trace_shape = { "W3cTraceContext", trace_fields, 2 };

static int
check_trace(struct rpc_msg *m, json_t *v, const struct scan *s)
{
	return json_is_null(v) ? 0 : check_struct(m, v, &trace_shape, s);
}

static const struct field error_body_fields[] = {
	{ "code", check_code, 1 },
	{ "data", NULL, 0 },
	{ "message", check_string, 1 },
};
static const struct shape error_body_shape = { "JSONRPCErrorError", error_body_fields, 3 };

static int
check_error_body(struct rpc_msg *m, json_t *v, const struct scan *s)
{
	return check_struct(m, v, &error_body_shape, s);
}

static const struct field request_fields[] = {
	{ "id", check_request_id, 1 },
	{ "method", check_string, 1 },
	{ "params", NULL, 0 },
	{ "trace", check_trace, 0 },
};
static const struct field notification_fields[] = {
	{ "method", check_string, 1 },
	{ "params", NULL, 0 },
};
static const struct field response_fields[] = {
	{ "id", check_request_id, 1 },
	{ "result", NULL, 1 },
};
static const struct field error_fields[] = {
	{ "error", check_error_body, 1 },
	{ "id", check_request_id, 1 },
};
static const struct shape request_shape = { "JSONRPCRequest", request_fields, 4 };
static const struct shape notification_shape = { "JSONRPCNotification", notification_fields, 2 };
static const struct shape response_shape = { "JSONRPCResponse", response_fields, 2 };
static const struct shape error_shape = { "JSONRPCError", error_fields, 2 };

/* A map: fields checked in the order written, then the missing ones. */
static int
check_struct_map(struct rpc_msg *m, json_t *o, const struct shape *sh,
    const struct scan *s)
{
	const char	*key;
	json_t		*v;
	size_t		 k, klen;

	jx_fields_foreach(o, key, klen, v)
		for (k = 0; k < sh->nfields; k++)
			if (strcmp(key, sh->fields[k].name) == 0 && sh->fields[k].check != NULL &&
			    sh->fields[k].check(m, v, s) == -1)
				return -1;
	for (k = 0; k < sh->nfields; k++)
		if (sh->fields[k].required && json_object_get(o, sh->fields[k].name) == NULL) {
			err_printf(m, "missing field `%s`", sh->fields[k].name);
			return -1;
		}
	return 0;
}

/* A sequence: serde's tuple form of a struct. */
static int
check_struct_seq(struct rpc_msg *m, json_t *a, const struct shape *sh,
    const struct scan *s)
{
	size_t	k, n = json_array_size(a);

	for (k = 0; k < sh->nfields; k++) {
		if (k >= n) {
			if (!sh->fields[k].required)
				continue;
			err_printf(m, "invalid length %zu, expected struct %s with %zu elements",
			    k, sh->name, sh->nfields);
			return -1;
		}
		if (sh->fields[k].check != NULL &&
		    sh->fields[k].check(m, json_array_get(a, k), s) == -1)
			return -1;
	}
	if (n > sh->nfields) {
		err_printf(m, "invalid length %zu, expected fewer elements in array", n);
		return -1;
	}
	return 0;
}

static int
check_struct(struct rpc_msg *m, json_t *v, const struct shape *sh, const struct scan *s)
{
	char	exp[64];

	if (json_is_object(v))
		return check_struct_map(m, v, sh, s);
	if (json_is_array(v))
		return check_struct_seq(m, v, sh, s);
	snprintf(exp, sizeof(exp), "struct %s", sh->name);
	return err_type(m, v, exp);
}

/* The reference's JSONRPCMessage: told apart by which keys are present. */
static enum rpc_msg_kind
classify(struct rpc_msg *m, const struct scan *s)
{
	const struct shape	*sh;
	enum rpc_msg_kind	 kind;
	json_t			*root = m->root, *method;

	if (!json_is_object(root)) {
		err_printf(m, "expected a JSON-RPC object");
		return RPC_MSG_MALFORMED;
	}
	m->id = json_object_get(root, "id");
	if ((method = json_object_get(root, "method")) != NULL) {
		sh = m->id != NULL ? &request_shape : &notification_shape;
		kind = m->id != NULL ? RPC_MSG_REQUEST : RPC_MSG_NOTIFICATION;
	} else {
		sh = json_object_get(root, "result") != NULL ? &response_shape : &error_shape;
		kind = RPC_MSG_RESPONSE;
	}
	if (check_struct_map(m, root, sh, s) == -1)
		return RPC_MSG_MALFORMED;
	if (method != NULL) {
		m->method = json_string_value(method);
		m->method_len = json_string_length(method);
		m->params = json_object_get(root, "params");
	}
	return kind;
}

/*
 * A key with a NUL in it, read by jansson with U+FFFF in the NUL's place:
 * the key as the client wrote it.  (A key that really holds U+FFFF, in a
 * message where another key holds a NUL, gets a NUL too: refused as NUL
 * rather than taken for a different name.)
 */
static int
key_unfix(const char *key, size_t len, struct buf *out)
{
	size_t	i;

	buf_reset(out);
	for (i = 0; i < len; i++) {
		if (i + 2 < len && memcmp(key + i, "\xef\xbf\xbf", 3) == 0) {
			if (buf_append(out, "", 1) == -1)
				return -1;
			i += 2;
		} else if (buf_append(out, key + i, 1) == -1)
			return -1;
	}
	return 0;
}

/* Put back the NULs of keys, keeping every object's key order. */
static int
restore_nul_keys(json_t *v, struct buf *tmp)
{
	json_t		*copy, *item;
	const char	*key;
	size_t		 klen, i;

	if (json_is_array(v)) {
		json_array_foreach(v, i, item)
			if (restore_nul_keys(item, tmp) == -1)
				return -1;
		return 0;
	}
	if (!json_is_object(v))
		return 0;
	if ((copy = json_copy(v)) == NULL)
		return -1;
	json_object_clear(v);
	json_object_keylen_foreach(copy, key, klen, item) {
		if (restore_nul_keys(item, tmp) == -1 || key_unfix(key, klen, tmp) == -1 ||
		    json_object_setn_nocheck(v, tmp->len > 0 ? (const char *)tmp->data : "",
		    tmp->len, item) == -1) {
			json_decref(copy);
			return -1;
		}
	}
	json_decref(copy);
	return 0;
}

static int
restore_keys(struct rpc_msg *m)
{
	struct buf	tmp = { 0 };
	int		r;

	if ((r = restore_nul_keys(m->root, &tmp)) == -1)
		err_printf(m, "out of memory");
	buf_free(&tmp);
	return r;
}

/* The message as jansson is to read it: the blob's text cut out, its quotes kept. */
struct cut_reader {
	const char	*p;
	size_t		 i, end;	/* read index, end of the value */
	size_t		 cut, cut_len;	/* the text left out */
};

static size_t
cut_read(void *buffer, size_t buflen, void *arg)
{
	struct cut_reader	*r = arg;
	size_t			 stop, n;

	if (r->i == r->cut)
		r->i += r->cut_len;
	stop = r->i < r->cut ? r->cut : r->end;
	n = stop - r->i < buflen ? stop - r->i : buflen;
	memcpy(buffer, r->p + r->i, n);
	r->i += n;
	return n;
}

/* The params member the scanner found long enough, if the method wants it raw. */
static int
want_blob(const char *data, const struct scan *s, rpc_blob_fn *blob)
{
	return blob != NULL && s->blob_len > 0 && s->method_len > 0 && s->blob_key.len > 0 &&
	    blob(data + s->method_off, s->method_len, (const char *)s->blob_key.data,
	    s->blob_key.len);
}

static json_t *
load_tree(const char *data, struct scan *s, int cut, json_error_t *je)
{
	const char		*src = s->fixed != NULL ? s->fixed : data;
	struct cut_reader	 r = { src, 0, s->i, s->blob_off, s->blob_len };

	if (!cut)
		return json_loadb(src, s->i, JSON_DECODE_ANY | JSON_ALLOW_NUL, je);
	return json_load_callback(cut_read, &r, JSON_DECODE_ANY | JSON_ALLOW_NUL, je);
}

/* The empty string that stands for the blob in params. */
static void
find_blob(const char *data, const struct scan *s, struct rpc_msg *m)
{
	json_t	*v;

	if (m->params == NULL || !json_is_object(m->params))
		return;
	v = json_object_getn(m->params, (const char *)s->blob_key.data, s->blob_key.len);
	if (v == NULL || !json_is_string(v) || json_string_length(v) != 0) {
		log_warnx("the long params member is not where it was read");
		return;
	}
	m->blob = v;
	m->blob_text = data + s->blob_off;
	m->blob_len = s->blob_len;
}

static enum rpc_msg_kind
rpc_parse_value(const char *data, size_t len, struct rpc_msg *m, struct scan *s,
    rpc_blob_fn *blob)
{
	json_error_t		 je;
	enum rpc_msg_kind	 kind;
	int			 cut;

	if (scan_json(s, (const uint8_t *)data, len) == -1)
		goto syntax;
	cut = want_blob(data, s, blob);
	if ((m->root = load_tree(data, s, cut, &je)) == NULL) {
		log_warnx("jansson refused a message serde accepts: %s", je.text);
		err_printf(m, "%s", je.text);
		return RPC_MSG_MALFORMED;
	}
	if (s->key_nul && restore_keys(m) == -1)
		return RPC_MSG_MALFORMED;
	if ((kind = classify(m, s)) == RPC_MSG_MALFORMED)
		return kind;
	if (scan_trailing(s) == -1)
		goto syntax;
	if (cut && kind == RPC_MSG_REQUEST)
		find_blob(data, s, m);
	return kind;
syntax:
	if (scan_error_text(s, &m->err) == -1)
		log_warnx("out of memory for a parse error");
	return RPC_MSG_MALFORMED;
}

enum rpc_msg_kind
rpc_parse(const char *data, size_t len, struct rpc_msg *m, rpc_blob_fn *blob)
{
	struct scan		s;
	enum rpc_msg_kind	kind;

	memset(m, 0, sizeof(*m));
	kind = rpc_parse_value(data, len, m, &s, blob);
	scan_free(&s);
	/* a message that decoded is valid UTF-8 */
	if (kind == RPC_MSG_MALFORMED && !utf8_valid((const uint8_t *)data, len))
		kind = RPC_MSG_NOT_UTF8;
	else if (kind == RPC_MSG_MALFORMED && unicode_blank((const uint8_t *)data, len))
		kind = RPC_MSG_BLANK;
	return kind;
}

void
rpc_msg_clear(struct rpc_msg *m)
{
	json_decref(m->root);
	buf_free(&m->err);
	memset(m, 0, sizeof(*m));
}
