#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "b64.h"
#include "transport/http_upgrade.h"
#include "transport/jwt.h"
#include "util/crypto.h"

#define WS_GUID	"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

/* http_upgrade_init(): the capability token and the JWT check; NULL: none */
static const char		*auth_token;
static const struct jwt_conf	*auth_jwt;

void
http_upgrade_init(const char *token, const struct jwt_conf *jwt)
{
	auth_token = token;
	auth_jwt = jwt;
}

struct http_req_head {
	char		 method[16];
	char		 path[2048];
	int		 http10;	/* HTTP/1.0 */
	int		 nheaders;
	const char	*upgrade, *connection, *key, *version, *origin, *authz;
	size_t		 upgrade_len, connection_len, key_len, version_len, authz_len;
};

int
http_ws_accept(const char *key, size_t keylen, char *out, size_t outlen)
{
	unsigned char	 md[SHA1_LEN];
	char		*buf;
	int		 rc;

	/* any key, as the reference takes any: the head bounds its length */
	if (keylen > HTTP_HEAD_MAX || outlen < B64_ENCLEN(sizeof(md)) + 1 ||
	    (buf = malloc(keylen + sizeof(WS_GUID))) == NULL)
		return -1;
	memcpy(buf, key, keylen);
	memcpy(buf + keylen, WS_GUID, sizeof(WS_GUID) - 1);
	rc = crypto_sha1(buf, keylen + sizeof(WS_GUID) - 1, md);
	free(buf);
	if (rc == -1)
		return -1;
	b64_encode_to(out, md, sizeof(md));
	return 0;
}

/*
 * An answer and a close.  As the reference's: an empty body has no
 * content-type, and a HEAD request gets the head alone.
 */
static void
respond(struct http_result *r, int status, const char *reason, const char *extra,
    const char *body)
{
	r->verdict = HTTP_RESPOND;
	r->status = status;
	r->resp_len = (size_t)snprintf(r->resp, sizeof(r->resp),
	    "HTTP/1.%d %d %s\r\n%s"
	    "content-length: %zu\r\nconnection: close\r\n%s\r\n%s",
	    r->http10 ? 0 : 1, status, reason,
	    *body != '\0' ? "content-type: text/plain; charset=utf-8\r\n" : "",
	    strlen(body), extra, r->head_method ? "" : body);
}

/* Does a comma-separated header value hold token (case-insensitive)? */
static int
has_token(const char *v, size_t len, const char *token)
{
	size_t	tl = strlen(token), i = 0, start, end;

	while (i < len) {
		while (i < len && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		start = i;
		while (i < len && v[i] != ',')
			i++;
		end = i;
		while (end > start && (v[end - 1] == ' ' || v[end - 1] == '\t'))
			end--;
		if (end - start == tl && strncasecmp(v + start, token, tl) == 0)
			return 1;
	}
	return 0;
}

/*
 * "METHOD SP TARGET SP HTTP/1.x", bounded by the line: the bytes received
 * are not a C string.
 */
static int
parse_request_line(const char *p, size_t n, struct http_req_head *h)
{
	const char	*sp1, *sp2, *end = p + n;

	if ((sp1 = memchr(p, ' ', n)) == NULL || sp1 == p ||
	    (size_t)(sp1 - p) >= sizeof(h->method))
		return -1;
	if ((sp2 = memchr(sp1 + 1, ' ', (size_t)(end - sp1 - 1))) == NULL ||
	    sp2 == sp1 + 1 || (size_t)(sp2 - sp1 - 1) >= sizeof(h->path))
		return -1;
	if (end - sp2 - 1 != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0 ||
	    (sp2[8] != '0' && sp2[8] != '1'))
		return -1;
	h->http10 = sp2[8] == '0';
	memcpy(h->method, p, (size_t)(sp1 - p));
	h->method[sp1 - p] = '\0';
	memcpy(h->path, sp1 + 1, (size_t)(sp2 - sp1 - 1));
	h->path[sp2 - sp1 - 1] = '\0';
	/* a NUL would cut the target short of what was checked */
	if (strlen(h->path) != (size_t)(sp2 - sp1 - 1) || strlen(h->method) != (size_t)(sp1 - p))
		return -1;
	return 0;
}

/* A field name is an RFC 9110 token. */
static int
is_token(const char *p, size_t n)
{
	size_t	i;

	if (n == 0)
		return 0;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)p[i]) && strchr("!#$%&'*+-.^_`|~", p[i]) == NULL)
			return 0;
	return 1;
}

