#include "config.h"

#include <arpa/inet.h>

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "http/http_url.h"
#include "textx.h"

/* Which bytes each URL component percent-encodes (WHATWG "encode sets"). */
enum enc_set {
	ENC_PATH,
	ENC_QUERY,
	ENC_FRAGMENT,
};

static int
must_encode(unsigned char c, enum enc_set set)
{
	if (c < 0x20 || c > 0x7e)
		return 1;
	switch (set) {
	case ENC_QUERY:
		return strchr(" \"#<>'", c) != NULL;
	case ENC_FRAGMENT:
		return strchr(" \"<>`", c) != NULL;
	case ENC_PATH:
		return strchr(" \"#<>?`{}", c) != NULL;
	}
	return 1;
}

static int
append_enc(struct buf *b, const char *s, size_t n, enum enc_set set)
{
	static const char	 hex[] = "0123456789ABCDEF";
	char			 e[3];
	size_t			 i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!must_encode(c, set)) {
			if (buf_append(b, &s[i], 1) == -1)
				return -1;
			continue;
		}
		e[0] = '%';
		e[1] = hex[c >> 4];
		e[2] = hex[c & 15];
		if (buf_append(b, e, 3) == -1)
			return -1;
	}
	return 0;
}

/*
 * Percent-decode n bytes into a new string; undecodable escapes stay.
 * *len, when not NULL, gets the decoded length (%00 decodes to a NUL).
 */
static char *
pct_decode(const char *s, size_t n, size_t *len)
{
	char	*out, *o;
	size_t	 i;

	if ((out = malloc(n + 1)) == NULL)
		return NULL;
	for (i = 0, o = out; i < n; i++) {
		if (s[i] == '%' && i + 2 < n && hex_digit(s[i + 1]) >= 0 &&
		    hex_digit(s[i + 2]) >= 0) {
			*o++ = (char)(hex_digit(s[i + 1]) * 16 + hex_digit(s[i + 2]));
			i += 2;
		} else
			*o++ = s[i];
	}
	*o = '\0';
	if (len != NULL)
		*len = (size_t)(o - out);
	return out;
}

/* WHATWG IPv4 number: decimal, 0x hex or 0 octal. */
static int
ipv4_number(const char *s, size_t n, uint64_t *out)
{
	int		 base = 10;
	uint64_t	 v = 0;
	size_t		 i;
	int		 d;

	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
		n -= 2;
	} else if (n >= 2 && s[0] == '0') {
		base = 8;
		s++;
		n--;
	}
	for (i = 0; i < n; i++) {
		d = hex_digit(s[i]);
		if (d < 0 || d >= base)
			return -1;
		v = v * (uint64_t)base + (uint64_t)d;
		if (v > 0xffffffffULL * 256)
			v = 0xffffffffULL * 256;	/* saturate: too big anyway */
	}
	*out = v;
	return 0;
}

/* Whether the last label is a number, i.e. the host must parse as IPv4. */
static int
ends_in_number(const char *h)
{
	size_t		 n = strlen(h), start, i;
	uint64_t	 v;

	if (n > 0 && h[n - 1] == '.')
		n--;
	start = n;
	while (start > 0 && h[start - 1] != '.')
		start--;
	if (start == n)
		return 0;
	for (i = start; i < n; i++)
		if (!isdigit((unsigned char)h[i]))
			break;
	if (i == n)
		return 1;
	/* otherwise only a 0x number counts */
	return ipv4_number(h + start, n - start, &v) == 0;
}

static int
ipv4_parse(const char *h, char *out, size_t outlen)
{
	uint64_t	 parts[4], v;
	size_t		 n = strlen(h), np = 0, i, start = 0;

	if (n > 0 && h[n - 1] == '.')
		n--;
	for (i = 0; i <= n; i++) {
		if (i < n && h[i] != '.')
			continue;
		if (np == 4 || i == start ||
		    ipv4_number(h + start, i - start, &parts[np]) == -1)
			return -1;
		np++;
		start = i + 1;
	}
	if (np == 0)
		return -1;
	for (i = 0; i + 1 < np; i++)
		if (parts[i] > 255)
			return -1;
	if (parts[np - 1] >= (1ULL << (8 * (5 - np))))
		return -1;
	v = parts[np - 1];
	for (i = 0; i + 1 < np; i++)
		v += parts[i] << (8 * (3 - i));
	snprintf(out, outlen, "%u.%u.%u.%u", (unsigned)(v >> 24) & 255,
	    (unsigned)(v >> 16) & 255, (unsigned)(v >> 8) & 255, (unsigned)v & 255);
	return 0;
}

