/*
 * The decision: host name and port against the allow and deny patterns,
 * then every resolved address against the local/private ranges.  The
 * order follows the reference: deny, local literal, allowlist.
 */
#include "config.h"

#include <arpa/inet.h>

#include <ctype.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "policy/policy.h"

/*
 * Lower case, no surrounding blanks or brackets, no port when there is
 * exactly one colon, no trailing dots, zone "%25x" as "%x".  Control
 * characters and blanks inside are refused.
 */
int
host_normalize(const char *in, size_t len, char *out, size_t outlen)
{
	const char	*end = in + len, *rb, *c;
	size_t		 n, i, o;
	int		 colons = 0;

	while (in < end && isspace((unsigned char)*in))
		in++;
	while (end > in && isspace((unsigned char)end[-1]))
		end--;
	if (in < end && *in == '[') {
		if ((rb = memchr(in, ']', (size_t)(end - in))) == NULL)
			return -1;
		in++;
		end = rb;
	} else {
		for (c = in; c < end; c++)
			colons += *c == ':';
		if (colons == 1)
			end = memchr(in, ':', (size_t)(end - in));
	}
	while (end > in && end[-1] == '.')
		end--;
	n = (size_t)(end - in);
	if (n == 0 || n >= outlen)
		return -1;
	for (i = 0, o = 0; i < n; i++) {
		if ((unsigned char)in[i] <= ' ' || in[i] == 0x7f)
			return -1;
		if (in[i] == '%' && i + 2 < n && in[i + 1] == '2' && in[i + 2] == '5')
			i += 2;
		out[o++] = (char)tolower((unsigned char)in[i]);
	}
	out[o] = '\0';
	return 0;
}

/* An IPv4 or IPv6 literal (zone ignored); 1 and *ss filled, else 0. */
int
host_literal(const char *host, struct sockaddr_storage *ss)
{
	struct sockaddr_in	*sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6	*sin6 = (struct sockaddr_in6 *)ss;
	char			 buf[INET6_ADDRSTRLEN + 1];
	size_t			 n;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		return 1;
	}
	n = strcspn(host, "%");
	if (n >= sizeof(buf))
		return 0;
	memcpy(buf, host, n);
	buf[n] = '\0';
	if (inet_pton(AF_INET6, buf, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		return 1;
	}
	return 0;
}

/* The address alone, no port: "192.0.2.1", "2001:db8::1". */
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

static int
v4_in(uint32_t a, uint32_t net, int bits)
{
	uint32_t mask = bits == 0 ? 0 : 0xffffffffu << (32 - bits);

	return (a & mask) == (net & mask);
}

static int
v4_is_public(uint32_t a)
{
	static const struct {
		uint32_t	net;
		int		bits;
	} priv[] = {
		{ 0x00000000, 8 },	/* "this" network, 0.0.0.0 */
		{ 0x0a000000, 8 },	/* RFC 1918 */
		{ 0x64400000, 10 },	/* CGNAT 100.64/10 */
		{ 0x7f000000, 8 },	/* loopback */
		{ 0xa9fe0000, 16 },	/* link-local, cloud metadata */
		{ 0xac100000, 12 },	/* RFC 1918 */
		{ 0xc0000000, 24 },	/* IETF protocol assignments */
		{ 0xc0000200, 24 },	/* TEST-NET-1 */
		{ 0xc0a80000, 16 },	/* RFC 1918 */
		{ 0xc6120000, 15 },	/* benchmarking */
		{ 0xc6336400, 24 },	/* TEST-NET-2 */
		{ 0xcb007100, 24 },	/* TEST-NET-3 */
		{ 0xe0000000, 4 },	/* multicast */
		{ 0xf0000000, 4 },	/* reserved, broadcast */
	};
	size_t	i;

	for (i = 0; i < sizeof(priv) / sizeof(priv[0]); i++)
		if (v4_in(a, priv[i].net, priv[i].bits))
			return 0;
	return 1;
}

