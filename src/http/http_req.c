/*
 * http/request: the decoded params checked and built into a request (its
 * headers, environment-variable values, Basic auth), which http_xfer.c
 * carries out.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "http/http_params.h"
#include "http/http_req.h"
#include "netproxy/netproxy.h"
#include "session/session.h"
#include "http/http_xfer.h"
#include "log.h"

/* Secrets of the executor itself that a header may never carry (reference's list). */
static const char *const env_denylist[] = {
	"CODEX_EXEC_SERVER_NOISE_AUTH_TOKEN", "OPENAI_FEDERATION_RULE_ID",
	"OPENAI_IDENTITY_TOKEN_FILE", "OPENAI_WORKLOAD_IDENTITY_CONTEXT",
	"OPENAI_API_KEY", "CODEX_API_KEY", "CODEX_ACCESS_TOKEN",
	"CODEX_CONNECTORS_TOKEN", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
	"AWS_SESSION_TOKEN", "AZURE_CLIENT_SECRET", "AZURE_FEDERATED_TOKEN_FILE",
	"GOOGLE_APPLICATION_CREDENTIALS",
};

/* RFC 9110 token: what the reference accepts as a method or header name. */
static int
is_token(const char *s)
{
	unsigned char	c;

	if (*s == '\0')
		return 0;
	for (; (c = (unsigned char)*s) != '\0'; s++) {
		if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
		    (c >= 'A' && c <= 'Z'))
			continue;
		if (strchr("!#$%&'*+-.^_`|~", c) == NULL)
			return 0;
	}
	return 1;
}

/* Bytes a header value may hold: no controls except tab, no DEL. */
static int
is_header_value(const char *s)
{
	for (; *s != '\0'; s++)
		if (((unsigned char)*s < 0x20 && *s != '\t') || *s == 0x7f)
			return 0;
	return 1;
}

/* Like the reference's header map: a later repeat of a name joins the first. */
static int
header_add(json_t *map, const char *name, const char *value, int replace)
{
	json_t	*vals = json_object_get(map, name);

	if (vals == NULL || replace) {
		if ((vals = json_array()) == NULL ||
		    json_object_set_new(map, name, vals) == -1)
			return -1;
	}
	return json_array_append_new(vals, json_string(value));
}

static int
header_value(struct rpc_req *req, json_t *h, const char *name, char **out)
{
	const char	*value, *var = NULL, *env;
	json_t		*v;
	size_t		 i;

	v = json_is_array(h) ? json_array_get(h, 1) : json_object_get(h, "value");
	value = json_string_value(v);
	if (jx_has_nul(v)) {
		/* no header value holds a NUL: refused as one that cannot be parsed */
		rpc_fail(req, RPC_INVALID_PARAMS, "http/request header value is "
		    "invalid for %s: failed to parse header value", name);
		return -2;
	}
	v = json_is_array(h) ? json_array_get(h, 2) : json_object_get(h, "valueEnvVar");
	/* a name with a NUL names no variable, and is echoed whole */
	if (jx_id_encode(v) == -1)
		return -1;
	var = json_string_value(v);
	if (var == NULL)
		return (*out = strdup(value)) == NULL ? -1 : 0;
	for (i = 0; i < sizeof(env_denylist) / sizeof(env_denylist[0]); i++) {
		if (strcasecmp(var, env_denylist[i]) == 0) {
			rpc_fail(req, RPC_INVALID_PARAMS, "http/request header %s cannot use "
			    "executor environment variable %s", name, var);
			return -2;
		}
	}
	if ((env = getenv(var)) == NULL || *env == '\0') {
		rpc_fail(req, RPC_INVALID_PARAMS, "http/request header %s requires %s"
		    "executor environment variable %s", name, env ? "a non-empty " : "", var);
		return -2;
	}
	return asprintf(out, "%s%s", value, env) == -1 ? -1 : 0;
}

