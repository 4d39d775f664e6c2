/*
 * What a process's registration says and what its environment gets: the
 * tags and the policy from the process/start params (the reference's
 * networkProxy launch config, checked with its error texts), and the
 * proxy variables the reference sets on a managed child, here carrying
 * the process's own credentials.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "jsonx.h"
#include "netproxy/netproxy.h"
#include "netproxy/netproxy_int.h"

#define CONFIG_ERR	"invalid network proxy config: "
#define ASK_MS_MAX	(24 * 3600 * 1000)	/* what execd-proxy takes */

/* Pointed at the HTTP listener (never a SOCKS URL: many clients break). */
static const char *const http_keys[] = {
	"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy",
	"WS_PROXY", "WSS_PROXY", "ws_proxy", "wss_proxy",
	"YARN_HTTP_PROXY", "YARN_HTTPS_PROXY",
	"npm_config_http_proxy", "npm_config_https_proxy", "npm_config_proxy",
	"NPM_CONFIG_HTTP_PROXY", "NPM_CONFIG_HTTPS_PROXY", "NPM_CONFIG_PROXY",
	"BUNDLE_HTTP_PROXY", "BUNDLE_HTTPS_PROXY", "PIP_PROXY",
	"DOCKER_HTTP_PROXY", "DOCKER_HTTPS_PROXY", NULL,
};
/* SOCKS5 with remote resolution when available, else HTTP. */
static const char *const socks_keys[] = {
	"ALL_PROXY", "all_proxy", "FTP_PROXY", "ftp_proxy", NULL,
};
static const char *const no_proxy_keys[] = {
	"NO_PROXY", "no_proxy", "npm_config_noproxy", "NPM_CONFIG_NOPROXY",
	"BUNDLE_NO_PROXY", NULL,
};
static const char *const ca_keys[] = {
	"CODEX_CA_CERTIFICATE", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
	"NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO", "PIP_CERT", "BUNDLE_SSL_CA_CERT",
	"npm_config_cafile", "NPM_CONFIG_CAFILE", "CARGO_HTTP_CAINFO", NULL,
};
/* Ways around the proxy, or foreign attribution, that must not reach the child. */
static const char *const bypass_keys[] = {
	"YARN_NO_PROXY", "SOCKS_PROXY", "SOCKS5_PROXY", "SOCKS_SERVER", "SOCKS5_SERVER",
	"GRPC_PROXY", "RSYNC_PROXY", "GIT_PROXY_COMMAND", "npm_config_https-proxy",
	"npm_config_no-proxy", "CODEX_NETWORK_PROXY_ATTRIBUTION", "CODEX_NETWORK_PROXY_DNS",
	NULL,
};
#define LOCAL_NO_PROXY	"localhost,127.0.0.1,::1,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16"

static int
in_list(const char *const *list, const char *key, int fold)
{
	size_t	i;

	for (i = 0; list[i] != NULL; i++)
		if ((fold ? strcasecmp : strcmp)(list[i], key) == 0)
			return 1;
	return 0;
}

static int
is_managed(const char *key)
{
	return in_list(http_keys, key, 0) || in_list(socks_keys, key, 0) ||
	    in_list(no_proxy_keys, key, 0);
}

/* Mixed-case spellings of managed names (Http_Proxy) and the bypass list. */
static int
must_remove(const char *key)
{
	if (is_managed(key))
		return 0;
	return in_list(http_keys, key, 1) || in_list(socks_keys, key, 1) ||
	    in_list(no_proxy_keys, key, 1) || in_list(bypass_keys, key, 1);
}

static int
set_all(json_t *env, const char *const *keys, const char *val)
{
	size_t	i;

	for (i = 0; keys[i] != NULL; i++)
		if (json_object_set_new(env, keys[i], json_string(val)) == -1)
			return -1;
	return 0;
}