/* Serialise as the URL Standard does: lower-case hex, longest zero run as "::". */
static int
ipv6_parse(const char *s, size_t n, char *out, size_t outlen)
{
	unsigned char	 a[16];
	char		 tmp[64];
	unsigned	 w[8];
	int		 i, best = -1, bestlen = 1, run, len = 0;

	if (n >= sizeof(tmp))
		return -1;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	if (inet_pton(AF_INET6, tmp, a) != 1)
		return -1;
	for (i = 0; i < 8; i++)
		w[i] = (unsigned)a[2 * i] << 8 | a[2 * i + 1];
	for (i = 0; i < 8; i += run ? run : 1) {
		for (run = 0; i + run < 8 && w[i + run] == 0; run++)
			;
		if (run > bestlen) {
			best = i;
			bestlen = run;
		}
	}
	len += snprintf(out + len, outlen - len, "[");
	for (i = 0; i < 8; i++) {
		if (i == best) {
			len += snprintf(out + len, outlen - len, i == 0 ? "::" : ":");
			i += bestlen - 1;
			continue;
		}
		len += snprintf(out + len, outlen - len, "%x%s", w[i],
		    i < 7 ? ":" : "");
	}
	snprintf(out + len, outlen - len, "]");
	return 0;
}

static int
host_parse(const char *s, size_t n, char *out, size_t outlen, char *err, size_t errlen)
{
	char	*h;
	size_t	 i, hlen;

	if (n > 0 && s[0] == '[') {
		if (n < 2 || s[n - 1] != ']' || ipv6_parse(s + 1, n - 2, out, outlen) == -1) {
			snprintf(err, errlen, "invalid IPv6 address");
			return -1;
		}
		return 0;
	}
	if (n == 0) {
		snprintf(err, errlen, "empty host");
		return -1;
	}
	if ((h = pct_decode(s, n, &hlen)) == NULL)
		return -2;
	for (i = 0; i < hlen; i++) {
		unsigned char c = (unsigned char)h[i];

		if (c <= 0x20 || c == 0x7f || strchr("#%/:<>?@[\\]^|", c) != NULL) {
			snprintf(err, errlen, "invalid international domain name");
			free(h);
			return -1;
		}
		/* non-ASCII (IDN) names go to libcurl as they are */
		if (c < 0x80)
			h[i] = (char)tolower(c);
	}
	if (i == 0 || strlen(h) >= outlen) {
		snprintf(err, errlen, i == 0 ? "empty host" : "invalid international domain name");
		free(h);
		return -1;
	}
	if (ends_in_number(h)) {
		if (ipv4_parse(h, out, outlen) == -1) {
			snprintf(err, errlen, "invalid IPv4 address");
			free(h);
			return -1;
		}
	} else
		snprintf(out, outlen, "%s", h);
	free(h);
	return 0;
}

/* Path segments into out ("/a/b"), resolving "." and "..". */
static int
path_serialise(struct buf *out, const char *p, size_t n)
{
	size_t	*ends = NULL, nseg = 0, i, start, base = out->len;
	int	 rc = -1;

	if ((ends = calloc(n + 2, sizeof(*ends))) == NULL)
		return -1;
	/* p starts at the first '/' (or is empty) */
	start = (n > 0) ? 1 : 0;
	for (i = start; i <= n; i++) {
		int last;

		if (i < n && p[i] != '/')
			continue;
		last = (i == n);
		if (dot_segment(p + start, i - start) == 2) {
			if (nseg > 0)
				out->len = (--nseg == 0) ? base : ends[nseg - 1];
			if (last && buf_append(out, "/", 1) == -1)
				goto done;
			if (last)
				ends[nseg++] = out->len;
		} else if (dot_segment(p + start, i - start) == 1) {
			if (last) {
				if (buf_append(out, "/", 1) == -1)
					goto done;
				ends[nseg++] = out->len;
			}
		} else {
			if (buf_append(out, "/", 1) == -1 ||
			    append_enc(out, p + start, i - start, ENC_PATH) == -1)
				goto done;
			ends[nseg++] = out->len;
		}
		start = i + 1;
	}
	if (out->len == base && buf_append(out, "/", 1) == -1)
		goto done;
	rc = 0;
done:
	free(ends);
	return rc;
}

