/*
 * Reading a process's sandbox request: the reference's decoding and
 * preparing errors, the context a process sees (the command's cwd when the
 * context names none), the managed-network fields, and the proxy
 * variables whose loopback endpoints a managed network routes.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/fs_policy_decode.h"
#include "log.h"
#include "rpc/rpc.h"
#include "sandbox/sandbox_int.h"
#include "sandbox/sandbox_request.h"
#include "uri.h"

static json_t *
fs_entries(json_t *sandbox)
{
	return json_object_get(json_object_get(json_object_get(sandbox, "permissions"),
	    "file_system"), "entries");
}

static int
str_is(json_t *o, const char *key, const char *want)
{
	const char	*v = json_string_value(json_object_get(o, key));

	return v != NULL && strcmp(v, want) == 0;
}

/* A read or write grant of `minimal`: the platform's directories are readable. */
int
sbx_wants_platform(json_t *sandbox)
{
	json_t	*en, *path;
	size_t	 i;

	json_array_foreach(fs_entries(sandbox), i, en) {
		path = json_object_get(en, "path");
		if ((str_is(en, "access", "read") || str_is(en, "access", "write")) &&
		    str_is(path, "type", "special") &&
		    str_is(json_object_get(path, "value"), "kind", "minimal"))
			return 1;
	}
	return 0;
}

int
sbx_glob_depth(json_t *sandbox)
{
	json_t	*d = json_object_get(json_object_get(json_object_get(sandbox, "permissions"),
	    "file_system"), "glob_scan_max_depth");

	return json_is_integer(d) && json_integer_value(d) > 0 &&
	    json_integer_value(d) < 4096 ? (int)json_integer_value(d) - 1 : -1;
}

/* managedNetwork: {loopbackPorts: [u16], allowLocalBinding: bool}, as the reference decodes it */
int
sbx_managed_ports(json_t *mn, struct sandbox_plan *plan, struct jx_err *e)
{
	json_t	*ports, *v, *alb;
	size_t	 i;
	int	 transparent;

	if (mn == NULL || json_is_null(mn))
		return 0;
	ports = json_object_get(mn, "loopbackPorts");
	alb = json_object_get(mn, "allowLocalBinding");
	/* fields with defaults: absent is the default, null a type error (serde) */
	if (alb != NULL && !json_is_boolean(alb))
		return jx_type_error(e, alb, "a boolean");
	/* a plain bool with a default: absent is false, null is a type error */
	if (jx_bool(mn, "transparentTcp", JX_DEFAULT, &transparent, e) == -1)
		return -1;
	if (ports == NULL)
		return 0;
	if (!json_is_array(ports))
		return jx_type_error(e, ports, "a sequence");
	json_array_foreach(ports, i, v) {
		if (!json_is_integer(v))
			return jx_type_error(e, v, "u16");
		if (json_integer_value(v) < 0 || json_integer_value(v) > 65535) {
			snprintf(e->msg, sizeof(e->msg), "invalid number");
			return -1;
		}
		if (plan != NULL && sbx_route_add(plan, "127.0.0.1",
		    (unsigned)json_integer_value(v)) == -1) {
			snprintf(e->msg, sizeof(e->msg), "too many managed network ports");
			return -1;
		}
	}
	return 0;
}

/* fs_policy speaks for fs requests; a process sandbox words URI errors as the reference does. */
void
sbx_policy_error(struct jx_err *e, int *code)
{
	static const char	prefix[] = "invalid sandbox permission path URI: ";
	char			buf[sizeof(e->msg)];

	if (*code == RPC_INVALID_REQUEST && strncmp(e->msg, prefix, sizeof(prefix) - 1) == 0) {
		snprintf(buf, sizeof(buf), "failed to prepare process sandbox: invalid sandbox "
		    "permission path: %s", e->msg + sizeof(prefix) - 1);
		memcpy(e->msg, buf, sizeof(buf));
		*code = RPC_INVALID_PARAMS;
	}
}

enum sbx_net
sbx_net_mode(json_t *sandbox, json_t *params)
{
	const char	*net;
	json_t		*mn = json_object_get(params, "managedNetwork");

	if (json_is_true(json_object_get(params, "enforceManagedNetwork")) ||
	    (mn != NULL && !json_is_null(mn)) ||
	    (json_object_get(params, "networkProxy") != NULL &&
	    !json_is_null(json_object_get(params, "networkProxy"))))
		return SBX_NET_MANAGED;
	net = json_string_value(json_object_get(json_object_get(sandbox, "permissions"),
	    "network"));
	return net != NULL && strcmp(net, "enabled") == 0 ? SBX_NET_ENABLED : SBX_NET_OFF;
}

int
sandbox_managed_transparent(json_t *params)
{
	return json_is_true(json_object_get(json_object_get(params, "managedNetwork"),
	    "transparentTcp"));
}

