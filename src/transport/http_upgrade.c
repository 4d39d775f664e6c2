#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>


#include "b64.h"
#include "execd.h"
#include "transport/http_upgrade.h"
#include "transport/jwt.h"
#include "util/crypto.h"

#define WS_GUID	"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

struct http_req_head {
	char		 method[16];
	char		 path[2048];
	const char	*upgrade, *connection, *key, *version, *origin, *authz;
	size_t		 upgrade_len, connection_len, key_len, version_len, authz_len;
};

int
http_ws_accept(const char *key, size_t keylen, char *out, size_t outlen)
{
	unsigned char	 md[SHA1_LEN];
	char		 buf[128];

	if (keylen + sizeof(WS_GUID) > sizeof(buf) || outlen < B64_ENCLEN(sizeof(md)) + 1)
		return -1;
	memcpy(buf, key, keylen);
	memcpy(buf + keylen, WS_GUID, sizeof(WS_GUID) - 1);
	if (crypto_sha1(buf, keylen + sizeof(WS_GUID) - 1, md) == -1)
		return -1;
	b64_encode_to(out, md, sizeof(md));
	return 0;
}

static void
respond(struct http_result *r, int status, const char *reason, const char *extra,
    const char *body)
{
	r->verdict = HTTP_RESPOND;
	r->status = status;
	r->resp_len = (size_t)snprintf(r->resp, sizeof(r->resp),
	    "HTTP/1.1 %d %s\r\ncontent-type: text/plain; charset=utf-8\r\n"
	    "content-length: %zu\r\nconnection: close\r\n%s\r\n%s",
	    status, reason, strlen(body), extra, body);
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
	if (end - sp2 - 1 != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0)
		return -1;
	memcpy(h->method, p, (size_t)(sp1 - p));
	h->method[sp1 - p] = '\0';
	memcpy(h->path, sp1 + 1, (size_t)(sp2 - sp1 - 1));
	h->path[sp2 - sp1 - 1] = '\0';
	/* a NUL would cut the target short of what was checked */
	if (strlen(h->path) != (size_t)(sp2 - sp1 - 1) || strlen(h->method) != (size_t)(sp1 - p))
		return -1;
	return 0;
}

static int
parse_head(const char *data, size_t len, struct http_req_head *h)
{
	const char	*p = data, *end = data + len, *eol, *colon, *v;
	size_t		 n, vl;
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
		} else if ((colon = memchr(p, ':', n)) != NULL) {
			v = colon + 1;
			while (v < p + n && (*v == ' ' || *v == '\t'))
				v++;
			vl = (size_t)(p + n - v);
			while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
				vl--;
#define HDR(name, field, flen)							\
			if ((size_t)(colon - p) == strlen(name) &&		\
			    strncasecmp(p, name, strlen(name)) == 0) {	\
				h->field = v;					\
				h->flen = vl;					\
			}
			HDR("upgrade", upgrade, upgrade_len)
			HDR("connection", connection, connection_len)
			HDR("sec-websocket-key", key, key_len)
			HDR("sec-websocket-version", version, version_len)
			/* the first Authorization header counts, as in the reference */
			if (h->authz == NULL)
				HDR("authorization", authz, authz_len)
			if ((size_t)(colon - p) == 6 && strncasecmp(p, "origin", 6) == 0)
				h->origin = v;
#undef HDR
		}
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

	if (conf.token == NULL)
		return 0;
	tlen = strlen(conf.token);

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
	return crypto_equal(cand, conf.token, tlen);
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
	return jwt_check(conf.jwt, tok, len, time(NULL));
}

static int
path_is(const char *path, const char *want)
{
	size_t	n = strcspn(path, "?");

	return n == strlen(want) && strncmp(path, want, n) == 0;
}

void
http_upgrade_parse(const char *data, size_t len, int need_auth, struct http_result *r)
{
	struct http_req_head	 h;
	const char		*end, *refusal;
	char			 accept[64];

	memset(r, 0, sizeof(*r));
	end = memmem(data, len, "\r\n\r\n", 4);
	if (end == NULL && (end = memmem(data, len, "\n\n", 2)) == NULL) {
		if (len >= HTTP_HEAD_MAX)
			respond(r, 431, "Request Header Fields Too Large", "",
			    "request header too large");
		else
			r->verdict = HTTP_INCOMPLETE;
		return;
	}
	r->head_len = (size_t)(end - data) + (end[0] == '\r' ? 4 : 2);
	if (parse_head(data, r->head_len, &h) == -1) {
		respond(r, 400, "Bad Request", "", "malformed request");
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
	if (need_auth && conf.jwt != NULL && (refusal = jwt_refusal(&h)) != NULL) {
		respond(r, 401, "Unauthorized", "www-authenticate: Bearer\r\n", refusal);
		return;
	}
	if (need_auth && conf.jwt == NULL && !token_ok(&h)) {
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
	if (h.key == NULL || h.key_len != 24 ||
	    http_ws_accept(h.key, h.key_len, accept, sizeof(accept)) == -1) {
		respond(r, 400, "Bad Request", "", "invalid sec-websocket-key");
		return;
	}
	r->verdict = HTTP_UPGRADE;
	r->status = 101;
	r->resp_len = (size_t)snprintf(r->resp, sizeof(r->resp),
	    "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\n"
	    "connection: upgrade\r\nsec-websocket-accept: %s\r\n\r\n", accept);
}