static char *
buf_cstr(struct buf *b)
{
	char	*s;

	if ((s = malloc(buf_avail(b) + 1)) == NULL)
		return NULL;
	memcpy(s, buf_head(b), buf_avail(b));
	s[buf_avail(b)] = '\0';
	return s;
}

/* Trim C0/space, drop tab and newlines (the URL Standard's first steps). */
static char *
url_clean(const char *in)
{
	size_t	 n = strlen(in), i, j;
	char	*s;

	while (n > 0 && (unsigned char)in[n - 1] <= 0x20)
		n--;
	while (n > 0 && (unsigned char)*in <= 0x20) {
		in++;
		n--;
	}
	if ((s = malloc(n + 1)) == NULL)
		return NULL;
	for (i = j = 0; i < n; i++)
		if (in[i] != '\t' && in[i] != '\n' && in[i] != '\r')
			s[j++] = in[i];
	s[j] = '\0';
	/* before the query, special schemes treat "\" as "/" */
	for (i = 0; s[i] != '\0' && s[i] != '?' && s[i] != '#'; i++)
		if (s[i] == '\\')
			s[i] = '/';
	return s;
}

/* Length of "scheme:" without the colon, 0 when there is none. */
static size_t
scheme_len(const char *s)
{
	size_t	i;

	if (!isalpha((unsigned char)s[0]))
		return 0;
	for (i = 1; isalnum((unsigned char)s[i]) || s[i] == '+' || s[i] == '-' ||
	    s[i] == '.'; i++)
		;
	return s[i] == ':' ? i : 0;
}

/* A relative reference made absolute against base, textually. */
static char *
resolve(const char *ref, const struct http_url *base)
{
	const char	*path = base->target + strlen(base->origin);
	size_t		 plen = strcspn(path, "?"), dir;
	char		*out = NULL;
	int		 n;

	if (ref[0] == '/' && ref[1] == '/')
		n = asprintf(&out, "%s:%s", base->https ? "https" : "http", ref);
	else if (ref[0] == '/')
		n = asprintf(&out, "%s%s", base->origin, ref);
	else if (ref[0] == '?')
		n = asprintf(&out, "%s%.*s%s", base->origin, (int)plen, path, ref);
	else if (ref[0] == '#' || ref[0] == '\0')
		n = asprintf(&out, "%s%s", base->target, ref);
	else {
		for (dir = plen; dir > 0 && path[dir - 1] != '/'; dir--)
			;
		n = asprintf(&out, "%s%.*s%s", base->origin, (int)dir, path, ref);
	}
	return n == -1 ? NULL : out;
}

static enum http_url_status
parse_authority(const char *a, size_t n, struct http_url *u, struct buf *hostport,
    char *err, size_t errlen)
{
	const char	*at = NULL, *hp, *colon = NULL, *p;
	char		 host[300];
	long		 port = -1;
	size_t		 i, hn;

	for (i = 0; i < n; i++)
		if (a[i] == '@')
			at = a + i;
	hp = a;
	if (at != NULL) {
		const char *pc = memchr(a, ':', (size_t)(at - a));
		size_t ulen = pc ? (size_t)(pc - a) : (size_t)(at - a);

		if ((u->user = pct_decode(a, ulen, NULL)) == NULL ||
		    (pc && (u->password = pct_decode(pc + 1,
		    (size_t)(at - pc - 1), NULL)) == NULL))
			return HTTP_URL_NOMEM;
		if (u->user[0] == '\0' && u->password == NULL) {
			free(u->user);
			u->user = NULL;
		} else if (u->password != NULL && u->password[0] == '\0') {
			free(u->password);
			u->password = NULL;
		}
		hp = at + 1;
	}
	hn = n - (size_t)(hp - a);
	for (p = hp; p < hp + hn; p++) {
		if (*p == '[')
			while (p < hp + hn - 1 && *p != ']')
				p++;
		else if (*p == ':') {
			colon = p;
			break;
		}
	}
	if (colon != NULL) {
		if (host_parse(hp, (size_t)(colon - hp), host, sizeof(host), err, errlen) != 0)
			return HTTP_URL_INVALID;
		for (p = colon + 1; p < hp + hn; p++) {
			if (!isdigit((unsigned char)*p) || (port = (port < 0 ? 0 : port) * 10 +
			    (*p - '0')) > 65535) {
				snprintf(err, errlen, "invalid port number");
				return HTTP_URL_INVALID;
			}
		}
	} else if (host_parse(hp, hn, host, sizeof(host), err, errlen) != 0)
		return HTTP_URL_INVALID;
	if (port == (u->https ? 443 : 80))
		port = -1;
	u->port = (int)port;
	if (buf_append(hostport, host, strlen(host)) == -1)
		return HTTP_URL_NOMEM;
	if (port >= 0) {
		snprintf(host, sizeof(host), ":%ld", port);
		if (buf_append(hostport, host, strlen(host)) == -1)
			return HTTP_URL_NOMEM;
	}
	return HTTP_URL_OK;
}