/* Userinfo in the URL becomes Basic auth, as the reference does. */
static int
basic_auth(json_t *map, const struct http_url *u)
{
	char	*cred = NULL, *b64, *hdr = NULL;
	int	 rc = -1;

	if (u->user == NULL && u->password == NULL)
		return 0;
	if (asprintf(&cred, "%s:%s", u->user ? u->user : "",
	    u->password ? u->password : "") == -1)
		return -1;
	if ((b64 = b64_encode(cred, strlen(cred), NULL)) != NULL &&
	    asprintf(&hdr, "Basic %s", b64) != -1)
		rc = header_add(map, "authorization", hdr, 0);
	free(b64);
	free(hdr);
	free(cred);
	return rc;
}

/* 0 ok, -1 out of memory, -2 answered with an error */
static int
headers_build(struct rpc_req *req, json_t *list, struct http_spec *spec)
{
	json_t		*h, *hv, *seen;
	const char	*name;
	char		*lname, *value;
	size_t		 i, j;
	int		 rc;

	if ((spec->headers = json_object()) == NULL || (seen = json_object()) == NULL)
		return -1;
	rc = basic_auth(spec->headers, &spec->url);
	json_array_foreach(list, i, h) {
		if (rc != 0)
			break;
		hv = json_is_array(h) ? json_array_get(h, 0) : json_object_get(h, "name");
		name = json_string_value(hv);
		if (!is_token(name) || jx_has_nul(hv)) {
			rpc_fail(req, RPC_INVALID_PARAMS,
			    "http/request header name is invalid: invalid HTTP header name");
			rc = -2;
			break;
		}
		if ((rc = header_value(req, h, name, &value)) != 0)
			break;
		if (!is_header_value(value)) {
			rpc_fail(req, RPC_INVALID_PARAMS, "http/request header value is "
			    "invalid for %s: failed to parse header value", name);
			free(value);
			rc = -2;
			break;
		}
		if ((lname = strdup(name)) == NULL) {
			free(value);
			rc = -1;
			break;
		}
		for (j = 0; lname[j] != '\0'; j++)
			if (lname[j] >= 'A' && lname[j] <= 'Z')
				lname[j] = (char)(lname[j] - 'A' + 'a');
		/* the client's first value of a name replaces one from the URL */
		rc = header_add(spec->headers, lname, value,
		    json_object_get(seen, lname) == NULL);
		if (rc == 0)
			rc = json_object_set_new(seen, lname, json_true());
		free(lname);
		free(value);
	}
	json_decref(seen);
	return rc;
}

/* 0: spec ready; -1: req already answered. */
static int
spec_build(struct rpc_req *req, struct http_params *p, struct http_spec *spec)
{
	enum http_url_status	 us;
	char			 err[HTTP_URL_ERRLEN];
	int			 rc;

	if (p->stream && http_xfer_stream_active(p->request_id)) {
		rpc_fail(req, RPC_INVALID_PARAMS, "http/request streamResponse requestId "
		    "`%s` is already active", p->request_id);
		return -1;
	}
	if (!is_token(p->method) || strlen(p->method) != p->method_len) {
		rpc_fail(req, RPC_INVALID_PARAMS,
		    "http/request method is invalid: invalid HTTP method");
		return -1;
	}
	us = http_url_parse(p->url, NULL, &spec->url, err, sizeof(err));
	if (us == HTTP_URL_INVALID || us == HTTP_URL_SCHEME) {
		rpc_fail(req, RPC_INVALID_PARAMS, us == HTTP_URL_INVALID ?
		    "http/request url is invalid: %s" :
		    "http/request only supports http and https URLs, got %s", err);
		return -1;
	}
	if (us != HTTP_URL_OK)
		goto nomem;
	if ((rc = headers_build(req, p->headers, spec)) == -2)
		return -1;
	if (rc == -1)
		goto nomem;
	if (p->has_timeout && p->timeout_ms == 0) {
		/* the reference's outer timer wins the race at zero */
		rpc_fail(req, RPC_INTERNAL_ERROR,
		    "http/request failed: route-aware request timed out");
		return -1;
	}
	if ((spec->method = strdup(p->method)) == NULL ||
	    (spec->request_id = strdup(p->request_id)) == NULL)
		goto nomem;
	if (p->bodylen > 0) {
		spec->body = p->body;
		spec->bodylen = p->bodylen;
		p->body = NULL;
	}
	spec->timeout_ms = p->has_timeout ? p->timeout_ms : 0;
	spec->follow = p->follow;
	spec->stream = p->stream;
	return 0;
nomem:
	log_warnx("http/request: out of memory");
	rpc_fail(req, RPC_INTERNAL_ERROR, "http/request failed: out of memory");
	return -1;
}