/* No control byte but tab in a field value (obs-text, 0x80-0xff, is allowed). */
static int
value_ok(const char *v, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (((unsigned char)v[i] < 0x20 && v[i] != '\t') || v[i] == 0x7f)
			return 0;
	return 1;
}

/* One "name: value" line into h; the first of each header counts, as in the reference. */
static int
parse_field(const char *p, size_t n, struct http_req_head *h)
{
	const char	*colon, *v;
	size_t		 vl;

	if ((colon = memchr(p, ':', n)) == NULL || !is_token(p, (size_t)(colon - p)))
		return -1;
	v = colon + 1;
	while (v < p + n && (*v == ' ' || *v == '\t'))
		v++;
	vl = (size_t)(p + n - v);
	while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
		vl--;
	if (!value_ok(v, vl))
		return -1;
	h->nheaders++;
#define HDR(name, field, flen)							\
	if (h->field == NULL && (size_t)(colon - p) == strlen(name) &&		\
	    strncasecmp(p, name, strlen(name)) == 0) {				\
		h->field = v;							\
		h->flen = vl;							\
	}
	HDR("upgrade", upgrade, upgrade_len)
	HDR("connection", connection, connection_len)
	HDR("sec-websocket-key", key, key_len)
	HDR("sec-websocket-version", version, version_len)
	HDR("authorization", authz, authz_len)
#undef HDR
	if ((size_t)(colon - p) == 6 && strncasecmp(p, "origin", 6) == 0)
		h->origin = v;
	return 0;
}

/* 0, -1 when the head is malformed, -2 when it has too many fields. */
static int
parse_head(const char *data, size_t len, struct http_req_head *h)
{
	const char	*p = data, *end = data + len, *eol;
	size_t		 n;
	int		 first = 1;

	memset(h, 0, sizeof(*h));
	while (p < end) {
		eol = memchr(p, '\n', (size_t)(end - p));
		if (eol == NULL)
			return -1;
		n = (size_t)(eol - p);
		if (n > 0 && p[n - 1] == '\r')
			n--;
		if (n == 0)
			break;
		if (first) {
			if (parse_request_line(p, n, h) == -1)
				return -1;
			first = 0;
		} else if (parse_field(p, n, h) == -1)
			return -1;
		else if (h->nheaders > HTTP_HEADERS_MAX)
			return -2;	/* a sound field hyper has no place for */
		p = eol + 1;
	}
	return first ? -1 : 0;
}

/* The token from "/TOKEN" or "Authorization: Bearer TOKEN", in constant time. */
static int
token_ok(const struct http_req_head *h)
{
	const char	*cand = NULL, *q;
	size_t		 clen = 0, tlen;

	if (auth_token == NULL)
		return 0;
	tlen = strlen(auth_token);

	if (h->authz != NULL && h->authz_len > 7 && strncasecmp(h->authz, "bearer ", 7) == 0) {
		cand = h->authz + 7;
		clen = h->authz_len - 7;
		while (clen > 0 && *cand == ' ') {
			cand++;
			clen--;
		}
	} else if (h->path[0] == '/' && h->path[1] != '\0') {
		cand = h->path + 1;
		q = strchr(cand, '?');
		clen = q ? (size_t)(q - cand) : strlen(cand);
	}
	if (cand == NULL || clen != tlen)
		return 0;
	return crypto_equal(cand, auth_token, tlen);
}

