/*
 * The narrower policy execd may register a process with: a JSON object on
 * the control socket (see execd-proxy(8)), read into the same structure as
 * the configuration file's policy.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

static int
json_patterns(struct policy *pol, json_t *o, const char *key, int deny, char *err,
    size_t errlen)
{
	json_t	*a, *v;
	size_t	 i;

	if ((a = json_object_get(o, key)) == NULL || json_is_null(a))
		return 0;
	if (!json_is_array(a)) {
		snprintf(err, errlen, "policy.%s must be an array of strings", key);
		return -1;
	}
	json_array_foreach(a, i, v) {
		if (!json_is_string(v)) {
			snprintf(err, errlen, "policy.%s must be an array of strings", key);
			return -1;
		}
		if (policy_add_pattern(pol, deny, json_string_value(v), err, errlen) == -1)
			return -1;
	}
	return 0;
}

static int
json_flag(json_t *o, const char *key, int *out, char *err, size_t errlen)
{
	json_t	*v;

	if ((v = json_object_get(o, key)) == NULL || json_is_null(v))
		return 0;
	if (!json_is_boolean(v)) {
		snprintf(err, errlen, "policy.%s must be a boolean", key);
		return -1;
	}
	*out = json_is_true(v);
	return 0;
}

static int
json_ports(struct policy *pol, json_t *o, char *err, size_t errlen)
{
	json_t	*a, *v;
	size_t	 i;
	char	 num[16];

	if ((a = json_object_get(o, "ports")) == NULL || json_is_null(a))
		return 0;
	if (!json_is_array(a))
		goto bad;
	json_array_foreach(a, i, v) {
		if (json_is_integer(v)) {
			snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
			if (policy_add_ports(pol, num) == -1)
				goto bad;
		} else if (!json_is_string(v) ||
		    policy_add_ports(pol, json_string_value(v)) == -1)
			goto bad;
	}
	return 0;
bad:
	snprintf(err, errlen, "policy.ports must be an array of ports or \"LOW-HIGH\" ranges");
	return -1;
}

/*
 * "tcp_upstream": "HOST:PORT", HOST a name or an address (IPv6 in
 * brackets) as host_parse() reads a target's, port 1-65535.
 */
static int
json_tcp_upstream(struct policy *pol, json_t *o, char *err, size_t errlen)
{
	struct sockaddr_storage	 ss;
	json_t			*v;
	const char		*s, *colon;
	char			 port[8];
	uint16_t		 p;

	if ((v = json_object_get(o, "tcp_upstream")) == NULL || json_is_null(v))
		return 0;
	if (!json_is_string(v) || (s = json_string_value(v)) == NULL ||
	    strlen(s) != json_string_length(v) || (colon = strrchr(s, ':')) == NULL || strlen(colon + 1) >= sizeof(port))
		goto bad;
	snprintf(port, sizeof(port), "%s", colon + 1);
	if (parse_port(port, &p) == -1)
		goto bad;
	if ((pol->tcp_upstream = calloc(1, sizeof(*pol->tcp_upstream))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* a bare IPv6 address (its colons) is refused: brackets or nothing */
	if ((s[0] != '[' && memchr(s, ':', (size_t)(colon - s)) != NULL) ||
	    host_parse(s, (size_t)(colon - s), pol->tcp_upstream->host,
	    sizeof(pol->tcp_upstream->host), &ss) == -1)
		goto bad;
	pol->tcp_upstream->port = p;
	return 0;
bad:
	snprintf(err, errlen, "policy.tcp_upstream must be \"HOST:PORT\"");
	return -1;
}

/*
 * {"allow":[...], "deny":[...], "ports":[...], "allow_local":bool,
 *  "mode":"full"|"limited", "enabled":bool, "socks5":bool, "socks5_udp":bool,
 *  "tcp_upstream":"HOST:PORT", "tcp_upstream_allowed":bool}
 */
struct policy *
policy_from_json(json_t *o, char *err, size_t errlen)
{
	struct policy	*pol;
	json_t		*mode;
	const char	*key;
	json_t		*v;
	static const char *known[] = { "allow", "deny", "ports", "allow_local", "mode",
	    "enabled", "socks5", "socks5_udp", "tcp_upstream", "tcp_upstream_allowed", NULL };
	size_t		 i;

	if (!json_is_object(o)) {
		snprintf(err, errlen, "policy must be an object");
		return NULL;
	}
	json_object_foreach(o, key, v) {
		for (i = 0; known[i] != NULL && strcmp(known[i], key) != 0; i++)
			;
		if (known[i] == NULL) {
			snprintf(err, errlen, "unknown policy field \"%s\"", key);
			return NULL;
		}
	}
	if ((pol = malloc(sizeof(*pol))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	policy_defaults(pol);
	/* without "allow" the process is held to the configured allowlist only */
	v = json_object_get(o, "allow");
	pol->has_allowlist = v != NULL && !json_is_null(v);
	if (json_patterns(pol, o, "allow", 0, err, errlen) == -1 ||
	    json_patterns(pol, o, "deny", 1, err, errlen) == -1 ||
	    json_ports(pol, o, err, errlen) == -1 ||
	    json_flag(o, "allow_local", &pol->allow_local, err, errlen) == -1 ||
	    json_flag(o, "enabled", &pol->enabled, err, errlen) == -1 ||
	    json_flag(o, "socks5", &pol->socks5, err, errlen) == -1 ||
	    json_flag(o, "socks5_udp", &pol->socks5_udp, err, errlen) == -1 ||
	    json_tcp_upstream(pol, o, err, errlen) == -1 ||
	    json_flag(o, "tcp_upstream_allowed", &pol->tcp_upstream_allowed, err, errlen) == -1)
		goto fail;
	if ((mode = json_object_get(o, "mode")) != NULL && !json_is_null(mode)) {
		if (json_is_string(mode) && strcmp(json_string_value(mode), "full") == 0)
			pol->mode = MODE_FULL;
		else if (json_is_string(mode) && strcmp(json_string_value(mode), "limited") == 0)
			pol->mode = MODE_LIMITED;
		else {
			snprintf(err, errlen, "policy.mode must be \"full\" or \"limited\"");
			goto fail;
		}
	}
	return pol;
fail:
	policy_free(pol);
	return NULL;
}