static uint32_t
v6_embedded_v4(const uint8_t *b)
{
	return (uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 | (uint32_t)b[14] << 8 | b[15];
}

static int
v6_is_public(const struct in6_addr *a)
{
	static const uint8_t nat64[12] = { 0x00, 0x64, 0xff, 0x9b };
	const uint8_t	*b = a->s6_addr;
	size_t		 i;
	int		 zero96 = 1;

	for (i = 0; i < 12; i++)
		if (b[i] != 0)
			zero96 = 0;
	if (IN6_IS_ADDR_UNSPECIFIED(a) || IN6_IS_ADDR_LOOPBACK(a))
		return 0;
	/* mapped ::ffff:a.b.c.d, compatible ::a.b.c.d, NAT64 64:ff9b::a.b.c.d */
	if (IN6_IS_ADDR_V4MAPPED(a) || zero96 || memcmp(b, nat64, 12) == 0)
		return v4_is_public(v6_embedded_v4(b));
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
	return 1;
}

int
addr_is_public(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return v4_is_public(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	if (sa->sa_family == AF_INET6)
		return v6_is_public(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return 0;
}

/*
 * "example.com" exact; "*.example.com" subdomains only; "**.example.com"
 * apex and subdomains; "*" everything; other globs with fnmatch(3), where
 * "*" also crosses dots.  Patterns and hosts are both lower case already.
 */
int
pattern_matches(const char *pat, const char *host)
{
	char	glob[PROXY_HOST_MAX + 16];

	if (strcmp(pat, "*") == 0 || strcmp(pat, "**") == 0)
		return 1;
	if (strncmp(pat, "**.", 3) == 0) {
		if (strcmp(pat + 3, host) == 0)
			return 1;
		pat += 1;
	}
	if (strncmp(pat, "*.", 2) == 0) {
		/* at least one character before the dot: the apex is excluded */
		snprintf(glob, sizeof(glob), "?%s", pat);
		return fnmatch(glob, host, 0) == 0;
	}
	if (strpbrk(pat, "*?") != NULL)
		return fnmatch(pat, host, 0) == 0;
	return strcmp(pat, host) == 0;
}

static int
list_matches(char *const *list, size_t n, const char *host)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (pattern_matches(list[i], host))
			return 1;
	return 0;
}

/* An allow entry naming exactly this host, no wildcard. */
static int
exact_allowed(const struct policy *pol, const char *host)
{
	size_t	i;

	for (i = 0; i < pol->nallow; i++)
		if (strpbrk(pol->allow[i], "*?") == NULL && strcmp(pol->allow[i], host) == 0)
			return 1;
	return 0;
}

static int
is_local_name(const char *host)
{
	size_t	n = strlen(host);

	return strcmp(host, "localhost") == 0 ||
	    (n > 10 && strcmp(host + n - 10, ".localhost") == 0);
}

static int
port_allowed(const struct policy *pol, uint16_t port)
{
	size_t	i;

	if (pol->ports == NULL)
		return 1;
	for (i = 0; i < pol->nports; i++)
		if (port >= pol->ports[i].lo && port <= pol->ports[i].hi)
			return 1;
	return 0;
}

static void
verdict_set(struct verdict *v, int allow, const char *reason, const char *source)
{
	v->allow = allow;
	v->reason = reason;
	v->source = source;
}

/* set the verdict and leave the (void) checker */
#define DENY(...)	do { verdict_set(__VA_ARGS__); return; } while (0)

static int
method_is_safe(const char *m)
{
	return strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0 || strcmp(m, "OPTIONS") == 0;
}

void
policy_check_host(const struct policy *pol, const char *source, const char *host,
    int is_literal, const struct sockaddr_storage *lit, uint16_t port,
    const char *method, enum proxy_proto proto, struct verdict *v)
{
	if (!pol->enabled)
		DENY(v, 0, "proxy_disabled", "proxy_state");
	if (list_matches(pol->deny, pol->ndeny, host))
		DENY(v, 0, "denied", source);
	if (!pol->allow_local && (is_local_name(host) ||
	    (is_literal && !addr_is_public((const struct sockaddr *)lit))) &&
	    !exact_allowed(pol, host))
		DENY(v, 0, "not_allowed_local", source);
	if (pol->has_allowlist && !list_matches(pol->allow, pol->nallow, host))
		DENY(v, 0, "not_allowed", source);
	if (!port_allowed(pol, port))
		DENY(v, 0, "port_not_allowed", source);
	switch (proto) {
	case PROTO_HTTP:
		if (pol->mode == MODE_LIMITED && !method_is_safe(method))
			DENY(v, 0, "method_not_allowed", "mode_guard");
		break;
	case PROTO_HTTP_CONNECT:
		/* limited mode needs to see the method: that takes TLS interception */
		if (pol->mode == MODE_LIMITED)
			DENY(v, 0, "mitm_required", "mode_guard");
		break;
	case PROTO_SOCKS5:
		if (!pol->socks5)
			DENY(v, 0, "proxy_disabled", "proxy_state");
		if (pol->mode == MODE_LIMITED)
			DENY(v, 0, "method_not_allowed", "mode_guard");
		break;
	case PROTO_SOCKS5_UDP:
		if (!pol->socks5 || !pol->socks5_udp || pol->mode == MODE_LIMITED)
			DENY(v, 0, "method_not_allowed", "mode_guard");
		break;
	}
	verdict_set(v, 1, "allow", source);
}

/*
 * Must the resolved addresses be vetted?  Always without local access,
 * except for a literal or localhost that an allow entry names exactly
 * (the reference's exception); an ordinary name never escapes the check.
 */
int
policy_wants_addr_check(const struct policy *pol, const char *host)
{
	struct sockaddr_storage	ss;

	if (pol->allow_local)
		return 0;
	if (host_literal(host, &ss) || is_local_name(host))
		return !exact_allowed(pol, host);
	return 1;
}

void
policy_check_addrs(const struct policy *pol, const char *source, const char *host,
    const struct sockaddr_storage *addrs, size_t n, struct verdict *v)
{
	size_t	i;

	if (policy_wants_addr_check(pol, host))
		for (i = 0; i < n; i++)
			if (!addr_is_public((const struct sockaddr *)&addrs[i]))
				DENY(v, 0, "not_allowed_local", source);
	verdict_set(v, 1, "allow", source);
}

/* The x-proxy-error header value the reference sends for a reason. */
const char *
verdict_header(const struct verdict *v)
{
	if (strcmp(v->reason, "not_allowed") == 0 ||
	    strcmp(v->reason, "not_allowed_local") == 0)
		return "blocked-by-allowlist";
	if (strcmp(v->reason, "denied") == 0)
		return "blocked-by-denylist";
	if (strcmp(v->reason, "method_not_allowed") == 0)
		return "blocked-by-method-policy";
	if (strcmp(v->reason, "mitm_required") == 0)
		return "blocked-by-mitm-required";
	return "blocked-by-policy";
}

const char *
verdict_message(const struct verdict *v)
{
	if (strcmp(v->reason, "denied") == 0)
		return "Domain denied by the sandbox policy.";
	if (strcmp(v->reason, "not_allowed") == 0)
		return "Domain not in allowlist.";
	if (strcmp(v->reason, "not_allowed_local") == 0)
		return "Sandbox policy blocks local/private network addresses.";
	if (strcmp(v->reason, "method_not_allowed") == 0)
		return "Method not allowed in limited mode.";
	if (strcmp(v->reason, "mitm_required") == 0)
		return "HTTPS inspection is required in limited mode and is not available.";
	if (strcmp(v->reason, "port_not_allowed") == 0)
		return "Port not allowed by the sandbox policy.";
	if (strcmp(v->reason, "proxy_disabled") == 0)
		return "Network access is disabled by the sandbox policy.";
	return "Request blocked by network policy.";
}
