/* Decoding http/request's params with serde's error texts. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "buf.h"
#include "http/http_params.h"
#include "rpc/rpc_serde.h"

static int
type_error(struct jx_err *e, json_t *v, const char *expected)
{
	char	what[300];

	switch (json_typeof(v)) {
	case JSON_NULL:
		snprintf(what, sizeof(what), "null");
		break;
	case JSON_TRUE:
	case JSON_FALSE:
		snprintf(what, sizeof(what), "boolean `%s`", json_is_true(v) ? "true" : "false");
		break;
	case JSON_INTEGER:
	case JSON_REAL:
		snprintf(what, sizeof(what), "number");
		break;
	case JSON_STRING:
		snprintf(what, sizeof(what), ", expected %s", expected);
		return jx_type_error_str(e, "invalid type: string ", v, what);
	case JSON_ARRAY:
		snprintf(what, sizeof(what), "sequence");
		break;
	case JSON_OBJECT:
		snprintf(what, sizeof(what), "map");
		break;
	}
	snprintf(e->msg, sizeof(e->msg), "invalid type: %s, expected %s", what, expected);
	return -1;
}

static int
want_string(json_t *v, const char **out, struct jx_err *e)
{
	if (!json_is_string(v))
		return type_error(e, v, "a string");
	*out = json_string_value(v);
	return 0;
}

static int
decode_header(json_t *h, struct jx_err *e)
{
	const char	*key, *s;
	json_t		*v;
	size_t		 klen;
	int		 have_name = 0, have_value = 0;

	if (json_is_array(h)) {
		/* serde also takes a struct as a sequence of its fields */
		if (json_array_size(h) < 2) {
			snprintf(e->msg, sizeof(e->msg), "invalid length %zu, expected "
			    "struct HttpHeader with 3 elements", json_array_size(h));
			return -1;
		}
		if (want_string(json_array_get(h, 0), &s, e) == -1 ||
		    want_string(json_array_get(h, 1), &s, e) == -1)
			return -1;
		v = json_array_get(h, 2);
		if (v != NULL && !json_is_null(v) && want_string(v, &s, e) == -1)
			return -1;
		return 0;
	}
	if (!json_is_object(h))
		return type_error(e, h, "struct HttpHeader");
	jx_fields_foreach(h, key, klen, v) {
		if (strcmp(key, "name") == 0) {
			if (want_string(v, &s, e) == -1)
				return -1;
			have_name = 1;
		} else if (strcmp(key, "value") == 0) {
			if (want_string(v, &s, e) == -1)
				return -1;
			have_value = 1;
		} else if (strcmp(key, "valueEnvVar") == 0) {
			if (!json_is_null(v) && want_string(v, &s, e) == -1)
				return -1;
		}
	}
	if (!have_name || !have_value) {
		snprintf(e->msg, sizeof(e->msg), "missing field `%s`",
		    have_name ? "value" : "name");
		return -1;
	}
	return 0;
}

static int
decode_headers(json_t *v, struct http_params *p, struct jx_err *e)
{
	json_t	*h;
	size_t	 i;

	if (!json_is_array(v))
		return type_error(e, v, "a sequence");
	json_array_foreach(v, i, h)
		if (decode_header(h, e) == -1)
			return -1;
	p->headers = v;
	return 0;
}