int
sandbox_wants_mxc(json_t *sandbox)
{
	const char	*level = json_string_value(json_object_get(sandbox, "windowsSandboxLevel"));

	return level != NULL && strcmp(level, "mxc") == 0;
}

/* The reference's process sandbox takes the command's cwd when the context has none. */
json_t *
sbx_context(json_t *sandbox, json_t *params)
{
	json_t		*ctx, *cwd = json_object_get(params, "cwd"), *v;
	struct jx_err	 e;
	char		*path;
	enum uri_status	 us;

	if ((ctx = json_copy(sandbox)) == NULL)
		return NULL;
	v = json_object_get(ctx, "cwd");
	if ((v == NULL || json_is_null(v)) && json_is_string(cwd)) {
		path = uri_json_to_path(cwd, &e, &us);
		free(path);
		if (path != NULL || us == URI_NOT_LOCAL)
			json_object_set(ctx, "cwd", cwd);
	}
	return ctx;
}

/*
 * The context as decoding sees it: URIs that decode but name no local path
 * fail later, when the sandbox is prepared (sbx_context_error).
 */
static json_t *
decode_view(json_t *ctx0)
{
	json_t		*ctx, *roots, *keep, *v;
	struct jx_err	 e;
	char		*path;
	size_t		 i;
	enum uri_status	 us;

	if ((ctx = json_copy(ctx0)) == NULL)
		return NULL;
	v = json_object_get(ctx, "cwd");
	path = NULL;
	if (json_is_string(v) && (path = uri_json_to_path(v, &e, &us)) == NULL &&
	    us == URI_NOT_LOCAL)
		json_object_set_new(ctx, "cwd", json_string("file:///"));
	free(path);
	roots = json_object_get(ctx, "workspaceRoots");
	if (json_is_array(roots) && (keep = json_array()) != NULL) {
		json_array_foreach(roots, i, v) {
			path = json_is_string(v) ? uri_json_to_path(v, &e,
			    &us) : NULL;
			if (path != NULL || !json_is_string(v) || us != URI_NOT_LOCAL)
				json_array_append(keep, v);
			free(path);
		}
		json_object_set_new(ctx, "workspaceRoots", keep);
	}
	return ctx;
}

/* The preparing stage's errors on the context's own paths, in the reference's order. */
int
sbx_context_error(json_t *ctx, char *msg, size_t msglen)
{
	json_t		*v, *roots = json_object_get(ctx, "workspaceRoots");
	struct jx_err	 e;
	char		*path;
	size_t		 i;
	enum uri_status	 us;

	v = json_object_get(ctx, "cwd");
	if (json_is_string(v)) {
		if ((path = uri_json_to_path(v, &e, &us)) == NULL &&
		    us == URI_NOT_LOCAL) {
			snprintf(msg, msglen, "failed to prepare process sandbox: invalid sandbox "
			    "policy cwd: %s", e.msg);
			return -1;
		}
		free(path);
	}
	json_array_foreach(roots, i, v) {
		if (!json_is_string(v))
			continue;
		if ((path = uri_json_to_path(v, &e, &us)) == NULL &&
		    us == URI_NOT_LOCAL) {
			snprintf(msg, msglen, "failed to prepare process sandbox: invalid sandbox "
			    "workspace root: %s", e.msg);
			return -1;
		}
		free(path);
	}
	return 0;
}

int
sandbox_check(json_t *sandbox, json_t *params, json_t **ctxp, int *code, char *msg,
    size_t msglen)
{
	struct fsp_ctx		 dc;
	struct jx_err		 e;
	json_t			*view;
	int			 r = 0;

	*ctxp = NULL;
	*code = RPC_INVALID_PARAMS;
	if (sbx_managed_ports(json_object_get(params, "managedNetwork"), NULL, &e) == -1) {
		snprintf(msg, msglen, "%s", e.msg);
		return -1;
	}
	if (sandbox == NULL || json_is_null(sandbox))
		return 0;
	if ((*ctxp = sbx_context(sandbox, params)) == NULL ||
	    (view = decode_view(*ctxp)) == NULL) {
		*code = RPC_INTERNAL_ERROR;
		snprintf(msg, msglen, "out of memory");
		return -1;
	}
	/* decoding only; an entry naming no local path (-32600) fails later too */
	if (fsp_decode(view, &dc, &e, code) == -1 && *code != RPC_INVALID_REQUEST) {
		snprintf(msg, msglen, "%s", e.msg);
		r = -1;
	}
	fsp_ctx_free(&dc);
	json_decref(view);
	return r;
}

static const char *const proxy_vars[] = {
	"HTTP_PROXY", "HTTPS_PROXY", "WS_PROXY", "WSS_PROXY", "ALL_PROXY", "FTP_PROXY",
	"YARN_HTTP_PROXY", "YARN_HTTPS_PROXY", "NPM_CONFIG_HTTP_PROXY",
	"NPM_CONFIG_HTTPS_PROXY", "NPM_CONFIG_PROXY", "BUNDLE_HTTP_PROXY",
	"BUNDLE_HTTPS_PROXY", "PIP_PROXY", "DOCKER_HTTP_PROXY", "DOCKER_HTTPS_PROXY", NULL
};

