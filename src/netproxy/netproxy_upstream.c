/*
 * --tcp-upstream-proxy HOST:PORT, as 0.171.0 means it: "Require this HTTP
 * CONNECT proxy for raw TCP from the managed SOCKS listener".  Parsed once
 * at start into a canonical "host:port" (a lower-case name, a dotted quad,
 * or a bracketed IPv6 address as inet_ntop writes it); every registration
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

/* A DNS name: labels of 1-63 of [A-Za-z0-9-_], 253 bytes at most. */
static int
name_ok(const char *s, size_t n)
{
	size_t	i, label = 0;

	if (n == 0 || n > 253)
		return 0;
	for (i = 0; i < n; i++) {
		if (s[i] == '.') {
			if (label == 0)
				return 0;
			label = 0;
			continue;
		}
		if (!(s[i] >= 'a' && s[i] <= 'z') && !(s[i] >= 'A' && s[i] <= 'Z') &&
		    !(s[i] >= '0' && s[i] <= '9') && s[i] != '-' && s[i] != '_')
			return 0;
		if (++label > 63)
			return 0;
	}
	return label > 0;
}

/* Decimal 1-65535, digits only. */
static int
port_ok(const char *s, unsigned *port)
{
	unsigned long	v = 0;
	size_t		i;

	if (*s == '\0' || strlen(s) > 5)
		return 0;
	for (i = 0; s[i] != '\0'; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return 0;
	*port = (unsigned)v;
	return 1;
}

int
netproxy_set_tcp_upstream(const char *hp, char *err, size_t errlen)
{
	const char	*colon, *host = hp, *last;
	char		 name[256], text[INET6_ADDRSTRLEN];
	struct in6_addr	 a6;
	struct in_addr	 a4;
	size_t		 n, i;
	unsigned	 port;

	if (hp[0] == '[') {
		if ((colon = strstr(hp, "]:")) == NULL || (n = (size_t)(colon - hp - 1)) == 0 ||
		    n >= sizeof(name))
			goto bad;
		memcpy(name, hp + 1, n);
		name[n] = '\0';
		if (inet_pton(AF_INET6, name, &a6) != 1 ||
		    inet_ntop(AF_INET6, &a6, text, sizeof(text)) == NULL)
			goto bad;
		colon++;
		if (!port_ok(colon + 1, &port))
			goto bad;
		snprintf(tcp_upstream, sizeof(tcp_upstream), "[%s]:%u", text, port);
		return 0;
	}
	/* one colon: an IPv6 address must be bracketed, as the reference says */
	if ((colon = strchr(hp, ':')) == NULL || strchr(colon + 1, ':') != NULL ||
	    (n = (size_t)(colon - host)) >= sizeof(name) || !name_ok(host, n) ||
	    !port_ok(colon + 1, &port))
		goto bad;
	for (i = 0; i < n; i++)
		name[i] = (host[i] >= 'A' && host[i] <= 'Z') ? (char)(host[i] - 'A' + 'a') :
		    host[i];
	name[n] = '\0';
	/* a numeric last label makes it an IPv4 address, strictly (not 010.1.1.1) */
	last = strrchr(name, '.') != NULL ? strrchr(name, '.') + 1 : name;
	if (strspn(last, "0123456789") == strlen(last) && inet_pton(AF_INET, name, &a4) != 1)
		goto bad;
	snprintf(tcp_upstream, sizeof(tcp_upstream), "%s:%u", name, port);
	return 0;
bad:
	snprintf(err, errlen, "--tcp-upstream-proxy: \"%s\" is not HOST:PORT (a name, an IPv4 "
	    "address or a bracketed IPv6 address, and a port 1-65535)", hp);
	return -1;
}

const char *
np_tcp_upstream(void)
{
	return tcp_upstream[0] != '\0' ? tcp_upstream : NULL;
}