static int
decode_body(json_t *v, struct http_params *p, struct jx_err *e)
{
	if (json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return type_error(e, v, "a string");
	free(p->body);
	p->body = b64_decode(json_string_value(v), json_string_length(v), &p->bodylen,
	    e->msg, sizeof(e->msg));
	return p->body == NULL ? -1 : 0;
}

static int
decode_timeout(json_t *v, struct http_params *p, struct jx_err *e)
{
	if (json_is_null(v))
		return 0;
	if (json_is_real(v) || (json_is_integer(v) && json_integer_value(v) < 0)) {
		snprintf(e->msg, sizeof(e->msg), "invalid number");
		return -1;
	}
	if (!json_is_integer(v))
		return type_error(e, v, "u64");
	p->has_timeout = 1;
	p->timeout_ms = (uint64_t)json_integer_value(v);
	return 0;
}

static int
decode_policy(json_t *v, struct http_params *p, struct jx_err *e)
{
	static const char *const policies[] = { "follow", "stop", NULL };
	int	which;

	/* serde's unit variant: its name, or a map of that one key to null */
	if (serde_unit_variant(v, policies, &which, e) == -1)
		return -1;
	p->follow = which == 0;
	return 0;
}

/*
 * A NUL inside the URL is what the URL parser makes of it, %00 (one at
 * either end goes with the C0 controls the parser trims): rewritten in
 * place so that the URL is never cut at it.
 */
static int
want_url(json_t *v, const char **out, struct jx_err *e)
{
	const char	*s;
	size_t		 len, b, end, i;
	struct buf	 t = { 0 };
	int		 r = 0;

	if (want_string(v, out, e) == -1)
		return -1;
	if (!jx_has_nul(v))
		return 0;
	s = json_string_value(v);
	len = json_string_length(v);
	for (b = 0; b < len && (unsigned char)s[b] <= 0x20; b++)
		;
	for (end = len; end > b && (unsigned char)s[end - 1] <= 0x20; end--)
		;
	for (i = b; i < end && r == 0; i++)
		r = s[i] == '\0' ? buf_append(&t, "%00", 3) : buf_append(&t, s + i, 1);
	if (r == 0)
		r = json_string_setn(v, t.len > 0 ? (const char *)t.data : "", t.len);
	buf_free(&t);
	if (r == -1) {
		snprintf(e->msg, sizeof(e->msg), "out of memory");
		return -1;
	}
	*out = json_string_value(v);
	return 0;
}

static int
decode_field(const char *key, json_t *v, struct http_params *p, struct jx_err *e)
{
	if (strcmp(key, "method") == 0) {
		p->method_len = json_string_length(v);
		return want_string(v, &p->method, e);
	}
	if (strcmp(key, "url") == 0)
		return want_url(v, &p->url, e);
	if (strcmp(key, "requestId") == 0) {
		/* a name for the stream, echoed in its notifications */
		if (want_string(v, &p->request_id, e) == -1)
			return -1;
		if (jx_id_encode(v) == -1) {
			snprintf(e->msg, sizeof(e->msg), "out of memory");
			return -1;
		}
		p->request_id = json_string_value(v);
		return 0;
	}
	if (strcmp(key, "headers") == 0)
		return decode_headers(v, p, e);
	if (strcmp(key, "bodyBase64") == 0)
		return decode_body(v, p, e);
	if (strcmp(key, "timeoutMs") == 0)
		return decode_timeout(v, p, e);
	if (strcmp(key, "redirectPolicy") == 0)
		return decode_policy(v, p, e);
	if (strcmp(key, "streamResponse") == 0) {
		if (!json_is_boolean(v))
			return type_error(e, v, "a boolean");
		p->stream = json_is_true(v);
	}
	return 0;
}

/* HttpRequestParams in its declaration order (its sequence form's) */
static const char *const http_fields[] = {
	"method", "url", "headers", "bodyBase64", "timeoutMs", "redirectPolicy", "requestId",
	"streamResponse", NULL
};
static const struct serde_struct http_struct = {
	"HttpRequestParams", http_fields, 1UL << 2 | 1UL << 3 | 1UL << 4 | 1UL << 5 | 1UL << 7
};

static int
decode_map(json_t *params, struct http_params *p, struct jx_err *e)
{
	const char	*key;
	json_t		*v;
	size_t		 klen;

	if (!json_is_object(params))
		return type_error(e, params, "struct HttpRequestParams");
	jx_fields_foreach(params, key, klen, v)
		if (decode_field(key, v, p, e) == -1)
			return -1;
	key = p->method == NULL ? "method" : p->url == NULL ? "url" :
	    p->request_id == NULL ? "requestId" : NULL;
	if (key != NULL) {
		snprintf(e->msg, sizeof(e->msg), "missing field `%s`", key);
		return -1;
	}
	return 0;
}

/* The strings stay valid: params still holds them (its sequence form too). */
int
http_params_decode(json_t *params, struct http_params *p, struct jx_err *e)
{
	json_t	*o;
	long	 n;
	int	 rc;

	memset(p, 0, sizeof(*p));
	p->follow = 1;
	if (params == NULL || json_is_null(params)) {
		snprintf(e->msg, sizeof(e->msg),
		    "invalid type: null, expected struct HttpRequestParams");
		return -1;
	}
	if (!json_is_array(params))
		return decode_map(params, p, e);
	/* serde's sequence form: the fields by position */
	if ((o = serde_struct_params(params, &http_struct, &n)) == NULL) {
		snprintf(e->msg, sizeof(e->msg), "out of memory");
		return -1;
	}
	rc = serde_struct_seq_end(&http_struct, n, decode_map(o, p, e), e);
	json_decref(o);
	return rc;
}