/*
 * Signed-bearer-token mode: "Bearer" (any case), one space, then the JWT.
 * NULL when it is good, otherwise the 401 body.
 */
static const char *
jwt_refusal(const struct http_req_head *h)
{
	const char	*tok;
	size_t		 i, len;

	if (h->authz == NULL)
		return "missing websocket bearer token";
	for (i = 0; i < h->authz_len; i++)
		if ((unsigned char)h->authz[i] >= 0x80)
			return "invalid authorization header";
	if (h->authz_len < 7 || strncasecmp(h->authz, "bearer ", 7) != 0)
		return "invalid authorization header";
	tok = h->authz + 7;
	len = h->authz_len - 7;
	while (len > 0 && isspace((unsigned char)*tok)) {
		tok++;
		len--;
	}
	if (len == 0)
		return "invalid authorization header";
	return jwt_check(auth_jwt, tok, len, time(NULL));
}

static int
path_is(const char *path, const char *want)
{
	size_t	n = strcspn(path, "?");

	return n == strlen(want) && strncmp(path, want, n) == 0;
}

/* The 101 of an upgrade to a WebSocket; -1 when the key cannot be hashed. */
static int
upgrade(const struct http_req_head *h, struct http_result *r)
{
	char	accept[64];

	if (http_ws_accept(h->key, h->key_len, accept, sizeof(accept)) == -1)
		return -1;
	r->verdict = HTTP_UPGRADE;
	r->status = 101;
	r->resp_len = (size_t)snprintf(r->resp, sizeof(r->resp),
	    "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\n"
	    "connection: upgrade\r\nsec-websocket-accept: %s\r\n\r\n", accept);
	return 0;
}

/* An empty answer; nolen: without even a content-length (hyper's to HEAD on no route). */
static void
respond_empty(struct http_result *r, int status, const char *reason, const char *extra,
    int nolen)
{
	respond(r, status, reason, extra, "");
	if (nolen)
		r->resp_len = (size_t)snprintf(r->resp, sizeof(r->resp),
		    "HTTP/1.%d %d %s\r\n%sconnection: close\r\n\r\n", r->http10 ? 0 : 1,
		    status, reason, extra);
}

/* Is the whole value v this word, in any case (the reference's header_eq)? */
static int
value_is(const char *v, size_t len, const char *word)
{
	return v != NULL && len == strlen(word) && strncasecmp(v, word, len) == 0;
}

/*
 * The reference's routes with --ws-auth signed-bearer-token, in its order:
 * an Origin is refused first (403), then GET|HEAD /readyz, then / with
 * axum's WebSocketUpgrade checks (method, Connection, Upgrade, key,
 * version, HTTP/1.1), then the token; any other path is 404.  A HEAD
 * request to no route gets no content-length, as hyper answers it.
 */
static void
jwt_route(const struct http_req_head *h, struct http_result *r)
{
	const char	*refusal, *allow = "";
	int		 readyz = path_is(h->path, "/readyz"), root = path_is(h->path, "/");

	/* axum's method router says what /readyz allows, whatever answers */
	if (readyz && strcmp(h->method, "GET") != 0 && !r->head_method)
		allow = "allow: GET,HEAD\r\n";
	if (h->origin != NULL)
		respond_empty(r, 403, "Forbidden", allow, r->head_method && !readyz && !root);
	else if (readyz && *allow == '\0')
		respond(r, 200, "OK", "", "");
	else if (readyz)
		respond(r, 405, "Method Not Allowed", allow, "");
	else if (!root)
		respond_empty(r, 404, "Not Found", "", r->head_method);
	else if (strcmp(h->method, "GET") != 0)
		respond(r, 405, "Method Not Allowed", "", "Request method must be `GET`");
	else if (h->connection == NULL || !has_token(h->connection, h->connection_len, "upgrade"))
		respond(r, 400, "Bad Request", "", "Connection header did not include 'upgrade'");
	else if (!value_is(h->upgrade, h->upgrade_len, "websocket"))
		respond(r, 400, "Bad Request", "", "`Upgrade` header did not include 'websocket'");
	else if (h->key == NULL)
		respond(r, 400, "Bad Request", "", "`Sec-WebSocket-Key` header missing");
	else if (!value_is(h->version, h->version_len, "13"))
		respond(r, 400, "Bad Request", "",
		    "`Sec-WebSocket-Version` header did not include '13'");
	else if (h->http10)
		respond(r, 426, "Upgrade Required", "", "WebSocket request couldn't be "
		    "upgraded since no upgrade state was present");
	else if ((refusal = jwt_refusal(h)) != NULL)
		respond(r, 401, "Unauthorized", "www-authenticate: Bearer\r\n", refusal);
	else if (upgrade(h, r) == -1)
		respond(r, 500, "Internal Server Error", "", "");
}

