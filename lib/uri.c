/*
 * file:// URIs as the reference reads them: its URL parser follows the
 * WHATWG URL standard (leading/trailing blanks stripped, tabs and newlines
 * dropped, '\' as a separator, "." / ".." / "%2e" segments resolved before
 * percent-decoding, "localhost" meaning no host); then the path must be a
 * local absolute one (no host, no drive letter, no NUL) and is normalised
 * lexically.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "textx.h"
#include "uri.h"

struct seg {
	const char	*p;
	size_t		 len;
};

struct url {
	char		*clean;		/* the input, blanks stripped */
	char		 host[256];	/* decoded, lower-cased; "" for none */
	struct seg	*segs;		/* room for one per byte of clean */
	size_t		 nsegs;
};

static int
is_sep(int c)
{
	return c == '/' || c == '\\';
}

/* The WHATWG path percent-encode set, plus '%' and '\' so that a path survives a round trip. */
static int
needs_escape(unsigned char c)
{
	return c <= 0x20 || c >= 0x7f || strchr("\"#%<>?\\`{}", c) != NULL;
}

static char *
escape_bytes(char *o, const char *p, size_t len, int keep_percent)
{
	static const char	 hex[] = "0123456789ABCDEF";
	const unsigned char	*s = (const unsigned char *)p;
	size_t			 i;

	for (i = 0; i < len; i++) {
		if (needs_escape(s[i]) && !(keep_percent && s[i] == '%')) {
			*o++ = '%';
			*o++ = hex[s[i] >> 4];
			*o++ = hex[s[i] & 15];
		} else
			*o++ = (char)s[i];
	}
	return o;
}

/*
 * Strip leading and trailing C0 controls and spaces; drop every tab, CR and
 * LF.  A NUL left inside becomes %00, as the URL parser percent-encodes it
 * (in a host, the parser refuses both alike).
 */
static char *
clean_input(const char *in, size_t len)
{
	const char	*b = in, *e = in + len;
	char		*out, *o;

	while (b < e && (unsigned char)*b <= 0x20)
		b++;
	while (e > b && (unsigned char)e[-1] <= 0x20)
		e--;
	if ((out = malloc(3 * (size_t)(e - b) + 1)) == NULL)
		return NULL;
	for (o = out; b < e; b++) {
		if (*b == '\0') {
			memcpy(o, "%00", 3);
			o += 3;
		} else if (*b != '\t' && *b != '\n' && *b != '\r')
			*o++ = *b;
	}
	*o = '\0';
	return out;
}

static int
single_dot(const struct seg *s)
{
	return (s->len == 1 && s->p[0] == '.') ||
	    (s->len == 3 && strncasecmp(s->p, "%2e", 3) == 0);
}

static int
double_dot(const struct seg *s)
{
	return (s->len == 2 && strncmp(s->p, "..", 2) == 0) ||
	    (s->len == 4 && (strncasecmp(s->p, ".%2e", 4) == 0 ||
	    strncasecmp(s->p, "%2e.", 4) == 0)) ||
	    (s->len == 6 && strncasecmp(s->p, "%2e%2e", 6) == 0);
}

/* pre, the client's text, post: however long (jx_err_setn()) */
static void
set_msg(struct jx_err *e, const char *pre, const char *text, const char *post)
{
	char	*m;
	int	 n;

	if ((n = asprintf(&m, "%s%s%s", pre, text, post)) == -1) {
		snprintf(e->msg, sizeof(e->msg), "out of memory");
		return;
	}
	jx_err_setn(e, m, (size_t)n);
	free(m);
}

static int
fail(struct jx_err *e, enum uri_status *st, enum uri_status c, const char *msg)
{
	snprintf(e->msg, sizeof(e->msg), "%s", msg);
	*st = c;
	return -1;
}

/* A file URL's host: percent-decoded, lower-cased, "localhost" is none. */
static int
parse_host(struct url *u, const char *h, size_t len, struct jx_err *e,
    enum uri_status *st)
{
	size_t	i, n = 0;
	int	hi, lo;
	unsigned char c;

	if (len > 0 && h[0] == '[') {
		if (h[len - 1] != ']' || len >= sizeof(u->host))
			return fail(e, st, URI_MALFORMED,
			    "invalid URI: invalid IPv6 address");
		memcpy(u->host, h, len);
		u->host[len] = '\0';
		return 0;
	}
	for (i = 0; i < len; i++) {
		c = (unsigned char)h[i];
		if (c == '%' && i + 2 < len && (hi = hex_digit(h[i + 1])) >= 0 &&
		    (lo = hex_digit(h[i + 2])) >= 0) {
			c = (unsigned char)(hi * 16 + lo);
			i += 2;
		} else if (c == '%')
			return fail(e, st, URI_MALFORMED,
			    "invalid URI: invalid international domain name");
		if (c <= 0x20 || c == 0x7f || strchr("#%/:<>?@[\\]^|", c) != NULL)
			return fail(e, st, URI_MALFORMED,
			    "invalid URI: invalid international domain name");
		if (n + 1 >= sizeof(u->host))
			return fail(e, st, URI_MALFORMED,
			    "invalid URI: domain is too long");
		u->host[n++] = (char)tolower(c);
	}
	u->host[n] = '\0';
	if (strcmp(u->host, "localhost") == 0)
		u->host[0] = '\0';
	return 0;
}

