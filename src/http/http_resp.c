#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "http/http_xfer_int.h"
#include "log.h"

#define DEFAULT_MESSAGE	(64 * 1024 * 1024)

_Static_assert(DELTA_GATHER <= DELTA_MAX, "bodyDelta too large");

static size_t	max_message = DEFAULT_MESSAGE;	/* http_resp_init() */

void
http_resp_init(size_t max)
{
	max_message = max ? max : DEFAULT_MESSAGE;
}

static size_t
body_limit(void)
{
	size_t	max = max_message;

	/* base64 grows 4/3; leave room for status and headers */
	return max > 128 * 1024 ? (max - 64 * 1024) / 4 * 3 : max / 2;
}

static json_t *
headers_json(json_t *map)
{
	json_t		*out, *vals, *v;
	const char	*name;
	size_t		 i;

	if ((out = json_array()) == NULL)
		return NULL;
	json_object_foreach(map, name, vals)
		json_array_foreach(vals, i, v)
			json_array_append_new(out, json_pack("{s:s,s:O}",
			    "name", name, "value", v));
	return out;
}

void
http_resp_fail(struct xfer *x, int code, const char *fmt, ...)
{
	struct rpc_req	*req = x->req;
	va_list		 ap;
	char		*msg;
	int		 n;

	x->req = NULL;
	x->dead = 1;
	if (req == NULL)
		return;
	/* whole, however long the URL it names */
	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n == -1) {
		rpc_fail(req, code, "out of memory");
		return;
	}
	rpc_fail(req, code, "%s", msg);
	free(msg);
}

#define RESULT_BODY	",\"bodyBase64\":\""
#define RESULT_TAIL	"\"}"

/*
 * {"status":N,"headers":[...],"bodyBase64":"..."} written here, the
 * envelope's room in front: only the headers go through jansson.  The
 * base64 needs no escaping; through jansson a body was copied and scanned
 * twice more, and a small answer paid for building and dumping two trees.
 */
static char *
result_json(struct xfer *x, const void *body, size_t len, size_t *outlen)
{
	json_t	*headers;
	char	*hs, *b = NULL, status[48];
	size_t	 hl, sl, o;
	int	 n;

	if ((headers = headers_json(x->resp_headers)) == NULL)
		return NULL;
	hs = jx_dump(headers, &hl);
	json_decref(headers);
	n = snprintf(status, sizeof(status), "{\"status\":%d,\"headers\":", (int)x->status);
	if (hs == NULL || n < 0 || (size_t)n >= sizeof(status) ||
	    (b = malloc(RPC_REPLY_ROOM + (sl = (size_t)n) + hl + sizeof(RESULT_BODY) - 1 +
	    B64_ENCLEN(len) + sizeof(RESULT_TAIL))) == NULL) {
		free(hs);
		return NULL;
	}
	o = RPC_REPLY_ROOM;
	memcpy(b + o, status, sl);
	o += sl;
	memcpy(b + o, hs, hl);
	o += hl;
	memcpy(b + o, RESULT_BODY, sizeof(RESULT_BODY) - 1);
	o += sizeof(RESULT_BODY) - 1;
	o += b64_encode_to(b + o, body, len);
	memcpy(b + o, RESULT_TAIL, sizeof(RESULT_TAIL));	/* and a byte after it */
	o += sizeof(RESULT_TAIL) - 1;
	free(hs);
	*outlen = o - RPC_REPLY_ROOM;
	return b;
}

void
http_resp_result(struct xfer *x, const void *body, size_t len)
{
	struct rpc_req	*req = x->req;
	char		*b;
	size_t		 n;

	x->req = NULL;
	if ((b = result_json(x, body, len, &n)) == NULL) {
		log_warnx("http/request %s: out of memory for the answer", x->hop.href);
		x->dead = 1;
		rpc_fail(req, RPC_INTERNAL_ERROR, "http/request failed: out of memory");
		return;
	}
	rpc_reply_json(req, b, RPC_REPLY_ROOM, n);
}

