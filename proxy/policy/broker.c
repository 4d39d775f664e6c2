/*
 * Brokered credentials of one registration: the process holds a dummy in
 * its environment, and a request to one of the provider's URL prefixes
 * leaves with the real value wherever the dummy stands in a header value.
 * Anywhere else the dummy goes out as it is, so the real value reaches
 * only the hosts its owner named.  The real values live here and nowhere
 * else in the proxy (never logged, never audited) and are wiped on free.
 */
#include "config.h"

#include <arpa/inet.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "b64.h"
#include "buf.h"
#include "policy/policy.h"

#define BROKER_RULES_MAX	64
#define BROKER_PREFIXES_MAX	16
#define BROKER_VALUE_MAX	4096

struct broker_prefix {
	int		 https;
	int		 wildcard;	/* "*.host": names under host, not host itself */
	char		 host[256];	/* lower case */
	unsigned	 port;
	char		*path;		/* starts with '/' */
};

struct broker_rule {
	char			*dummy, *real;
	size_t			 dlen, rlen;
	struct broker_prefix	*prefixes;
	size_t			 nprefixes;
	int			 basic;	/* swap it inside Authorization: Basic too */
};

struct broker {
	struct broker_rule	*rules;
	size_t			 nrules;
};

/*
 * An IPv6 literal's text (between the brackets) into host as the proxy
 * names a connection's address (inet_ntop), so "[0::1]" matches "::1".
 */
static int
v6_host(const char *s, size_t len, char *host, size_t hostlen)
{
	struct in6_addr	a6;
	char		v6[INET6_ADDRSTRLEN];

	if (len == 0 || len >= sizeof(v6))
		return -1;
	memcpy(v6, s, len);
	v6[len] = '\0';
	if (inet_pton(AF_INET6, v6, &a6) != 1 ||
	    inet_ntop(AF_INET6, &a6, host, (socklen_t)hostlen) == NULL)
		return -1;
	return 0;
}

static int
prefix_parse(const char *s, struct broker_prefix *p)
{
	const char	*a, *slash, *colon;
	unsigned long	 port;
	char		*end;
	size_t		 i, hlen;

	memset(p, 0, sizeof(*p));
	if (strncasecmp(s, "https://", 8) == 0) {
		p->https = 1;
		a = s + 8;
	} else if (strncasecmp(s, "http://", 7) == 0)
		a = s + 7;
	else
		return -1;
	if (a[0] == '*' && a[1] == '.') {
		p->wildcard = 1;
		a += 2;
	}
	slash = strchr(a, '/');
	if (slash == NULL)
		slash = a + strlen(a);
	if (a[0] == '[') {
		if (p->wildcard || (colon = memchr(a, ']', (size_t)(slash - a))) == NULL ||
		    v6_host(a + 1, (size_t)(colon - a - 1), p->host, sizeof(p->host)) == -1)
			return -1;
		if (++colon == slash)
			colon = NULL;
		else if (*colon != ':')
			return -1;
	} else {
		colon = memchr(a, ':', (size_t)(slash - a));
		hlen = (size_t)((colon ? colon : slash) - a);
		if (hlen == 0 || hlen >= sizeof(p->host) || memchr(a, '@', (size_t)(slash - a)) ||
		    memchr(a, '[', hlen) || memchr(a, '*', hlen) ||
		    memchr(a, '?', (size_t)(slash - a)))
			return -1;
		for (i = 0; i < hlen; i++)
			p->host[i] = (char)tolower((unsigned char)a[i]);
	}
	p->port = p->https ? 443 : 80;
	if (colon != NULL) {
		port = strtoul(colon + 1, &end, 10);
		if (end != slash || port == 0 || port > 65535)
			return -1;
		p->port = (unsigned)port;
	}
	p->path = strdup(*slash ? slash : "/");
	return p->path == NULL ? -1 : 0;
}

