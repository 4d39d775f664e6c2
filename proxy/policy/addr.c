/*
 * One reading of a target's host, shared by every protocol and by the
 * policy: a host is either a valid DNS name (letters, digits, '-', '_',
 * labels of 1-63 bytes, 253 in all; IDNs only as punycode) or an IP
 * literal, which becomes an address here, once, and is written back in
 * canonical form.  IPv4 literals must be plain dotted decimal: the legacy
 * spellings a libc or an upstream proxy might read differently (octal
 * 0177.0.0.1, hex 0x7f000001, short 127.1, integer 2130706433) are
 * refused rather than guessed at, so what is checked is what is dialled.
 * Addresses and networks in the policy are compared as addresses, and
 * IPv6 addresses that carry an IPv4 address (mapped, compatible, NAT64,
 * 6to4, Teredo) are also judged as that IPv4 address.
 */
#include "config.h"

#include <arpa/inet.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

#define LABEL_MAX	63

static int
is_name_byte(int ch)
{
	return isascii(ch) && (isalnum(ch) || ch == '-' || ch == '_');
}

/* Would a resolver read this last label as a number (decimal or 0x hex)? */
static int
label_numeric(const char *s, size_t n)
{
	size_t	i = 0;

	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		for (i = 2; i < n; i++)
			if (!isxdigit((unsigned char)s[i]))
				return 0;
		return 1;
	}
	for (i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return 0;
	return n > 0;
}

/* Exactly a.b.c.d, each 0-255 in decimal without leading zeros. */
static int
v4_strict(const char *s, size_t n, struct in_addr *a)
{
	uint32_t	v = 0;
	unsigned	part = 0, parts = 0, digits = 0;
	size_t		i;

	for (i = 0; i <= n; i++) {
		if (i == n || s[i] == '.') {
			if (digits == 0 || parts == 4)
				return 0;
			v = v << 8 | part;
			parts++;
			part = digits = 0;
			continue;
		}
		if (!isdigit((unsigned char)s[i]) || (digits == 1 && part == 0))
			return 0;
		part = part * 10 + (unsigned)(s[i] - '0');
		if (++digits > 3 || part > 255)
			return 0;
	}
	if (parts != 4)
		return 0;
	a->s_addr = htonl(v);
	return 1;
}

static int
v6_parse(const char *s, size_t n, struct in6_addr *a)
{
	char	buf[INET6_ADDRSTRLEN + 1];
	size_t	i;

	if (n == 0 || n >= sizeof(buf))
		return 0;
	for (i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]) && s[i] != ':' && s[i] != '.')
			return 0;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return inet_pton(AF_INET6, buf, a) == 1;
}

void
addr_ntop(const struct sockaddr_storage *ss, char *out, size_t len)
{
	const void	*a;

	if (ss->ss_family == AF_INET)
		a = &((const struct sockaddr_in *)ss)->sin_addr;
	else
		a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
	if (inet_ntop(ss->ss_family, a, out, (socklen_t)len) == NULL)
		snprintf(out, len, "?");
}

/* An address from a wire field (SOCKS5): family AF_INET (4 bytes) or AF_INET6 (16). */
void
addr_from_bytes(int family, const uint8_t *b, struct sockaddr_storage *ss, char *out,
    size_t outlen)
{
	memset(ss, 0, sizeof(*ss));
	ss->ss_family = (sa_family_t)family;
	if (family == AF_INET)
		memcpy(&((struct sockaddr_in *)ss)->sin_addr, b, 4);
	else
		memcpy(&((struct sockaddr_in6 *)ss)->sin6_addr, b, 16);
	addr_ntop(ss, out, outlen);
}

/* A DNS name, already free of a trailing dot; lower-cased into out. */
static int
name_parse(const char *in, size_t n, char *out, size_t outlen)
{
	size_t	i, label = 0;

	if (n == 0 || n > PROXY_HOST_MAX || n >= outlen)
		return -1;
	for (i = 0; i < n; i++) {
		if (in[i] == '.') {
			if (label == 0)
				return -1;
			label = 0;
		} else if (!is_name_byte((unsigned char)in[i]) || ++label > LABEL_MAX)
			return -1;
		out[i] = (char)tolower((unsigned char)in[i]);
	}
	if (label == 0)
		return -1;
	out[n] = '\0';
	return 0;
}

/*
 * The host of a target, as written in a URL authority (IPv6 in brackets),
 * a SOCKS5 name or a pattern: HOST_NAME with the name lower-cased in out,
 * HOST_ADDR with *ss filled and its canonical text in out, or -1.
 */