void
http_resp_delta(struct xfer *x, const void *p, size_t n, int done, const char *error)
{
	json_t	*params;

	/* deltaBase64 goes last: rpc_notify_b64 writes it without jansson's escaping */
	params = json_pack("{s:o,s:I,s:b,s:o}", "requestId", jx_id_json(x->spec->request_id),
	    "seq", (json_int_t)x->seq++, "done", done,
	    "error", error ? json_string(error) : json_null());
	if (params == NULL)
		log_warnx("http/request %s: out of memory for a body delta", x->hop.href);
	else
		rpc_notify_b64("http/request/bodyDelta", params, "deltaBase64", p, n);
}

static int
redirect_status(long status)
{
	return status == 301 || status == 302 || status == 303 || status == 307 ||
	    status == 308;
}

/* End of a header block: informational, a redirect to follow, or final. */
/*
 * Only a body whose one Content-Encoding is exactly "gzip" or "zstd" is
 * decoded, as the reference's client decodes; its encoding and length then
 * no longer describe the body and are dropped.  Any other (x-gzip, GZIP,
 * deflate, br, a list, an unknown name) is passed on as it came: libcurl
 * would decode or refuse some of those, so it is told not to for this one.
 */
static int
content_decoding(struct xfer *x)
{
	json_t		*ce = json_object_get(x->resp_headers, "content-encoding");
	const char	*coding = json_string_value(json_array_get(ce, 0));

	if (ce == NULL)
		return 0;
	if (json_array_size(ce) == 1 && coding != NULL && http_curl_decodes(coding)) {
		json_object_del(x->resp_headers, "content-encoding");
		json_object_del(x->resp_headers, "content-length");
		return 0;
	}
	/* read by libcurl as it writes the body, which comes after this callback */
	if (curl_easy_setopt(x->easy, CURLOPT_HTTP_CONTENT_DECODING, 0L) != CURLE_OK) {
		snprintf(x->fail, sizeof(x->fail), "cannot pass the body on undecoded");
		return -1;
	}
	return 0;
}

static int
header_block_end(struct xfer *x)
{
	const char		*loc;
	enum http_url_status	 us;
	char			 err[HTTP_URL_ERRLEN];

	if (x->status >= 100 && x->status < 200)
		return 0;
	loc = json_string_value(json_array_get(json_object_get(x->resp_headers,
	    "location"), 0));
	if (x->spec->follow && redirect_status(x->status) && loc != NULL) {
		us = http_url_parse(loc, &x->hop, &x->next, err, sizeof(err));
		if (us == HTTP_URL_OK && x->redirects >= MAX_REDIRECTS) {
			snprintf(x->fail, sizeof(x->fail), "too many redirects");
			return -1;
		}
		if (us == HTTP_URL_SCHEME) {
			snprintf(x->fail, sizeof(x->fail),
			    "redirect target uses unsupported URL scheme: %s", err);
			return -1;
		}
		if (us == HTTP_URL_OK) {
			x->follow_next = 1;
			return 0;
		}
		/* an unusable Location: the redirect itself is the response */
	}
	x->head_done = 1;
	if (content_decoding(x) == -1)
		return -1;
	if (x->spec->stream && x->req != NULL)
		http_resp_result(x, "", 0);
	return 0;
}

static int
header_value_ok(const char *v, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (((unsigned char)v[i] < 0x20 && v[i] != '\t') ||
		    (unsigned char)v[i] >= 0x7f)
			return 0;
	return 1;
}