static int
rule_parse(json_t *o, struct broker_rule *r, char *err, size_t errlen)
{
	json_t		*pre, *v;
	const char	*dummy, *real;
	size_t		 i;

	dummy = json_string_value(json_object_get(o, "dummy"));
	real = json_string_value(json_object_get(o, "real"));
	pre = json_object_get(o, "url_prefixes");
	r->basic = json_is_true(json_object_get(o, "basic"));
	if (dummy == NULL || real == NULL || !json_is_array(pre) || json_array_size(pre) == 0 ||
	    json_array_size(pre) > BROKER_PREFIXES_MAX) {
		snprintf(err, errlen, "a brokered credential needs dummy, real and url_prefixes");
		return -1;
	}
	r->dlen = strlen(dummy);
	r->rlen = strlen(real);
	if (r->dlen < 8 || r->dlen > BROKER_VALUE_MAX || r->rlen == 0 ||
	    r->rlen > BROKER_VALUE_MAX || strpbrk(real, "\r\n") != NULL) {
		snprintf(err, errlen, "a brokered credential's values are malformed");
		return -1;
	}
	if ((r->dummy = strdup(dummy)) == NULL || (r->real = strdup(real)) == NULL ||
	    (r->prefixes = calloc(json_array_size(pre), sizeof(*r->prefixes))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	json_array_foreach(pre, i, v) {
		if (!json_is_string(v) || prefix_parse(json_string_value(v),
		    &r->prefixes[r->nprefixes]) == -1) {
			snprintf(err, errlen, "a brokered credential's URL prefix is not an "
			    "http or https URL");
			return -1;
		}
		r->nprefixes++;
	}
	return 0;
}

struct broker *
broker_from_json(json_t *arr, char *err, size_t errlen)
{
	struct broker	*b;
	json_t		*o;
	size_t		 i;

	if (!json_is_array(arr) || json_array_size(arr) > BROKER_RULES_MAX) {
		snprintf(err, errlen, "brokered must be an array of at most %d credentials",
		    BROKER_RULES_MAX);
		return NULL;
	}
	if ((b = calloc(1, sizeof(*b))) == NULL ||
	    (b->rules = calloc(json_array_size(arr) + 1, sizeof(*b->rules))) == NULL) {
		free(b);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	json_array_foreach(arr, i, o) {
		b->nrules++;
		if (!json_is_object(o) || rule_parse(o, &b->rules[i], err, errlen) == -1) {
			if (!json_is_object(o))
				snprintf(err, errlen, "a brokered credential must be an object");
			broker_free(b);
			return NULL;
		}
	}
	return b;
}

void
broker_free(struct broker *b)
{
	struct broker_rule	*r;
	size_t			 i, j;

	if (b == NULL)
		return;
	for (i = 0; i < b->nrules; i++) {
		r = &b->rules[i];
		if (r->real != NULL)
			OPENSSL_cleanse(r->real, r->rlen);
		free(r->real);
		free(r->dummy);
		for (j = 0; j < r->nprefixes; j++)
			free(r->prefixes[j].path);
		free(r->prefixes);
	}
	free(b->rules);
	free(b);
}

static int
host_matches(const struct broker_prefix *p, const char *host)
{
	size_t	hl = strlen(host), pl = strlen(p->host);

	if (!p->wildcard)
		return strcasecmp(p->host, host) == 0;
	return hl > pl + 1 && host[hl - pl - 1] == '.' && strcasecmp(host + hl - pl, p->host) == 0;
}

static int
prefix_matches(const struct broker_prefix *p, int https, const char *host, unsigned port,
    const char *path, size_t plen)
{
	if (p->https != https || p->port != port || !host_matches(p, host))
		return 0;
	return path == NULL || broker_path_under(p->path, path, plen);
}

static int
rule_matches(const struct broker_rule *r, int https, const char *host, unsigned port,
    const char *path, size_t plen)
{
	size_t	i;

	for (i = 0; i < r->nprefixes; i++)
		if (prefix_matches(&r->prefixes[i], https, host, port, path, plen))
			return 1;
	return 0;
}

/* Does some credential go to this HTTPS origin (its tunnel must then be inspected)? */
int
broker_wants_host(const struct broker *b, const char *host, unsigned port)
{
	size_t	i;

	for (i = 0; b != NULL && i < b->nrules; i++)
		if (rule_matches(&b->rules[i], 1, host, port, NULL, 0))
			return 1;
	return 0;
}

int
broker_has_https(const struct broker *b)
{
	size_t	i, j;

	for (i = 0; b != NULL && i < b->nrules; i++)
		for (j = 0; j < b->rules[i].nprefixes; j++)
			if (b->rules[i].prefixes[j].https)
				return 1;
	return 0;
}

/* line with the rule's dummy replaced everywhere in the value, CRLF added; -1 no memory */
static int
append_replaced(struct buf *out, const char *line, size_t len, const struct broker_rule *r)
{
	const char	*p = line, *end = line + len, *hit;

	while ((hit = memmem(p, (size_t)(end - p), r->dummy, r->dlen)) != NULL) {
		if (buf_append(out, p, (size_t)(hit - p)) == -1 ||
		    buf_append(out, r->real, r->rlen) == -1)
			return -1;
		p = hit + r->dlen;
	}
	if (buf_append(out, p, (size_t)(end - p)) == -1 || buf_append(out, "\r\n", 2) == -1)
		return -1;
	return 0;
}

/* a copy of len bytes wiped before it is freed */
static void
wipe_free(void *p, size_t len)
{
	if (p != NULL)
		OPENSSL_cleanse(p, len);
	free(p);
}

/*
 * user:password decoded from Basic with the dummy, where it is the whole
 * pair, the user or the password, replaced by the real value (as the
 * reference translates Basic).  NULL when the dummy is not there.
 */
static char *
basic_swap(const struct broker_rule *r, const unsigned char *dec, size_t dlen, size_t *outlen)
{
	const unsigned char	*sep;
	size_t			 ulen, plen;
	int			 u, pw;
	char			*out;

	if (dlen == r->dlen && memcmp(dec, r->dummy, dlen) == 0) {
		*outlen = r->rlen;
		return strndup(r->real, r->rlen);
	}
	if ((sep = memchr(dec, ':', dlen)) == NULL)
		return NULL;
	ulen = (size_t)(sep - dec);
	plen = dlen - ulen - 1;
	u = ulen == r->dlen && memcmp(dec, r->dummy, ulen) == 0;
	pw = plen == r->dlen && memcmp(sep + 1, r->dummy, plen) == 0;
	if (!u && !pw)
		return NULL;
	*outlen = (u ? r->rlen : ulen) + 1 + (pw ? r->rlen : plen);
	if ((out = malloc(*outlen + 1)) == NULL)
		return NULL;
	memcpy(out, u ? r->real : (const char *)dec, u ? r->rlen : ulen);
	out[u ? r->rlen : ulen] = ':';
	memcpy(out + (u ? r->rlen : ulen) + 1, pw ? r->real : (const char *)sep + 1,
	    pw ? r->rlen : plen);
	out[*outlen] = '\0';
	return out;
}

/* "Authorization: Basic <b64>": where the base64 starts and its length, or 0 */
static int
basic_value(const char *line, size_t len, size_t *start, size_t *blen)
{
	size_t	i = 14;

	if (len < 14 || strncasecmp(line, "authorization:", 14) != 0)
		return 0;
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	if (len - i < 6 || strncasecmp(line + i, "basic ", 6) != 0)
		return 0;
	for (i += 6; i < len && (line[i] == ' ' || line[i] == '\t'); i++)
		;
	*start = i;
	for (*blen = len - i; *blen > 0 && (line[i + *blen - 1] == ' ' ||
	    line[i + *blen - 1] == '\t'); (*blen)--)
		;
	return *blen > 0;
}

/* The Basic line with the dummy swapped (and CRLF) into out: 1; 0 not there; -1 no memory. */
static int
append_basic(struct buf *out, const char *line, size_t len, const struct broker_rule *r)
{
	unsigned char	*dec;
	char		*swapped, *enc, err[64];
	size_t		 start, blen, dlen, slen = 0, elen = 0;
	int		 rc;

	if (!basic_value(line, len, &start, &blen) ||
	    (dec = b64_decode(line + start, blen, &dlen, err, sizeof(err))) == NULL)
		return 0;
	swapped = basic_swap(r, dec, dlen, &slen);
	wipe_free(dec, dlen);
	if (swapped == NULL)
		return 0;
	enc = b64_encode(swapped, slen, &elen);
	wipe_free(swapped, slen);
	if (enc == NULL)
		return -1;
	rc = buf_append(out, line, start) == -1 || buf_append(out, enc, elen) == -1 ||
	    buf_append(out, "\r\n", 2) == -1 ? -1 : 1;
	wipe_free(enc, elen);
	return rc;
}

/*
 * One header line of a request to scheme://host:port/path: if a credential
 * for that URL has its dummy in the line's value, append the line with the
 * real value (and CRLF) to out and return 1; 0: the caller keeps the line.
 * A dummy in the header's name is left alone.  A credential whose
 * provider authenticates with Basic is also found inside the base64 of
 * "Authorization: Basic" (as the pair, the user or the password) and the
 * pair is encoded again with the real value.
 */
int
broker_rewrite_line(const struct broker *b, int https, const char *host, unsigned port,
    const char *path, size_t plen, const char *line, size_t len, struct buf *out)
{
	const struct broker_rule	*r;
	const char			*colon;
	size_t				 i, vlen;
	int				 rc;

	if (b == NULL || (colon = memchr(line, ':', len)) == NULL)
		return 0;
	vlen = len - (size_t)(colon + 1 - line);
	for (i = 0; i < b->nrules; i++) {
		r = &b->rules[i];
		if (!rule_matches(r, https, host, port, path, plen))
			continue;
		if (memmem(colon + 1, vlen, r->dummy, r->dlen) != NULL)
			return append_replaced(out, line, len, r) == -1 ? -1 : 1;
		if (r->basic && (rc = append_basic(out, line, len, r)) != 0)
			return rc;
	}
	return 0;
}