int
host_parse(const char *in, size_t n, char *out, size_t outlen, struct sockaddr_storage *ss)
{
	struct sockaddr_in	*sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6	*sin6 = (struct sockaddr_in6 *)ss;
	const char		*last;

	memset(ss, 0, sizeof(*ss));
	if (n > 0 && in[0] == '[') {
		if (n < 2 || in[n - 1] != ']' || !v6_parse(in + 1, n - 2, &sin6->sin6_addr))
			return -1;
		sin6->sin6_family = AF_INET6;
		addr_ntop(ss, out, outlen);
		return HOST_ADDR;
	}
	if (memchr(in, ':', n) != NULL) {
		if (!v6_parse(in, n, &sin6->sin6_addr))
			return -1;
		sin6->sin6_family = AF_INET6;
		addr_ntop(ss, out, outlen);
		return HOST_ADDR;
	}
	if (n > 1 && in[n - 1] == '.')
		n--;			/* the root: "example.com." is "example.com" */
	for (last = in + n; last > in && last[-1] != '.'; last--)
		;
	if (label_numeric(last, (size_t)(in + n - last))) {
		if (!v4_strict(in, n, &sin->sin_addr))
			return -1;
		sin->sin_family = AF_INET;
		addr_ntop(ss, out, outlen);
		return HOST_ADDR;
	}
	return name_parse(in, n, out, outlen) == 0 ? HOST_NAME : -1;
}

/* ----------------------------------------------------------- networks */

/* "192.0.2.0/24", "2001:db8::/32", "[2001:db8::1]", "8.8.8.8"; 0 or -1. */
int
addr_net_parse(const char *s, struct addr_net *net)
{
	struct sockaddr_storage	 ss;
	char			 text[INET6_ADDRSTRLEN + 2];
	const char		*slash = strchr(s, '/');
	size_t			 hl = slash ? (size_t)(slash - s) : strlen(s), i;
	unsigned		 bits = 0, max;

	memset(net, 0, sizeof(*net));
	if (host_parse(s, hl, text, sizeof(text), &ss) != HOST_ADDR)
		return -1;
	net->family = ss.ss_family;
	if (ss.ss_family == AF_INET)
		memcpy(net->a, &((struct sockaddr_in *)&ss)->sin_addr, 4);
	else
		memcpy(net->a, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
	max = ss.ss_family == AF_INET ? 32 : 128;
	if (slash == NULL) {
		net->bits = max;
		return 0;
	}
	slash++;
	if (*slash == '\0' || strlen(slash) > 3 || (slash[0] == '0' && slash[1] != '\0'))
		return -1;
	for (i = 0; slash[i] != '\0'; i++) {
		if (!isdigit((unsigned char)slash[i]))
			return -1;
		bits = bits * 10 + (unsigned)(slash[i] - '0');
	}
	if (bits > max)
		return -1;
	net->bits = bits;
	/* host bits set would be a typo for a different network: refuse it */
	for (i = bits; i < max; i++)
		if (net->a[i / 8] & (0x80 >> (i % 8)))
			return -1;
	return 0;
}

static int
prefix_eq(const uint8_t *a, const uint8_t *b, unsigned bits)
{
	unsigned	full = bits / 8, rest = bits % 8;
	uint8_t		mask;

	if (memcmp(a, b, full) != 0)
		return 0;
	if (rest == 0)
		return 1;
	mask = (uint8_t)(0xff << (8 - rest));
	return (a[full] & mask) == (b[full] & mask);
}

/*
 * The IPv4 addresses an IPv6 address carries: mapped ::ffff:0:0/96,
 * compatible ::/96, NAT64 64:ff9b::/96, 6to4 2002::/16 and Teredo
 * 2001::/32, whose client address is the complement of the last 32 bits.
 * Returns how many were written to v4 (network order bytes, 4 each).
 */
static size_t
v6_embedded(const uint8_t *b, uint8_t v4[][4])
{
	static const uint8_t	mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const uint8_t	zero[12];
	static const uint8_t	nat64[12] = { 0x00, 0x64, 0xff, 0x9b };
	size_t			n = 0, i;

	if (memcmp(b, mapped, 12) == 0 || memcmp(b, zero, 12) == 0 ||
	    memcmp(b, nat64, 12) == 0)
		memcpy(v4[n++], b + 12, 4);
	else if (b[0] == 0x20 && b[1] == 0x02)
		memcpy(v4[n++], b + 2, 4);
	else if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0) {
		for (i = 0; i < 4; i++)
			v4[n][i] = (uint8_t)~b[12 + i];
		n++;
	}
	return n;
}

/*
 * Is sa inside net?  loose: an IPv6 address is also inside an IPv4
 * network when an IPv4 address it carries is (deny entries); otherwise
 * only the mapped form ::ffff:a.b.c.d counts as its IPv4 address.
 */
