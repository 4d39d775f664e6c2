/*
 * A credential provider's destination (an entry of url_prefixes, or the
 * value of its url_prefix_from_env variable), read as the reference reads
 * it: surrounding blanks trimmed; the scheme optional (https, or http for
 * a loopback host); http only for loopback; "*." before the host for any
 * name under it; no user information, query or fragment; the path a
 * prefix ("/" when absent).  What the reference accepts and rejects was
 * probed against codex exec-server 0.169.0 (tests/credmask.py).
 */
#include "config.h"

#include <arpa/inet.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "netproxy/netproxy_mask.h"

/* host[len] into d->host, lower case, without a trailing dot; -1 if malformed */
static int
set_host(struct mask_dest *d, const char *host, size_t len)
{
	struct in6_addr	a6;
	char		v6[64];
	size_t		i;

	if (len > 0 && host[0] == '[') {
		if (len < 3 || host[len - 1] != ']' || len - 2 >= sizeof(v6))
			return -1;
		memcpy(v6, host + 1, len - 2);
		v6[len - 2] = '\0';
		/* the form execd-proxy names the connection's address in */
		if (d->wildcard || inet_pton(AF_INET6, v6, &a6) != 1 ||
		    inet_ntop(AF_INET6, &a6, d->host, sizeof(d->host)) == NULL)
			return -1;
		return 0;
	}
	while (len > 0 && host[len - 1] == '.')
		len--;
	if (len == 0 || len >= sizeof(d->host))
		return -1;
	for (i = 0; i < len; i++) {
		if (!isalnum((unsigned char)host[i]) && strchr("-._", host[i]) == NULL)
			return -1;	/* '*', '%', blanks, ... */
		d->host[i] = (char)tolower((unsigned char)host[i]);
	}
	d->host[len] = '\0';
	return 0;
}

/* authority "host[:port]"; -1 if malformed */
static int
set_authority(struct mask_dest *d, const char *a, size_t len)
{
	const char	*colon = NULL, *q;
	unsigned long	 port = 0;
	char		*end, num[8];

	if (memchr(a, '@', len) != NULL)
		return -1;
	if (len > 0 && a[0] == '[') {
		if ((q = memchr(a, ']', len)) == NULL)
			return -1;
		if (q + 1 < a + len)
			colon = q + 1;
		if (colon != NULL && *colon != ':')
			return -1;
	} else
		colon = memchr(a, ':', len);
	if (set_host(d, a, colon ? (size_t)(colon - a) : len) == -1)
		return -1;
	d->port = 0;
	if (colon != NULL && colon + 1 < a + len) {
		if ((size_t)(a + len - colon - 1) >= sizeof(num))
			return -1;
		memcpy(num, colon + 1, (size_t)(a + len - colon - 1));
		num[a + len - colon - 1] = '\0';
		port = strtoul(num, &end, 10);
		if (*end != '\0' || !isdigit((unsigned char)num[0]) || port > 65535)
			return -1;
		d->port = (unsigned)port;
	}
	return 0;
}

static int
ipv4(const char *host, unsigned char b[4])
{
	struct in_addr	a;

	if (inet_pton(AF_INET, host, &a) != 1)
		return 0;
	memcpy(b, &a, 4);
	return 1;
}

static int
loopback(const struct mask_dest *d)
{
	unsigned char	b[4];
	struct in6_addr	a6;

	if (d->wildcard)
		return 0;
	if (strcmp(d->host, "localhost") == 0)
		return 1;
	if (ipv4(d->host, b))
		return b[0] == 127;
	return inet_pton(AF_INET6, d->host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

int
mask_dest_parse(const char *s, struct mask_dest *d)
{
	const char	*sep, *auth, *end, *path;
	size_t		 n, slen;
	int		 scheme = 0;	/* 0 none, 1 https, 2 http */

	memset(d, 0, sizeof(*d));
	while (*s == ' ' || (*s >= '\t' && *s <= '\r'))
		s++;
	slen = strlen(s);
	while (slen > 0 && (s[slen - 1] == ' ' || (s[slen - 1] >= '\t' && s[slen - 1] <= '\r')))
		slen--;
	end = s + slen;
	auth = s;
	if ((sep = strstr(s, "://")) != NULL && sep < end) {
		if ((size_t)(sep - s) == 5 && strncasecmp(s, "https", 5) == 0)
			scheme = 1;
		else if ((size_t)(sep - s) == 4 && strncasecmp(s, "http", 4) == 0)
			scheme = 2;
		else
			return -1;
		auth = sep + 3;
	}
	if (end - auth >= 2 && auth[0] == '*' && auth[1] == '.') {
		d->wildcard = 1;
		auth += 2;
	}
	n = strcspn(auth, "/?#");
	if (auth + n > end)
		n = (size_t)(end - auth);
	path = auth + n;
	if (memchr(path, '?', (size_t)(end - path)) || memchr(path, '#', (size_t)(end - path)) ||
	    set_authority(d, auth, n) == -1 || (size_t)(end - path) >= sizeof(d->path))
		return -1;
	if (path < end)
		memcpy(d->path, path, (size_t)(end - path));
	else
		d->path[0] = '/';
	if (scheme == 2 && !loopback(d))
		return -1;	/* http only for loopback */
	d->https = scheme == 1 || (scheme == 0 && !loopback(d));
	if (d->port == 0)
		d->port = d->https ? 443 : 80;
	return 0;
}

/* The default NO_PROXY's hosts: 127.0.0.1, private IPv4, ::1, localhost and under it. */
int
mask_dest_bypasses(const struct mask_dest *d)
{
	unsigned char	b[4];
	struct in6_addr	a6;
	size_t		n = strlen(d->host);

	if (ipv4(d->host, b))
		return !d->wildcard && ((b[0] == 127 && b[1] == 0 && b[2] == 0 && b[3] == 1) ||
		    b[0] == 10 || (b[0] == 172 && (b[1] & 0xf0) == 16) ||
		    (b[0] == 192 && b[1] == 168));
	if (inet_pton(AF_INET6, d->host, &a6) == 1)
		return !d->wildcard && IN6_IS_ADDR_LOOPBACK(&a6);
	return strcmp(d->host, "localhost") == 0 ||
	    (n > 10 && strcmp(d->host + n - 10, ".localhost") == 0);
}

int
mask_dest_url(const struct mask_dest *d, char *out, size_t outlen)
{
	int	n, v6 = strchr(d->host, ':') != NULL;	/* bracketed in a URL */

	n = snprintf(out, outlen, "%s://%s%s%s%s:%u%s", d->https ? "https" : "http",
	    d->wildcard ? "*." : "", v6 ? "[" : "", d->host, v6 ? "]" : "", d->port, d->path);
	return n < 0 || (size_t)n >= outlen ? -1 : 0;
}
