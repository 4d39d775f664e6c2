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
		free(pol->allow[i].text);
	for (i = 0; i < pol->ndeny; i++)
		free(pol->deny[i].text);
	free(pol->allow);
	free(pol->deny);
	free(pol->ports);
	free(pol->tcp_upstream);
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

/* "[a-z]", "[!0-9]": a bracket of name characters, ranges between them. */
static size_t
glob_bracket(const char *s)
{
	size_t	i = 1;

	if (s[i] == '!' || s[i] == '^')
		i++;
	if (s[i] == ']')
		return 0;
	for (; s[i] != ']'; i++)
		if (s[i] == '\0' || (!isalnum((unsigned char)s[i]) &&
		    strchr("-_.", s[i]) == NULL))
			return 0;
	return i + 1;
}

/*
 * A glob over host names: name characters, '.', '*', '?' and simple
 * bracket expressions, at least one of the three; lower-cased into out.
 */
static int
glob_parse(const char *in, char *out, size_t outlen)
{
	size_t	i, n, o = 0;
	int	wild = 0;

	n = strlen(in);
	if (n > 1 && in[n - 1] == '.')
		n--;
	if (n == 0 || n >= outlen)
		return -1;
	for (i = 0; i < n; i++) {
		if (in[i] == '[') {
			size_t b = glob_bracket(in + i);

			if (b == 0 || i + b > n)
				return -1;
			for (; b > 0; b--, i++)
				out[o++] = (char)tolower((unsigned char)in[i]);
			i--;
			wild = 1;
			continue;
		}
		if (in[i] == '*' || in[i] == '?')
			wild = 1;
		else if (!isascii((unsigned char)in[i]) || (!isalnum((unsigned char)in[i]) &&
		    strchr("-_.", in[i]) == NULL))
			return -1;
		out[o++] = (char)tolower((unsigned char)in[i]);
	}
	out[o] = '\0';
	return wild ? 0 : -1;
}

/*
 * An entry: an address or network ("8.8.8.8", "[2001:db8::1]",
 * "10.0.0.0/8"), a host name, or a glob.  Brackets are an IPv6 literal
 * only when what they hold is one; otherwise they belong to the glob.
 */
static int
pattern_parse(const char *pat, struct pattern *p)
{
	struct sockaddr_storage	ss;
	char			norm[PROXY_HOST_MAX + 8];
	int			k;

	memset(p, 0, sizeof(*p));
	if (strchr(pat, '/') != NULL || (k = host_parse(pat, strlen(pat), norm,
	    sizeof(norm), &ss)) == HOST_ADDR) {
		if (addr_net_parse(pat, &p->net) == -1)
			return -1;
		p->is_net = 1;
		if (p->net.family == AF_INET)
			inet_ntop(AF_INET, p->net.a, norm, sizeof(norm));
		else
			inet_ntop(AF_INET6, p->net.a, norm, sizeof(norm));
		snprintf(norm + strlen(norm), sizeof(norm) - strlen(norm), "/%u", p->net.bits);
	} else if (k != HOST_NAME && glob_parse(pat, norm, sizeof(norm)) == -1)
		return -1;
	return (p->text = strdup(norm)) == NULL ? -1 : 0;
}

static int
same_entry(const struct pattern *a, const struct pattern *b)
{
	return strcmp(a->text, b->text) == 0;
}

int
policy_add_pattern(struct policy *pol, int deny, const char *pat, char *err, size_t errlen)
{
	struct pattern	**list = deny ? &pol->deny : &pol->allow;
	size_t		 *n = deny ? &pol->ndeny : &pol->nallow;
	struct pattern	  p, *nl;
	size_t		  i;

	if (pattern_parse(pat, &p) == -1) {
		snprintf(err, errlen, "invalid domain pattern \"%s\"", pat);
		return -1;
	}
	if (deny && !p.is_net && (strcmp(p.text, "*") == 0 || strcmp(p.text, "**") == 0 ||
	    strcmp(p.text, "**.*") == 0 || strcmp(p.text, "*.*") == 0)) {
		free(p.text);
		snprintf(err, errlen, "unsupported global wildcard domain pattern "
		    "\"%s\" in a deny list", pat);
		return -1;
	}
	for (i = 0; i < *n; i++)
		if (same_entry(&(*list)[i], &p)) {
			free(p.text);
			return 0;
		}
	if ((nl = reallocarray(*list, *n + 1, sizeof(*nl))) == NULL) {
		free(p.text);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	nl[(*n)++] = p;
	*list = nl;
	if (deny && p.is_net)
		pol->deny_nets = 1;
	return 0;
}

/* A decimal number from 1 to max, digits only (no sign, blank or suffix). */
int
parse_number(const char *s, unsigned long max, unsigned long *out)
{
	char		*end;
	unsigned long	 v;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || v == 0 || v > max)
		return -1;
	*out = v;
	return 0;
}

/* A port number, 1-65535. */
int
parse_port(const char *s, uint16_t *port)
{
	unsigned long	v;

	if (parse_number(s, 65535, &v) == -1)
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