/*
 * The CA variables name the bundle that trusts the proxy's inspection CA,
 * except where the process was given a CA of its own (a non-empty value
 * naming another file): that one stays, as in the reference, even though
 * inspected HTTPS will then fail its check.
 */
static int
set_ca_vars(json_t *env, const char *bundle)
{
	const char	*cur;
	size_t		 i;

	for (i = 0; ca_keys[i] != NULL; i++) {
		cur = json_string_value(json_object_get(env, ca_keys[i]));
		if (cur != NULL && cur[0] != '\0' && strcmp(cur, bundle) != 0)
			continue;
		if (json_object_set_new(env, ca_keys[i], json_string(bundle)) == -1)
			return -1;
	}
	return 0;
}

int
netproxy_child_env(const struct netproxy_reg *r, json_t *env)
{
	char		 http[256], socks[256];
	const char	*key;
	json_t		*v, *drop;
	void		*tmp;
	size_t		 i;

	if (r->http[0] != '\0')
		snprintf(http, sizeof(http), "http://%s:%s@%s", r->id, r->secret, r->http);
	if (r->socks[0] != '\0')
		snprintf(socks, sizeof(socks), "socks5h://%s:%s@%s", r->id, r->secret, r->socks);
	else
		snprintf(socks, sizeof(socks), "%s", http);
	if (r->http[0] == '\0')
		snprintf(http, sizeof(http), "%s", socks);
	if ((drop = json_array()) == NULL)
		return -1;
	json_object_foreach_safe(env, tmp, key, v)
		if (must_remove(key))
			json_array_append_new(drop, json_string(key));
	for (i = 0; i < json_array_size(drop); i++)
		json_object_del(env, json_string_value(json_array_get(drop, i)));
	json_decref(drop);
	if (set_all(env, http_keys, http) == -1 || set_all(env, socks_keys, socks) == -1 ||
	    set_all(env, no_proxy_keys, r->allow_local ? LOCAL_NO_PROXY : "") == -1 ||
	    json_object_set_new(env, "CODEX_NETWORK_PROXY_ACTIVE", json_string("1")) == -1 ||
	    json_object_set_new(env, "ELECTRON_GET_USE_PROXY", json_string("true")) == -1 ||
	    json_object_set_new(env, "NODE_USE_ENV_PROXY", json_string("1")) == -1)
		return -1;
	if (r->ca_bundle != NULL && set_ca_vars(env, r->ca_bundle) == -1)
		return -1;
	return netproxy_mask_env(r->masked, env);
}

/* ----------------------------------------------------- networkProxy params */

static int
fail(char *err, size_t errlen, const struct jx_err *e)
{
	snprintf(err, errlen, "%s", e->msg);
	return NETPROXY_EINVAL;
}

/* The reference's pattern checks, with its words. */
static int
pattern_ok(const char *pat, int deny, char *err, size_t errlen)
{
	const char	*lb = strchr(pat, '['), *rb;

	if (deny && (strcmp(pat, "*") == 0 || strcmp(pat, "[*]") == 0 ||
	    strcmp(pat, "**.[*]") == 0 || strcmp(pat, "**") == 0)) {
		snprintf(err, errlen, CONFIG_ERR "invalid value for network.denied_domains: %s "
		    "(allowed exact hosts or scoped wildcards like *.example.com or "
		    "**.example.com)", pat);
		return -1;
	}
	if (lb != NULL && (lb != pat || (rb = strchr(pat, ']')) == NULL || rb[1] != '\0' ||
	    strchr(pat, ':') == NULL)) {
		snprintf(err, errlen, CONFIG_ERR "brackets are only supported for IPv6 literals "
		    "or [*]: %s", pat);
		return -1;
	}
	return 0;
}

