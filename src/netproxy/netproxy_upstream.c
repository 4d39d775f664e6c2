/*
 * --tcp-upstream-proxy HOST:PORT, as 0.171.0 means it: "Require this HTTP
 * CONNECT proxy for raw TCP from the managed SOCKS listener".  Parsed once
 * at start, with the reference's rules and reasons, into a canonical
 * "host:port" (a lower-case name -- a dotted quad is one too, for the
 * proxy's resolver to read -- or a bracketed IPv6 address as inet_ntop
 * writes it); every registration
 * then names it, with the launch config's allowUpstreamProxy, and
 * execd-proxy sends that process's allowed SOCKS5 TCP flows there and
 * nowhere else (see execd-proxy(8), "tcp_upstream").  The policy decides
 * first, in the proxy, as for every flow.
 */
#include "config.h"

#include <arpa/inet.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netproxy/netproxy.h"
#include "netproxy/netproxy_int.h"

/* "[v6]:65535" or a 253-byte name and a port fit */
static char	tcp_upstream[NP_UPSTREAM_MAX];

/*
 * A host name as the reference takes one: 253 bytes at most (a final dot
 * counted), labels of 1-63 of [A-Za-z0-9_-] that neither begin nor end
 * with '-', one final dot allowed.  Numeric spellings are names too.
 */
static int
name_ok(const char *s, size_t n)
{
	size_t	i, label = 0;

	if (n == 0 || n > 253)
		return 0;
	for (i = 0; i < n; i++) {
		if (s[i] == '.') {
			if (label == 0 || s[i - 1] == '-')
				return 0;
			label = 0;
			continue;
		}
		if (!(s[i] >= 'a' && s[i] <= 'z') && !(s[i] >= 'A' && s[i] <= 'Z') &&
		    !(s[i] >= '0' && s[i] <= '9') && s[i] != '-' && s[i] != '_')
			return 0;
		if ((label == 0 && s[i] == '-') || ++label > 63)
			return 0;
	}
	return label == 0 || s[n - 1] != '-';
}

/* A u16 as Rust parses one: an optional '+', then decimal digits, 0-65535. */
static int
port_ok(const char *s, unsigned *port)
{
	unsigned long	v = 0;

	if (*s == '+')
		s++;
	if (*s == '\0')
		return 0;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9')
			return 0;
		v = v * 10 + (unsigned long)(*s - '0');
		if (v > 65535)
			return 0;
	}
	*port = (unsigned)v;
	return 1;
}

/*
 * In the reference's order, with its reasons: the last ':' splits, the
 * port is read, then the host (a bracketed IPv6 address, or a name), and
 * only then is port 0 refused.
 */
static const char *
parse(const char *hp, char *out, size_t outlen)
{
	const char	*colon;
	char		 host[256], text[INET6_ADDRSTRLEN];
	struct in6_addr	 a6;
	size_t		 n, i;
	unsigned	 port;

	if ((colon = strrchr(hp, ':')) == NULL)
		return "missing port";
	if (!port_ok(colon + 1, &port))
		return "parse port as u16";
	if ((n = (size_t)(colon - hp)) >= sizeof(host))
		return "parse host from host-with-port";
	memcpy(host, hp, n);
	host[n] = '\0';
	if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
		host[n - 1] = '\0';
		if (inet_pton(AF_INET6, host + 1, &a6) != 1 ||
		    inet_ntop(AF_INET6, &a6, text, sizeof(text)) == NULL)
			return "parse host from host-with-port";
		if (port == 0)
			return "TCP upstream proxy port must be nonzero";
		snprintf(out, outlen, "[%s]:%u", text, port);
		return NULL;
	}
	if (strchr(host, ':') != NULL)
		return inet_pton(AF_INET6, host, &a6) == 1 ?
		    "missing brackets for IPv6 address with port (in host-with-port)" :
		    "parse host from host-with-port";
	if (!name_ok(host, n))
		return "parse host from host-with-port";
	if (port == 0)
		return "TCP upstream proxy port must be nonzero";
	for (i = 0; i < n; i++)
		if (host[i] >= 'A' && host[i] <= 'Z')
			host[i] = (char)(host[i] - 'A' + 'a');
	snprintf(out, outlen, "%s:%u", host, port);
	return NULL;
}

int
netproxy_set_tcp_upstream(const char *hp, char *err, size_t errlen)
{
	const char	*why;

	if ((why = parse(hp, tcp_upstream, sizeof(tcp_upstream))) == NULL)
		return 0;
	tcp_upstream[0] = '\0';
	snprintf(err, errlen, "invalid value '%s' for '--tcp-upstream-proxy <HOST:PORT>': %s",
	    hp, why);
	return -1;
}

const char *
np_tcp_upstream(void)
{
	return tcp_upstream[0] != '\0' ? tcp_upstream : NULL;
}