void
http_upgrade_parse(const char *data, size_t len, int need_auth, struct http_result *r)
{
	struct http_req_head	 h;
	const char		*end;

	memset(r, 0, sizeof(*r));
	end = memmem(data, len, "\r\n\r\n", 4);
	if (end == NULL && (end = memmem(data, len, "\n\n", 2)) == NULL) {
		if (len >= HTTP_HEAD_MAX)
			respond(r, 431, "Request Header Fields Too Large", "", "");
		else
			r->verdict = HTTP_INCOMPLETE;
		return;
	}
	r->head_len = (size_t)(end - data) + (end[0] == '\r' ? 4 : 2);
	if (r->head_len > HTTP_HEAD_MAX) {
		respond(r, 431, "Request Header Fields Too Large", "", "");
		return;
	}
	/* as hyper answers a head it cannot read: empty, as HTTP/1.1 */
	switch (parse_head(data, r->head_len, &h)) {
	case -1:
		respond(r, 400, "Bad Request", "", "");
		return;
	case -2:
		respond(r, 431, "Request Header Fields Too Large", "", "");
		return;
	}
	r->http10 = h.http10;
	r->head_method = strcmp(h.method, "HEAD") == 0;
	if (auth_jwt != NULL) {
		jwt_route(&h, r);
		return;
	}
	if (path_is(h.path, "/readyz")) {
		respond(r, 200, "OK", "", "");
		return;
	}
	if (h.upgrade == NULL || !has_token(h.upgrade, h.upgrade_len, "websocket") ||
	    h.connection == NULL || !has_token(h.connection, h.connection_len, "upgrade")) {
		if (!path_is(h.path, "/") && !need_auth)
			respond(r, 404, "Not Found", "", "");
		else
			respond(r, 400, "Bad Request", "",
			    "Connection header did not include 'upgrade'");
		return;
	}
	if (strcmp(h.method, "GET") != 0) {
		respond(r, 405, "Method Not Allowed", "", "");
		return;
	}
	/* browsers always send Origin: refuse them (cross-site WebSocket hijacking) */
	if (h.origin != NULL) {
		respond(r, 403, "Forbidden", "", "");
		return;
	}
	if (need_auth && !token_ok(&h)) {
		respond(r, 401, "Unauthorized", "www-authenticate: Bearer\r\n",
		    h.authz == NULL && path_is(h.path, "/") ? "missing websocket bearer token" :
		    "invalid websocket bearer token");
		return;
	}
	if (!need_auth && !path_is(h.path, "/")) {
		respond(r, 404, "Not Found", "", "");
		return;
	}
	if (h.version == NULL || h.version_len != 2 || strncmp(h.version, "13", 2) != 0) {
		respond(r, 426, "Upgrade Required", "sec-websocket-version: 13\r\n",
		    "unsupported websocket version");
		return;
	}
	if (h.key == NULL || h.key_len != 24 || upgrade(&h, r) == -1)
		respond(r, 400, "Bad Request", "", "invalid sec-websocket-key");
}