/*
 * With a sidecar, requests made for the client go through it like any
 * child's traffic: the connection is registered once, as "http/request",
 * and its credentials go in the proxy URL.  When the sidecar inspects
 * HTTPS (limited mode) it names the bundle trusting its CA, as it does for
 * a managed child, and libcurl verifies targets with it.  Never through
 * our own embedded proxy: that one serves managed processes only.  -1
 * when req was answered.
 */
static struct netproxy_reg	*sidecar_reg;

/* The client is gone: so are its credentials (a resumed client registers anew). */
static void
http_sidecar_drop(void)
{
	netproxy_unregister(sidecar_reg);
	sidecar_reg = NULL;
	http_xfer_set_proxy(NULL, NULL);
}

static int
http_via_sidecar(struct rpc_req *req)
{
	json_t		*env, *start;
	const char	*url;
	char		 err[512];
	int		 rv;

	/* a configured sidecar only: our own proxy is for managed processes */
	if (!netproxy_enabled() || netproxy_embedded() || sidecar_reg != NULL)
		return 0;
	start = json_pack("{s:{s:s}}", "metadata", "toolCallId", "http/request");
	env = json_object();
	rv = start != NULL && env != NULL ?
	    netproxy_register("http/request", start, &sidecar_reg, err, sizeof(err)) : -2;
	if (rv != 0) {
		sidecar_reg = NULL;
		rpc_fail(req, RPC_INTERNAL_ERROR, "http/request failed: %s",
		    rv == -1 ? err : "out of memory");
	} else if (netproxy_child_env(sidecar_reg, env) == -1 ||
	    (url = json_string_value(json_object_get(env, "HTTP_PROXY"))) == NULL ||
	    http_xfer_set_proxy(url, json_string_value(json_object_get(env,
	    "CURL_CA_BUNDLE"))) == -1) {
		http_sidecar_drop();
		rv = -1;
		rpc_fail(req, RPC_INTERNAL_ERROR, "http/request failed: no proxy URL");
	}
	json_decref(start);
	json_decref(env);
	return rv == 0 ? 0 : -1;
}

static void
http_request(struct rpc_req *req, json_t *params)
{
	struct http_params	 p;
	struct http_spec	*spec;
	struct jx_err		 e;

	if (http_params_decode(params, &p, &e) == -1) {
		free(p.body);
		rpc_fail_params(req, &e);
		return;
	}
	if (!rpc_admit(req) || http_via_sidecar(req) == -1) {
		free(p.body);
		return;
	}
	if ((spec = calloc(1, sizeof(*spec))) == NULL) {
		free(p.body);
		rpc_fail(req, RPC_INTERNAL_ERROR, "http/request failed: out of memory");
		return;
	}
	spec->url.port = -1;
	if (p.headers == NULL)
		p.headers = json_array();	/* an empty list; freed below */
	else
		json_incref(p.headers);
	if (p.headers != NULL && spec_build(req, &p, spec) == 0) {
		http_xfer_start(req, spec);
		spec = NULL;
	} else if (p.headers == NULL)
		rpc_fail(req, RPC_INTERNAL_ERROR, "http/request failed: out of memory");
	json_decref(p.headers);
	http_spec_free(spec);
	free(p.body);
}

const struct rpc_method http_methods[] = {
	{ "http/request", "http", http_request, RPC_SELF_GATED },
	{ NULL, NULL, NULL, 0 },
};

void
http_req_init(size_t max_message)
{
	session_set_capability("httpHeaderEnvVars", 1);
	rpc_on_detach(http_sidecar_drop);
	if (http_xfer_init(max_message) == -1)
		fatalx("http/request: cannot set up libcurl");
}

void
http_req_shutdown(void)
{
	http_xfer_shutdown();
}

int
http_req_set_proxy(const char *url)
{
	return http_xfer_set_proxy(url, NULL);
}