static unsigned
default_port(const char *url, size_t schemelen)
{
	if (schemelen == 5 && strncasecmp(url, "https", 5) == 0)
		return 443;
	if (schemelen >= 5 && strncasecmp(url, "socks", 5) == 0)
		return 1080;
	return 80;
}

/* "scheme://user:pw@host:port/..." -> host (room for 256) and port */
static void
url_endpoint(const char *url, char *h, unsigned *portp)
{
	const char	*p = strstr(url, "://"), *host, *end, *at;
	unsigned	 port;
	size_t		 schemelen = p ? (size_t)(p - url) : 0;

	host = p ? p + 3 : url;
	end = host + strcspn(host, "/?#");
	if ((at = memchr(host, '@', (size_t)(end - host))) != NULL)
		host = at + 1;
	port = default_port(url, schemelen);
	*portp = 0;	/* no route */
	if (*host == '[') {
		if ((p = memchr(host, ']', (size_t)(end - host))) == NULL)
			return;
		snprintf(h, 256, "%.*s", (int)(p - host - 1), host + 1);
		p++;
	} else {
		p = memchr(host, ':', (size_t)(end - host));
		snprintf(h, 256, "%.*s", (int)((p ? p : end) - host), host);
	}
	if (p != NULL && p < end && *p == ':') {
		port = 0;
		for (p++; p < end && isdigit((unsigned char)*p) && port <= 65535; p++)
			port = port * 10 + (unsigned)(*p - '0');
	}
	*portp = port;
}

static int
route_url(struct sandbox_plan *plan, const char *url)
{
	char		h[256];
	unsigned	port;

	url_endpoint(url, h, &port);
	return sbx_route_add(plan, h, port);
}

/* %XX decoded from s (n bytes) into out (room for 256); -1 when malformed or long */
static int
pct_decode(const char *s, size_t n, char *out)
{
	size_t		i, o = 0;
	unsigned	v;

	for (i = 0; i < n; i++) {
		if (o == 255)
			return -1;
		if (s[i] != '%') {
			out[o++] = s[i];
			continue;
		}
		if (i + 2 >= n || !isxdigit((unsigned char)s[i + 1]) ||
		    !isxdigit((unsigned char)s[i + 2]) ||
		    sscanf(s + i + 1, "%2x", &v) != 1 || v == 0)
			return -1;
		out[o++] = (char)v;
		i += 2;
	}
	out[o] = '\0';
	return 0;
}

/*
 * Transparent TCP's way out: the SOCKS5 endpoint and credentials of the
 * process's registration, as its ALL_PROXY names them (netproxy_env.c
 * writes "socks5h://id:secret@host:port").  Anything else: none, and
 * every transparent connect is refused.
 */
static void
socks_endpoint(struct sandbox_plan *plan, const char *url)
{
	static const char	scheme[] = "socks5h://";
	const char		*ui = url + sizeof(scheme) - 1, *at, *colon;
	char			 h[256];
	unsigned		 port;

	if (strncasecmp(url, scheme, sizeof(scheme) - 1) != 0 ||
	    (at = strchr(ui, '@')) == NULL ||
	    (colon = memchr(ui, ':', (size_t)(at - ui))) == NULL ||
	    pct_decode(ui, (size_t)(colon - ui), plan->socks_user) == -1 ||
	    pct_decode(colon + 1, (size_t)(at - colon - 1), plan->socks_pass) == -1)
		return;
	url_endpoint(url, h, &port);
	if (sbx_route_make(h, port, &plan->socks) == 0)
		memset(&plan->socks, 0, sizeof(plan->socks));
}

int
sandbox_finish(struct sandbox_plan *plan, const char *cwd, json_t *env)
{
	const char	*key;
	json_t		*v;
	size_t		 i;

	if (plan == NULL)
		return 0;
	free(plan->cwd);
	if ((plan->cwd = strdup(cwd)) == NULL) {
		log_warn("sandbox");
		return -1;
	}
	if (plan->net != SBX_NET_MANAGED)
		return 0;
	json_object_foreach(env, key, v) {
		for (i = 0; proxy_vars[i] != NULL; i++)
			if (strcasecmp(key, proxy_vars[i]) == 0 && json_is_string(v) &&
			    route_url(plan, json_string_value(v)) == -1) {
				log_warnx("sandbox: too many proxy routes");
				return -1;
			}
	}
	if (plan->transparent && (v = json_object_get(env, "ALL_PROXY")) != NULL &&
	    json_is_string(v))
		socks_endpoint(plan, json_string_value(v));
	return 0;
}