/* A domain's permission as serde decodes it: "allow", "deny" or "none". */
static const char *
domain_perm(json_t *v, char *err, size_t errlen)
{
	const char	*perm;
	struct jx_err	 e;

	if (!json_is_string(v)) {
		jx_type_error(&e, v, json_is_object(v) ? "a supported domain permission" :
		    "string or map");
		fail(err, errlen, &e);
		return NULL;
	}
	perm = json_string_value(v);
	if (strcmp(perm, "allow") != 0 && strcmp(perm, "deny") != 0 &&
	    strcmp(perm, "none") != 0) {
		snprintf(err, errlen, "unknown variant `%s`, expected one of `none`, "
		    "`allow`, `deny`", perm);
		return NULL;
	}
	return perm;
}

/* Decoding only: every permission is one serde knows. */
static int
domains_decode(json_t *domains, char *err, size_t errlen)
{
	const char	*pat;
	json_t		*v;

	json_object_foreach(domains, pat, v)
		if (domain_perm(v, err, errlen) == NULL)
			return NETPROXY_EINVAL;
	return 0;
}

static int
domains_to_policy(json_t *domains, json_t *pol, char *err, size_t errlen)
{
	json_t		*allow = json_array(), *deny = json_array(), *v;
	const char	*pat, *perm;
	int		 rv = NETPROXY_EINVAL;

	json_object_set_new(pol, "allow", allow);
	json_object_set_new(pol, "deny", deny);
	if (domains == NULL)
		return 0;	/* no domains: nothing is allowed, as in the reference */
	json_object_foreach(domains, pat, v) {
		if ((perm = domain_perm(v, err, errlen)) == NULL)
			return rv;
		if (strcmp(perm, "none") == 0)
			continue;
		if (pattern_ok(pat, perm[0] == 'd', err, errlen) == -1)
			return rv;
		json_array_append_new(perm[0] == 'd' ? deny : allow, json_string(pat));
	}
	return 0;
}