static int
header_line(struct xfer *x, const char *p, size_t n)
{
	const char	*colon, *v, *end = p + n;
	char		*name, *value;
	size_t		 i;
	int		 rc;

	if ((colon = memchr(p, ':', n)) == NULL || colon == p || *p == ' ' || *p == '\t')
		return 0;	/* not a field (continuation lines are obsolete) */
	for (v = colon + 1; v < end && (*v == ' ' || *v == '\t'); v++)
		;
	while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	/* the reference drops values that are not visible ASCII */
	if (!header_value_ok(v, (size_t)(end - v)))
		return 0;
	name = strndup(p, (size_t)(colon - p));
	value = strndup(v, (size_t)(end - v));
	rc = -1;
	if (name != NULL && value != NULL) {
		for (i = 0; name[i] != '\0'; i++)
			if (name[i] >= 'A' && name[i] <= 'Z')
				name[i] = (char)(name[i] - 'A' + 'a');
		json_t *vals = json_object_get(x->resp_headers, name);
		if (vals == NULL && json_object_set_new(x->resp_headers, name,
		    vals = json_array()) == -1)
			vals = NULL;
		rc = vals ? json_array_append_new(vals, json_string(value)) : -1;
	}
	free(name);
	free(value);
	return rc;
}

size_t
http_resp_header(char *p, size_t size, size_t nitems, void *arg)
{
	struct xfer	*x = arg;
	size_t		 n = size * nitems, len = n;

	if (x->req != NULL && !rpc_req_alive(x->req))
		x->dead = 1;
	if (x->dead)
		return 0;
	if (x->head_done || x->follow_next)
		return len;		/* trailers, or the redirect is decided */
	if (n >= 5 && memcmp(p, "HTTP/", 5) == 0) {
		const char *sp = memchr(p, ' ', n);

		json_object_clear(x->resp_headers);
		x->status = sp ? strtol(sp + 1, NULL, 10) : 0;
		return len;
	}
	while (n > 0 && (p[n - 1] == '\n' || p[n - 1] == '\r'))
		n--;
	if (n == 0)
		return header_block_end(x) == -1 ? 0 : len;
	if (header_line(x, p, n) == -1) {
		snprintf(x->fail, sizeof(x->fail), "out of memory");
		return 0;
	}
	return len;
}

/* libcurl hands over 16 KiB at a time: gather them into larger deltas. */
void
http_resp_flush(struct xfer *x)
{
	if (buf_avail(&x->body) == 0)
		return;
	http_resp_delta(x, buf_head(&x->body), buf_avail(&x->body), 0, NULL);
	buf_reset(&x->body);
}

static size_t
stream_body(struct xfer *x, const char *p, size_t n)
{
	size_t	off, take;

	if (!rpc_attached()) {
		x->dead = 1;
		return 0;
	}
	if (rpc_congested()) {
		x->paused = 1;
		return CURL_WRITEFUNC_PAUSE;
	}
	for (off = 0; off < n; off += take) {
		take = DELTA_GATHER - buf_avail(&x->body);
		if (take > n - off)
			take = n - off;
		if (buf_append(&x->body, p + off, take) == -1) {
			snprintf(x->fail, sizeof(x->fail), "out of memory");
			return 0;
		}
		if (buf_avail(&x->body) == DELTA_GATHER)
			http_resp_flush(x);
	}
	return n;
}

size_t
http_resp_body(char *p, size_t size, size_t nitems, void *arg)
{
	struct xfer	*x = arg;
	size_t		 n = size * nitems;

	if (x->dead)
		return 0;
	if (x->follow_next) {
		x->discarded += n;
		return x->discarded > REDIR_DISCARD ? 0 : n;
	}
	if (!x->head_done)
		return n;
	if (x->spec->stream)
		return stream_body(x, p, n);
	if (x->body.len + n > body_limit()) {
		snprintf(x->fail, sizeof(x->fail), "failed to read http/request response "
		    "body: response body exceeds %zu bytes", body_limit());
		return 0;
	}
	if (buf_append(&x->body, p, n) == -1) {
		snprintf(x->fail, sizeof(x->fail), "failed to read http/request response "
		    "body: out of memory");
		return 0;
	}
	return n;
}
