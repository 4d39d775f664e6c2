/*
 * Building a policy from its words: host patterns, port ranges, and the
 * listen addresses of execd-proxy.conf(5).  Shared by the configuration
 * file (conf_parse.c) and the per-process policies from the control
 * socket (policy_json.c).
 */
#include "config.h"

#include <arpa/inet.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

void
policy_clear(struct policy *pol)
{
	size_t	i;

	for (i = 0; i < pol->nallow; i++)
		free(pol->allow[i]);
	for (i = 0; i < pol->ndeny; i++)
		free(pol->deny[i]);
	free(pol->allow);
	free(pol->deny);
	free(pol->ports);
	memset(pol, 0, sizeof(*pol));
}

void
policy_free(struct policy *pol)
{
	if (pol == NULL)
		return;
	policy_clear(pol);
	free(pol);
}

void
policy_defaults(struct policy *pol)
{
	memset(pol, 0, sizeof(*pol));
	pol->has_allowlist = 1;		/* an empty one allows nothing */
	pol->enabled = 1;
	pol->socks5 = 1;
	pol->mode = MODE_FULL;
}

/*
 * Patterns are stored normalised (lower case, no brackets, no trailing dot).
 * Only name characters and the two glob characters are accepted, which
 * keeps fnmatch(3) from ever seeing a bracket expression.
 */
static int
pattern_valid(const char *pat)
{
	const char	*s;

	if (*pat == '\0')
		return 0;
	for (s = pat; *s != '\0'; s++)
		if (!isalnum((unsigned char)*s) && strchr("-._*?:%", *s) == NULL)
			return 0;
	return 1;
}

int
policy_add_pattern(struct policy *pol, int deny, const char *pat, char *err, size_t errlen)
{
	char	  norm[PROXY_HOST_MAX + 8];
	char	***list = deny ? &pol->deny : &pol->allow;
	size_t	 *n = deny ? &pol->ndeny : &pol->nallow;
	char	**nl, *dup;
	size_t	  i;

	if (host_normalize(pat, strlen(pat), norm, sizeof(norm)) == -1 ||
	    !pattern_valid(norm)) {
		snprintf(err, errlen, "invalid domain pattern \"%s\"", pat);
		return -1;
	}
	if (deny && (strcmp(norm, "*") == 0 || strcmp(norm, "**") == 0 ||
	    strcmp(norm, "**.*") == 0 || strcmp(norm, "*.*") == 0)) {
		snprintf(err, errlen, "unsupported global wildcard domain pattern "
		    "\"%s\" in a deny list", pat);
		return -1;
	}
	for (i = 0; i < *n; i++)
		if (strcmp((*list)[i], norm) == 0)
			return 0;
	if ((dup = strdup(norm)) == NULL ||
	    (nl = reallocarray(*list, *n + 1, sizeof(*nl))) == NULL) {
		free(dup);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	nl[(*n)++] = dup;
	*list = nl;
	return 0;
}

/* A port number, 1-65535. */
int
parse_port(const char *s, uint16_t *port)
{
	char		*end;
	unsigned long	 v;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || v == 0 || v > 65535)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

int
policy_add_ports(struct policy *pol, const char *spec)
{
	char			 lo[8], *dash;
	struct portrange	 r, *n;

	if (strlen(spec) > 11)
		return -1;
	if ((dash = strchr(spec, '-')) != NULL) {
		if ((size_t)(dash - spec) >= sizeof(lo))
			return -1;
		memcpy(lo, spec, (size_t)(dash - spec));
		lo[dash - spec] = '\0';
		if (parse_port(lo, &r.lo) == -1 || parse_port(dash + 1, &r.hi) == -1 ||
		    r.lo > r.hi)
			return -1;
	} else {
		if (parse_port(spec, &r.lo) == -1)
			return -1;
		r.hi = r.lo;
	}
	if ((n = reallocarray(pol->ports, pol->nports + 1, sizeof(*n))) == NULL)
		return -1;
	n[pol->nports++] = r;
	pol->ports = n;
	return 0;
}

/* "127.0.0.1:3128", "[::1]:3128"; defport when the port is omitted (0: required). */
int
parse_hostport(const char *s, struct sockaddr_storage *ss, uint16_t defport)
{
	char			 host[INET6_ADDRSTRLEN + 2];
	const char		*portp = NULL, *end;
	uint16_t		 port = defport;
	struct sockaddr_in	*sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6	*sin6 = (struct sockaddr_in6 *)ss;
	size_t			 hl;

	memset(ss, 0, sizeof(*ss));
	if (*s == '[') {
		if ((end = strchr(s, ']')) == NULL)
			return -1;
		hl = (size_t)(end - s - 1);
		if (hl >= sizeof(host))
			return -1;
		memcpy(host, s + 1, hl);
		host[hl] = '\0';
		if (end[1] == ':')
			portp = end + 2;
		else if (end[1] != '\0')
			return -1;
	} else {
		if ((end = strrchr(s, ':')) != NULL)
			portp = end + 1;
		hl = end ? (size_t)(end - s) : strlen(s);
		if (hl >= sizeof(host))
			return -1;
		memcpy(host, s, hl);
		host[hl] = '\0';
	}
	if (portp != NULL) {
		if (strcmp(portp, "0") == 0)
			port = 0;
		else if (parse_port(portp, &port) == -1)
			return -1;
	} else if (defport == 0)
		return -1;
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		return 0;
	}
	return -1;
}