/* The path of a file URL, dot segments resolved; stops at '?' or '#'. */
static const char *
parse_segments(struct url *u, const char *p)
{
	struct seg	 s;
	const char	*start;
	int		 last, push;

	if (is_sep(*p))
		p++;
	for (;;) {
		start = p;
		while (*p != '\0' && !is_sep(*p) && *p != '?' && *p != '#')
			p++;
		s.p = start;
		s.len = (size_t)(p - start);
		last = !is_sep(*p);
		if (double_dot(&s)) {
			if (u->nsegs > 0)
				u->nsegs--;
			s.len = 0;
			push = last;
		} else if (single_dot(&s)) {
			s.len = 0;
			push = last;
		} else
			push = 1;
		if (push)
			u->segs[u->nsegs++] = s;
		if (last)
			return p;
		p++;
	}
}

static size_t
serialized_len(const struct url *u)
{
	size_t	i, n = 8 + strlen(u->host) * 3;

	for (i = 0; i < u->nsegs; i++)
		n += 1 + u->segs[i].len * 3;
	return n + 2;
}

/* The URL as the reference prints it in "... is invalid on 'linux'". */
static char *
serialize(const struct url *u, int upper_drive)
{
	char	*out, *o;
	size_t	 i;

	if ((out = malloc(serialized_len(u))) == NULL)
		return NULL;
	o = stpcpy(out, "file://");
	o = escape_bytes(o, u->host, strlen(u->host), 0);
	if (u->nsegs == 0)
		*o++ = '/';
	for (i = 0; i < u->nsegs; i++) {
		*o++ = '/';
		if (i == 0 && upper_drive) {
			*o++ = (char)toupper((unsigned char)u->segs[0].p[0]);
			o = escape_bytes(o, u->segs[0].p + 1, u->segs[0].len - 1, 1);
		} else
			o = escape_bytes(o, u->segs[i].p, u->segs[i].len, 1);
	}
	*o = '\0';
	return out;
}

static int
invalid_on_linux(const struct url *u, int upper_drive, struct jx_err *e,
    enum uri_status *st, enum uri_status c)
{
	char	*s;

	if ((s = serialize(u, upper_drive)) == NULL)
		return fail(e, st, URI_NOMEM, "out of memory");
	set_msg(e, "'", s, "' is invalid on 'linux'");
	free(s);
	*st = c;
	return -1;
}

/* Join the decoded segments, then drop "." and "//" and resolve "..". */
static char *
decode_path(const struct url *u, int *has_nul)
{
	char	*raw, *o, *out, *seg, *next;
	size_t	 i, j, n = 2;
	int	 hi, lo;

	for (i = 0; i < u->nsegs; i++)
		n += u->segs[i].len + 1;
	if ((raw = malloc(n)) == NULL || (out = malloc(n + 1)) == NULL) {
		free(raw);
		return NULL;
	}
	o = raw;
	*has_nul = 0;
	for (i = 0; i < u->nsegs; i++) {
		*o++ = '/';
		for (j = 0; j < u->segs[i].len; j++) {
			const char *p = u->segs[i].p + j;
			if (*p == '%' && j + 2 < u->segs[i].len &&
			    (hi = hex_digit(p[1])) >= 0 && (lo = hex_digit(p[2])) >= 0) {
				*o = (char)(hi * 16 + lo);
				j += 2;
			} else
				*o = *p;
			if (*o == '\0')
				*has_nul = 1;
			o++;
		}
	}
	*o = '\0';
	if (*has_nul) {
		free(raw);
		free(out);
		return NULL;
	}
	/* lexical normalisation of the decoded path ("%2F" may add separators) */
	out[0] = '\0';
	o = out;
	for (seg = raw; seg != NULL; seg = next) {
		while (*seg == '/')
			seg++;
		if (*seg == '\0')
			break;
		next = strchr(seg, '/');
		n = next ? (size_t)(next - seg) : strlen(seg);
		if (n == 1 && seg[0] == '.')
			;
		else if (n == 2 && seg[0] == '.' && seg[1] == '.') {
			while (o > out && *--o != '/')
				;
			*o = '\0';
		} else {
			*o++ = '/';
			memcpy(o, seg, n);
			o += n;
			*o = '\0';
		}
	}
	if (o == out)
		strcpy(out, "/");
	free(raw);
	return out;
}

/* Schemes whose URLs must have a host (they fail to parse without one). */
static int
special_scheme(const char *s)
{
	return strcmp(s, "http") == 0 || strcmp(s, "https") == 0 || strcmp(s, "ws") == 0 ||
	    strcmp(s, "wss") == 0 || strcmp(s, "ftp") == 0;
}