int
addr_net_match(const struct addr_net *net, const struct sockaddr *sa, int loose)
{
	static const uint8_t	 mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	const uint8_t		*b;
	uint8_t			 v4[2][4], m6[16];
	size_t			 n, i;

	if (sa->sa_family == AF_INET) {
		b = (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr;
		if (net->family == AF_INET)
			return prefix_eq(net->a, b, net->bits);
		memcpy(m6, mapped, 12);
		memcpy(m6 + 12, b, 4);
		return prefix_eq(net->a, m6, net->bits);
	}
	if (sa->sa_family != AF_INET6)
		return 0;
	b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
	if (net->family == AF_INET6)
		return prefix_eq(net->a, b, net->bits);
	if (!loose)
		return memcmp(b, mapped, 12) == 0 && prefix_eq(net->a, b + 12, net->bits);
	n = v6_embedded(b, v4);
	for (i = 0; i < n; i++)
		if (prefix_eq(net->a, v4[i], net->bits))
			return 1;
	return 0;
}

/* ------------------------------------------------- local and private */

static int
v4_is_public(const uint8_t *b)
{
	static const struct {
		uint8_t		net[4];
		unsigned	bits;
	} priv[] = {
		{ { 0, 0, 0, 0 }, 8 },		/* "this" network, 0.0.0.0 */
		{ { 10, 0, 0, 0 }, 8 },		/* RFC 1918 */
		{ { 100, 64, 0, 0 }, 10 },	/* CGNAT */
		{ { 127, 0, 0, 0 }, 8 },	/* loopback */
		{ { 169, 254, 0, 0 }, 16 },	/* link-local, cloud metadata */
		{ { 172, 16, 0, 0 }, 12 },	/* RFC 1918 */
		{ { 192, 0, 0, 0 }, 24 },	/* IETF protocol assignments */
		{ { 192, 0, 2, 0 }, 24 },	/* TEST-NET-1 */
		{ { 192, 168, 0, 0 }, 16 },	/* RFC 1918 */
		{ { 198, 18, 0, 0 }, 15 },	/* benchmarking */
		{ { 198, 51, 100, 0 }, 24 },	/* TEST-NET-2 */
		{ { 203, 0, 113, 0 }, 24 },	/* TEST-NET-3 */
		{ { 224, 0, 0, 0 }, 4 },	/* multicast */
		{ { 240, 0, 0, 0 }, 4 },	/* reserved, broadcast */
	};
	size_t	i;

	for (i = 0; i < sizeof(priv) / sizeof(priv[0]); i++)
		if (prefix_eq(priv[i].net, b, priv[i].bits))
			return 0;
	return 1;
}

static int
v6_is_public(const struct in6_addr *a)
{
	const uint8_t	*b = a->s6_addr;
	uint8_t		 v4[2][4];
	size_t		 n, i;

	if (IN6_IS_ADDR_UNSPECIFIED(a) || IN6_IS_ADDR_LOOPBACK(a))
		return 0;
	n = v6_embedded(b, v4);
	for (i = 0; i < n; i++)
		if (!v4_is_public(v4[i]))
			return 0;
	if (b[0] == 0xff)			/* multicast */
		return 0;
	if ((b[0] & 0xfe) == 0xfc)		/* ULA fc00::/7 */
		return 0;
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)	/* link-local fe80::/10 */
		return 0;
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0)	/* site-local fec0::/10 */
		return 0;
	if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8)
		return 0;			/* documentation 2001:db8::/32 */
	if (b[0] == 0x01 && b[1] == 0 && b[2] == 0 && b[3] == 0 &&
	    b[4] == 0 && b[5] == 0 && b[6] == 0 && b[7] == 0)
		return 0;			/* discard 100::/64 */
	/*
	 * Local-use NAT64 64:ff9b:1::/48 (RFC 8215): a site's own translator,
	 * which reaches its private IPv4 networks; where the IPv4 address
	 * sits depends on the site's prefix length, so the whole prefix.
	 */
	if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b &&
	    b[4] == 0x00 && b[5] == 0x01)
		return 0;
	if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x00 && b[3] == 0x02 &&
	    b[4] == 0x00 && b[5] == 0x00)
		return 0;			/* benchmarking 2001:2::/48 */
	if (b[0] == 0x3f && b[1] == 0xff && (b[2] & 0xf0) == 0)
		return 0;			/* documentation 3fff::/20 */
	if (b[0] == 0x5f && b[1] == 0x00)
		return 0;			/* SRv6 SIDs 5f00::/16 */
	return 1;
}

/*
 * 0.0.0.0, :: or ::ffff:0.0.0.0: connect(2) takes these to this host
 * itself, to whatever listens on the loopback.
 */
int
addr_is_unspecified(const struct sockaddr *sa)
{
	static const uint8_t	 mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const uint8_t	 zero[16];
	const uint8_t		*b;

	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == INADDR_ANY;
	if (sa->sa_family != AF_INET6)
		return 0;
	b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
	return memcmp(b, zero, 16) == 0 ||
	    (memcmp(b, mapped, 12) == 0 && memcmp(b + 12, zero, 4) == 0);
}

int
addr_is_public(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return v4_is_public((const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr);
	if (sa->sa_family == AF_INET6)
		return v6_is_public(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return 0;
}