/* networkProxy.proxy (RemoteNetworkProxyConfig) to an execd-proxy policy. */
static int
proxy_policy(json_t *proxy, int launch, int *late, json_t **out, char *err, size_t errlen)
{
	static const char *const flags[] = { "enabled", "enableSocks5", "enableSocks5Udp",
	    "allowUpstreamProxy", "dangerouslyAllowAllUnixSockets", NULL };
	int		 v[5], local, rv, masking, transparent = 0;
	const char	*mode = NULL;
	json_t		*domains = NULL, *sockets = NULL, *pol;
	struct jx_err	 e;
	size_t		 i;

	for (i = 0; flags[i] != NULL; i++)
		if (jx_bool(proxy, flags[i], JX_REQ, &v[i], &e) == -1)
			return fail(err, errlen, &e);
	if (jx_str(proxy, "mode", JX_REQ, &mode, NULL, &e) == -1 ||
	    jx_obj(proxy, "domains", JX_OPT, &domains, &e) == -1 ||
	    jx_obj(proxy, "unixSockets", JX_OPT, &sockets, &e) == -1 ||
	    jx_bool(proxy, "allowLocalBinding", JX_REQ, &local, &e) == -1 ||
	    jx_bool(proxy, "transparentTcp", JX_DEFAULT, &transparent, &e) == -1)
		return fail(err, errlen, &e);
	if (strcmp(mode, "full") != 0 && strcmp(mode, "limited") != 0) {
		snprintf(err, errlen, "unknown variant `%s`, expected `limited` or `full`", mode);
		return NETPROXY_EINVAL;
	}
	if ((rv = netproxy_cred_check(proxy, &masking, err, errlen)) != 0)
		return rv;
	/* what follows the reference checks once the sandbox has been looked at */
	if (!launch || late != NULL) {
		if ((rv = domains_decode(domains, err, errlen)) != 0 || !launch)
			return rv;
		*late = 1;
	}
	if (!v[0]) {
		snprintf(err, errlen, CONFIG_ERR "executor-local network proxy launch requires "
		    "an enabled proxy");
		return NETPROXY_EINVAL;
	}
	/*
	 * unix sockets are macOS-only in the reference.  With
	 * --tcp-upstream-proxy its SOCKS5 TCP flows must take that upstream,
	 * which allowUpstreamProxy false forbids: the proxy then dials none.
	 */
	pol = json_pack("{s:b, s:b, s:b, s:s, s:b}", "enabled", 1, "socks5", v[1],
	    "socks5_udp", v[2], "mode", mode, "allow_local", local);
	if (pol != NULL && np_tcp_upstream() != NULL &&
	    (json_object_set_new(pol, "tcp_upstream", json_string(np_tcp_upstream())) == -1 ||
	    json_object_set_new(pol, "tcp_upstream_allowed", json_boolean(v[3])) == -1)) {
		json_decref(pol);
		pol = NULL;
	}
	if (pol == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if ((rv = domains_to_policy(domains, pol, err, errlen)) != 0) {
		json_decref(pol);
		return rv;
	}
	if (transparent && !v[1]) {
		json_decref(pol);
		snprintf(err, errlen, CONFIG_ERR "transparent_tcp requires an enabled managed "
		    "SOCKS5 proxy");
		return NETPROXY_EINVAL;
	}
	*out = pol;
	return 0;
}

/* A struct-typed field, worded as serde words a wrong type for it. */
static int
struct_field(json_t *o, const char *key, const char *type, json_t **out, struct jx_err *e)
{
	json_t	*v = json_object_get(o, key);

	*out = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return jx_type_error(e, v, type);
	*out = v;
	return 1;
}

/*
 * A copy of a tag value the proxy can read: every NUL of its strings and
 * keys written as U+FFFD.  execd-proxy refuses a NUL (it would cut the
 * string), and one process's odd toolCallId must cost it at most a
 * marked tag, never a refusal that tears down the control connection
 * every other process's tunnels hang on.
 */
static json_t *
tag_copy(json_t *v)
{
	json_t		*o, *e;
	const char	*k, *s;
	size_t		 klen, i, n;
	struct buf	 b = { 0 };

	if (!jx_has_nul_deep(v))
		return json_incref(v);
	if (json_is_string(v)) {
		s = json_string_value(v);
		n = json_string_length(v);
		for (i = 0; i < n; i++)
			if (buf_append(&b, s[i] == '\0' ? "\xef\xbf\xbd" : s + i,
			    s[i] == '\0' ? 3 : 1) == -1)
				break;
		o = i == n ? json_stringn((const char *)buf_head(&b), buf_avail(&b)) : NULL;
		buf_free(&b);
		return o;
	}
	o = json_is_array(v) ? json_array() : json_object();
	if (o != NULL && json_is_array(v)) {
		json_array_foreach(v, i, e)
			json_array_append_new(o, tag_copy(e));
	} else if (o != NULL) {
		json_object_keylen_foreach(v, k, klen, e) {
			json_t *kj = json_stringn(k, klen), *kc = tag_copy(kj);

			if (kc != NULL)
				json_object_set_new(o, json_string_value(kc), tag_copy(e));
			json_decref(kj);
			json_decref(kc);
		}
	}
	return o;
}

static void
tag(json_t *tags, const char *name, json_t *o, const char *key)
{
	json_t	*v = json_object_get(o, key);

	if (json_is_string(v))
		json_object_set_new(tags, name, tag_copy(v));
}

static int	build_request(const char *, json_t *, int, int *, json_t **, char *, size_t);

int
netproxy_build_request(const char *process_id, json_t *params, json_t **req,
    char *err, size_t errlen)
{
	return build_request(process_id, params, 1, NULL, req, err, errlen);
}

int
netproxy_start_request(const char *process_id, json_t *params, json_t **req, int *late,
    char *err, size_t errlen)
{
	*late = 0;
	*req = NULL;
	return build_request(process_id, params, 1, late, req, err, errlen);
}

/*
 * launch 0: only what the reference checks while decoding; 1: all of it.
 * With late, the decoding's checks come first and *late says a refusal
 * came after them (the reference's launch stage).
 */
static int
build_request(const char *process_id, json_t *params, int launch, int *late, json_t **req,
    char *err, size_t errlen)
{
	json_t		*np, *proxy = NULL, *audit = NULL, *meta, *tags, *pol = NULL;
	const char	*s;
	uint64_t	 tmo = 1;
	struct jx_err	 e;
	int		 rv;

	if (struct_field(params, "networkProxy", "struct RemoteNetworkProxyLaunchConfig", &np,
	    &e) == -1)
		return fail(err, errlen, &e);
	if (np != NULL) {
		if (!json_object_get(np, "proxy")) {
			snprintf(err, errlen, "missing field `proxy`");
			return NETPROXY_EINVAL;
		}
		if (struct_field(np, "proxy", "struct RemoteNetworkProxyConfig", &proxy, &e) == -1 ||
		    struct_field(np, "auditMetadata", "struct NetworkProxyAuditMetadata", &audit,
		    &e) == -1 ||
		    jx_str(np, "environmentId", JX_OPT, &s, NULL, &e) == -1 ||
		    jx_str(np, "executionId", JX_OPT, &s, NULL, &e) == -1 ||
		    jx_u64(np, "policyDecisionTimeoutMs", JX_OPT, &tmo, &e) == -1)
			return fail(err, errlen, &e);
		if (proxy == NULL) {
			snprintf(err, errlen, "invalid type: null, expected struct "
			    "RemoteNetworkProxyConfig");
			return NETPROXY_EINVAL;
		}
		if (tmo == 0) {
			snprintf(err, errlen, "network policy decision callback timeout must be "
			    "nonzero");
			return NETPROXY_EINVAL;
		}
		if ((rv = proxy_policy(proxy, launch, late, &pol, err, errlen)) != 0)
			return rv;
	}
	if ((tags = json_pack("{s:s}", "process_id", process_id)) == NULL) {
		json_decref(pol);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	meta = json_object_get(params, "metadata");
	tag(tags, "thread_id", meta, "threadId");
	tag(tags, "tool_call_id", meta, "toolCallId");
	if (np != NULL) {
		tag(tags, "environment_id", np, "environmentId");
		tag(tags, "execution_id", np, "executionId");
		if (audit != NULL)
			json_object_set_new(tags, "audit", tag_copy(audit));
	}
	*req = json_pack("{s:s, s:o, s:o*}", "op", "register", "tags", tags, "policy", pol);
	if (*req == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* a managed process's decisions are reported; its allowlist misses asked about */
	if (np != NULL && json_object_set_new(*req, "events", json_true()) == -1)
		return -1;
	if (np != NULL && json_object_get(np, "policyDecisionTimeoutMs") != NULL &&
	    !json_is_null(json_object_get(np, "policyDecisionTimeoutMs")) &&
	    json_object_set_new(*req, "ask_timeout_ms",
	    json_integer(tmo < ASK_MS_MAX ? (json_int_t)tmo : ASK_MS_MAX)) == -1)
		return -1;
	return 0;
}

int
netproxy_check_params(json_t *params, int launch, char *err, size_t errlen)
{
	json_t	*req;
	int	 rv;

	if ((rv = build_request("", params, launch, NULL, &req, err, errlen)) == 0)
		json_decref(req);
	return rv;
}

/* Policy refusals are the client's to fix: -32602 like the reference's config errors. */
int
netproxy_refusal(char *err, size_t errlen)
{
	char	msg[512];

	if (strncmp(err, CONFIG_ERR, strlen(CONFIG_ERR)) == 0)
		return NETPROXY_EINVAL;
	snprintf(msg, sizeof(msg), "%s", err);
	snprintf(err, errlen, CONFIG_ERR "%s", msg);
	return NETPROXY_EINVAL;
}

int
netproxy_wants_transparent(json_t *params)
{
	return json_is_true(json_object_get(json_object_get(json_object_get(params,
	    "networkProxy"), "proxy"), "transparentTcp"));
}