static enum http_url_status
parse_absolute(const char *s, size_t slen, struct http_url *u, char *err, size_t errlen)
{
	struct buf		 b = { 0 };
	enum http_url_status	 rc = HTTP_URL_NOMEM;
	const char		*a, *end, *q, *f;
	size_t			 plen;

	u->https = (slen == 5);
	a = s + slen + 1;
	while (*a == '/')
		a++;
	end = a + strcspn(a, "/?#");
	if (buf_append(&b, u->https ? "https://" : "http://", slen + 3) == -1)
		goto done;
	if ((rc = parse_authority(a, (size_t)(end - a), u, &b, err, errlen)) != HTTP_URL_OK)
		goto done;
	rc = HTTP_URL_NOMEM;
	if ((u->origin = buf_cstr(&b)) == NULL)
		goto done;
	f = strchr(end, '#');
	q = memchr(end, '?', f ? (size_t)(f - end) : strlen(end));
	plen = q ? (size_t)(q - end) : f ? (size_t)(f - end) : strlen(end);
	if (path_serialise(&b, end, plen) == -1)
		goto done;
	if (q != NULL && (buf_append(&b, "?", 1) == -1 ||
	    append_enc(&b, q + 1, f ? (size_t)(f - q - 1) : strlen(q + 1), ENC_QUERY) == -1))
		goto done;
	if ((u->target = buf_cstr(&b)) == NULL)
		goto done;
	if (f != NULL && (buf_append(&b, "#", 1) == -1 ||
	    append_enc(&b, f + 1, strlen(f + 1), ENC_FRAGMENT) == -1))
		goto done;
	if ((u->href = buf_cstr(&b)) == NULL)
		goto done;
	rc = HTTP_URL_OK;
done:
	buf_free(&b);
	return rc;
}

enum http_url_status
http_url_parse(const char *in, const struct http_url *base, struct http_url *u,
    char *err, size_t errlen)
{
	enum http_url_status	 rc;
	char			*s, *abs = NULL;
	size_t			 slen, i;

	memset(u, 0, sizeof(*u));
	u->port = -1;
	if ((s = url_clean(in)) == NULL)
		return HTTP_URL_NOMEM;
	slen = scheme_len(s);
	for (i = 0; i < slen; i++)
		s[i] = (char)tolower((unsigned char)s[i]);
	/* "http:foo" against an http base is relative, as in the URL Standard */
	if (base != NULL && slen > 0 && s[slen + 1] != '/' &&
	    strncmp(s, base->https ? "https" : "http", slen) == 0 &&
	    slen == (base->https ? 5u : 4u))
		abs = resolve(s + slen + 1, base);
	else if (base != NULL && slen == 0)
		abs = resolve(s, base);
	if (abs != NULL) {
		free(s);
		s = abs;
		slen = scheme_len(s);
	} else if (base != NULL && slen == 0) {
		free(s);
		return HTTP_URL_NOMEM;
	}
	if (slen == 0) {
		snprintf(err, errlen, "relative URL without a base");
		rc = HTTP_URL_INVALID;
	} else if ((slen == 4 && strncmp(s, "http", 4) == 0) ||
	    (slen == 5 && strncmp(s, "https", 5) == 0))
		rc = parse_absolute(s, slen, u, err, errlen);
	else {
		snprintf(err, errlen, "%.*s", (int)slen, s);
		rc = HTTP_URL_SCHEME;
	}
	free(s);
	if (rc != HTTP_URL_OK)
		http_url_free(u);
	return rc;
}

int
http_url_same_origin(const struct http_url *a, const struct http_url *b)
{
	return strcmp(a->origin, b->origin) == 0;
}

void
http_url_free(struct http_url *u)
{
	free(u->href);
	free(u->target);
	free(u->origin);
	free(u->user);
	free(u->password);
	memset(u, 0, sizeof(*u));
	u->port = -1;
}