static int
other_scheme(const char *scheme, const char *rest, struct jx_err *e, enum uri_status *st)
{
	const char	*h, *end, *at;

	if (special_scheme(scheme)) {
		h = rest;
		while (is_sep(*h))
			h++;
		end = h + strcspn(h, "/\\?#");
		for (at = end; at > h && at[-1] != '@'; at--)
			;
		h = at;
		if (end == h || *h == ':')
			return fail(e, st, URI_MALFORMED, "invalid URI: empty host");
	}
	set_msg(e, "unsupported path URI scheme `", scheme, "`");
	*st = URI_MALFORMED;
	return -1;
}

static char *
parse(struct url *u, struct jx_err *e, enum uri_status *st)
{
	char		*scheme;
	const char	*p = u->clean, *rest, *host;
	size_t		 n, i;
	int		 nul = 0;
	char		*path;

	if (!isalpha((unsigned char)*p)) {
		fail(e, st, URI_MALFORMED, "invalid URI: relative URL without a base");
		return NULL;
	}
	while (isalnum((unsigned char)*p) || *p == '+' || *p == '-' || *p == '.')
		p++;
	if (*p != ':') {
		fail(e, st, URI_MALFORMED, "invalid URI: relative URL without a base");
		return NULL;
	}
	n = (size_t)(p - u->clean);
	rest = p + 1;
	if (n != 4 || strncasecmp(u->clean, "file", 4) != 0) {
		/* named whole in the error, however long */
		if ((scheme = strndup(u->clean, n)) == NULL) {
			fail(e, st, URI_NOMEM, "out of memory");
			return NULL;
		}
		for (i = 0; i < n; i++)
			scheme[i] = (char)tolower((unsigned char)scheme[i]);
		other_scheme(scheme, rest, e, st);
		free(scheme);
		return NULL;
	}
	u->host[0] = '\0';
	if (is_sep(rest[0]) && is_sep(rest[1])) {
		host = rest + 2;
		rest = host + strcspn(host, "/\\?#");
		if (parse_host(u, host, (size_t)(rest - host), e, st) == -1)
			return NULL;
	}
	p = parse_segments(u, rest);
	if (*p == '?') {
		fail(e, st, URI_MALFORMED, "query parameters are not allowed in path URIs");
		return NULL;
	}
	if (*p == '#') {
		fail(e, st, URI_MALFORMED, "fragments are not allowed in path URIs");
		return NULL;
	}
	if ((path = decode_path(u, &nul)) == NULL) {
		if (nul)
			invalid_on_linux(u, 0, e, st, URI_MALFORMED);
		else
			fail(e, st, URI_NOMEM, "out of memory");
		return NULL;
	}
	if (u->host[0] != '\0') {
		free(path);
		invalid_on_linux(u, 0, e, st, URI_NOT_LOCAL);
		return NULL;
	}
	if (u->nsegs > 0 && u->segs[0].len == 2 && isalpha((unsigned char)u->segs[0].p[0]) &&
	    u->segs[0].p[1] == ':') {
		free(path);
		invalid_on_linux(u, 1, e, st, URI_NOT_LOCAL);
		return NULL;
	}
	return path;
}

char *
uri_to_path_status(const char *uri, struct jx_err *e, enum uri_status *st)
{
	return uri_to_path_n(uri, strlen(uri), e, st);
}

char *
uri_json_to_path(json_t *str, struct jx_err *e, enum uri_status *st)
{
	return uri_to_path_n(json_string_value(str), json_string_length(str), e, st);
}

char *
uri_to_path_n(const char *uri, size_t len, struct jx_err *e, enum uri_status *st)
{
	struct url	*u;
	char		*path;

	*st = URI_NOMEM;
	if ((u = calloc(1, sizeof(*u))) == NULL || (u->clean = clean_input(uri, len)) == NULL ||
	    (u->segs = calloc(strlen(u->clean) + 2, sizeof(*u->segs))) == NULL) {
		if (u != NULL)
			free(u->clean);
		free(u);
		fail(e, st, URI_NOMEM, "out of memory");
		return NULL;
	}
	if ((path = parse(u, e, st)) != NULL)
		*st = URI_OK;
	free(u->segs);
	free(u->clean);
	free(u);
	return path;
}

char *
uri_to_path(const char *uri, struct jx_err *e)
{
	enum uri_status	st;

	return uri_to_path_status(uri, e, &st);
}

char *
path_to_uri(const char *path)
{
	char	*uri, *o;

	if ((uri = malloc(strlen(path) * 3 + 9)) == NULL)
		return NULL;
	o = stpcpy(uri, "file://");
	if (path[0] != '/')
		*o++ = '/';
	o = escape_bytes(o, path, strlen(path), 0);
	*o = '\0';
	return uri;
}

char *
uri_encode_segment(const char *name)
{
	char	*out, *o;

	if ((out = malloc(strlen(name) * 3 + 1)) == NULL)
		return NULL;
	o = escape_bytes(out, name, strlen(name), 0);
	*o = '\0';
	return out;
}
