/*
 * The decision: host name and port against the allow and deny patterns,
 * then every resolved address against the local/private ranges.  The
 * order follows the reference: deny, local literal, allowlist.
 */
#include "config.h"

#include <ctype.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "policy/policy.h"

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
	if (strpbrk(pat, "*?[") != NULL)
		return fnmatch(pat, host, 0) == 0;
	return strcmp(pat, host) == 0;
}

/* Does an entry match?  lit: the host's address, NULL for a name. */
static int
entry_matches(const struct pattern *p, const char *host,
    const struct sockaddr_storage *lit, int loose)
{
	if (p->is_net)
		return lit != NULL &&
		    addr_net_match(&p->net, (const struct sockaddr *)lit, loose);
	return pattern_matches(p->text, host);
}

static int
list_matches(const struct pattern *list, size_t n, const char *host,
    const struct sockaddr_storage *lit, int loose)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (entry_matches(&list[i], host, lit, loose))
			return 1;
	return 0;
}

/*
 * An allow entry naming exactly this host, no wildcard: the name itself,
 * or for an address, an address entry (a network is as explicit).
 */
static int
exact_allowed(const struct policy *pol, const char *host, const struct sockaddr_storage *lit)
{
	size_t	i;

	for (i = 0; i < pol->nallow; i++) {
		if (pol->allow[i].is_net) {
			/* the same family: 127.0.0.1 does not clear ::ffff:127.0.0.1 */
			if (lit != NULL && lit->ss_family == pol->allow[i].net.family &&
			    addr_net_match(&pol->allow[i].net, (const struct sockaddr *)lit, 0))
				return 1;
		} else if (lit == NULL && strpbrk(pol->allow[i].text, "*?[") == NULL &&
		    strcmp(pol->allow[i].text, host) == 0)
			return 1;
	}
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

/* A name met on the way (a CNAME chain): only the deny list speaks to it. */
int
policy_denies_name(const struct policy *pol, const char *name)
{
	return list_matches(pol->deny, pol->ndeny, name, NULL, 1);
}

int
policy_limited(const struct policy *pol)
{
	return pol->mode == MODE_LIMITED;
}

/* undecided: NULL, or where an allowlist miss is noted instead of refused */
static void
check_host(const struct policy *pol, const char *source, const char *host,
    const struct sockaddr_storage *lit, uint16_t port,
    const char *method, int shape, enum proxy_proto proto, int *undecided,
    struct verdict *v)
{
	if (!pol->enabled)
		DENY(v, 0, "proxy_disabled", "proxy_state");
	if (list_matches(pol->deny, pol->ndeny, host, lit, 1))
		DENY(v, 0, "denied", source);
	/* this host's own loopback, past any deny of 127.0.0.0/8 or ::1: never */
	if (lit != NULL && addr_is_unspecified((const struct sockaddr *)lit))
		DENY(v, 0, "not_allowed_local", source);
	if (!pol->allow_local && ((lit == NULL && is_local_name(host)) ||
	    (lit != NULL && !addr_is_public((const struct sockaddr *)lit))) &&
	    !exact_allowed(pol, host, lit))
		DENY(v, 0, "not_allowed_local", source);
	if (pol->has_allowlist && !list_matches(pol->allow, pol->nallow, host, lit, 0)) {
		if (undecided == NULL)
			DENY(v, 0, "not_allowed", source);
		*undecided = 1;
	}
	if (!port_allowed(pol, port))
		DENY(v, 0, "port_not_allowed", source);
	switch (proto) {
	case PROTO_HTTP:
		/* read-only: a safe method, and nothing sent or switched with it */
		if (pol->mode == MODE_LIMITED && (!method_is_safe(method) || shape != 0))
			DENY(v, 0, "method_not_allowed", "mode_guard");
		break;
	case PROTO_HTTP_CONNECT:
		/* limited mode needs to see the method: that takes TLS inspection */
		if (pol->mode == MODE_LIMITED && !(shape & REQ_INSPECTED))
			DENY(v, 0, "mitm_required", "mode_guard");
		break;
	case PROTO_SOCKS5:
		if (!pol->socks5)
			DENY(v, 0, "proxy_disabled", "proxy_state");
		/* only what is inspected (port 443) */
		if (pol->mode == MODE_LIMITED && !(shape & REQ_INSPECTED))
			DENY(v, 0, "method_not_allowed", "mode_guard");
		break;
	case PROTO_SOCKS5_UDP:
		if (!pol->socks5 || !pol->socks5_udp || pol->mode == MODE_LIMITED)
			DENY(v, 0, "method_not_allowed", "mode_guard");
		break;
	}
	verdict_set(v, 1, "allow", source);
}

void
policy_check_host(const struct policy *pol, const char *source, const char *host,
    const struct sockaddr_storage *lit, uint16_t port,
    const char *method, int shape, enum proxy_proto proto, struct verdict *v)
{
	check_host(pol, source, host, lit, port, method, shape, proto, NULL, v);
}

/*
 * The same, except that a host only the allowlist refuses is allowed with
 * *undecided set: the reference asks its decider about exactly these
 * (never about a denied or local host), after every other check.
 */
void
policy_check_host_undecided(const struct policy *pol, const char *source,
    const char *host, const struct sockaddr_storage *lit, uint16_t port,
    const char *method, int shape, enum proxy_proto proto, int *undecided,
    struct verdict *v)
{
	*undecided = 0;
	check_host(pol, source, host, lit, port, method, shape, proto, undecided, v);
	if (!v->allow)
		*undecided = 0;
}

/*
 * Must the resolved addresses be vetted?  When deny has address entries
 * (a name must not lead to a denied address), and without local access,
 * except for a literal or localhost that an allow entry names exactly
 * (the reference's exception); an ordinary name never escapes the check.
 */
int
policy_wants_local_check(const struct policy *pol, const char *host,
    const struct sockaddr_storage *lit)
{
	if (pol->allow_local)
		return 0;
	if (lit != NULL || is_local_name(host))
		return !exact_allowed(pol, host, lit);
	return 1;
}

int
policy_wants_addr_check(const struct policy *pol, const char *host,
    const struct sockaddr_storage *lit)
{
	return pol->deny_nets || policy_wants_local_check(pol, host, lit);
}

void
policy_check_addrs(const struct policy *pol, const char *source, const char *host,
    const struct sockaddr_storage *addrs, size_t n, struct verdict *v)
{
	size_t	i;
	int	local;

	/* a name for 0.0.0.0 is a name for this host's loopback (check_host()) */
	for (i = 0; i < n; i++)
		if (addr_is_unspecified((const struct sockaddr *)&addrs[i]))
			DENY(v, 0, "not_allowed_local", source);
	if (!policy_wants_addr_check(pol, host, NULL))
		DENY(v, 1, "allow", source);
	local = policy_wants_local_check(pol, host, NULL);
	for (i = 0; i < n; i++) {
		if (list_matches(pol->deny, pol->ndeny, host, &addrs[i], 1))
			DENY(v, 0, "denied", source);
		if (local && !addr_is_public((const struct sockaddr *)&addrs[i]))
			DENY(v, 0, "not_allowed_local", source);
	}
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
