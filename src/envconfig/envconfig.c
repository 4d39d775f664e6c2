/*
 * environmentConfig/read: the executor's Codex configuration and
 * requirements layers (envconfig_layers.c), each cut down to the key
 * paths the client asks for and printed back as TOML, as the reference
 * answers.  A path runs down through tables; where it meets anything else
 * that value comes whole, where its key is missing its table comes empty.
 * A layer the paths leave nothing of is left out.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "envconfig/envconfig.h"
#include "envconfig/envconfig_int.h"
#include "rpc/rpc_serde.h"
#include "session/session.h"
#include "util/codex_home.h"
#include "uri.h"

static void	m_read(struct rpc_req *, json_t *);

const struct rpc_method envconfig_methods[] = {
	{ "environmentConfig/read", "environment config", m_read, RPC_SELF_GATED },
	{ NULL, NULL, NULL, 0 },
};

void
envconfig_init(void)
{
	session_set_capability("environmentConfigRead", 1);
}

/* The part of t the selectors (key paths, depth segments down already) name. */
static struct toml_node *
project(const struct toml_node *t, json_t **sel, size_t nsel, size_t depth)
{
	struct toml_node	*out, *kid;
	json_t			**sub, *seg;
	size_t			 i, j, nsub;

	for (j = 0; j < nsel; j++)
		if (json_array_size(sel[j]) == depth)
			return toml_clone(t);
	if ((out = toml_table_new()) == NULL ||
	    (sub = calloc(nsel, sizeof(*sub))) == NULL) {
		toml_free(out);
		return NULL;
	}
	for (i = 0; i < t->n; i++) {
		for (nsub = j = 0; j < nsel; j++) {
			seg = json_array_get(sel[j], depth);
			if (json_string_length(seg) == t->key[i].len &&
			    memcmp(json_string_value(seg), t->key[i].s, t->key[i].len) == 0)
				sub[nsub++] = sel[j];
		}
		if (nsub == 0)
			continue;
		kid = t->kid[i]->kind == TOML_TABLE ?
		    project(t->kid[i], sub, nsub, depth + 1) : toml_clone(t->kid[i]);
		if (toml_table_add(out, t->key[i].s, t->key[i].len, kid) == -1) {
			toml_free(out);
			out = NULL;
			break;
		}
	}
	free(sub);
	return out;
}

/* {"layers": [...], "cloudInsertionIndex": n}, or NULL. */
static json_t *
stack(const struct ec_layers *ls, json_t *paths)
{
	json_t			*layers = json_array(), **sel = NULL;
	struct toml_node	*cut;
	char			*text, *uri;
	size_t			 i, len, nsel = json_array_size(paths), cloud = 0;
	int			 ok = layers != NULL;

	if (ok && nsel > 0 && (sel = calloc(nsel, sizeof(*sel))) == NULL)
		ok = 0;
	for (i = 0; ok && i < nsel; i++)
		sel[i] = json_array_get(paths, i);
	for (i = 0; ok && nsel > 0 && i < ls->n; i++) {
		if ((cut = project(ls->v[i].doc, sel, nsel, 0)) == NULL) {
			ok = 0;
			break;
		}
		if (cut->n > 0) {
			text = toml_emit(cut, &len);
			uri = path_to_uri(ls->v[i].base_dir);
			ok = text != NULL && uri != NULL && json_array_append_new(layers,
			    json_pack("{s:s,s:s,s:s%}", "source", ls->v[i].source, "baseDir", uri,
			    "toml", text, len)) == 0;
			cloud += ls->v[i].system;
			free(text);
			free(uri);
		}
		toml_free(cut);
	}
	free(sel);
	if (!ok) {
		json_decref(layers);
		return NULL;
	}
	return json_pack("{s:o,s:I}", "layers", layers, "cloudInsertionIndex", (json_int_t)cloud);
}

/* An array of key paths, each an array of strings; serde's words if not. */
static int
key_paths(json_t *o, const char *field, json_t **out, struct jx_err *e)
{
	json_t	*p, *seg;
	size_t	 i, j;

	*out = NULL;
	if (jx_any(o, field, JX_REQ, out, e) == -1)
		return -1;
	if (*out == NULL)	/* missing in jx_in_order()'s one field */
		return 0;
	if (!json_is_array(*out))
		return serde_type_error(e, *out, "a sequence", 0);
	json_array_foreach(*out, i, p) {
		if (!json_is_array(p))
			return serde_type_error(e, p, "a sequence", 0);
		json_array_foreach(p, j, seg)
			if (!json_is_string(seg))
				return serde_type_error(e, seg, "a string", 0);
	}
	return 0;
}

static json_t *
result(const char *home, json_t *cpaths, json_t *rpaths, const struct ec_layers *config,
    const struct ec_layers *reqs)
{
	const char	*user = getenv("HOME");
	char		 host[256], *home_uri, *user_uri = NULL;
	json_t		*c, *r, *out = NULL;
	struct passwd	*pw;

	/* no HOME: the account's home directory, as the reference finds it */
	if ((user == NULL || user[0] == '\0') && (pw = getpwuid(getuid())) != NULL)
		user = pw->pw_dir;
	if (gethostname(host, sizeof(host)) == -1)
		host[0] = '\0';
	host[sizeof(host) - 1] = '\0';
	home_uri = path_to_uri(home);
	if (user != NULL && user[0] == '/')
		user_uri = path_to_uri(user);
	c = stack(config, cpaths);
	r = stack(reqs, rpaths);
	if (home_uri != NULL && c != NULL && r != NULL)
		out = json_pack("{s:s?,s:s,s:s,s:O,s:O}", "userHomeDir", user_uri,
		    "codexHomeDir", home_uri, "hostname", host, "config", c, "requirements", r);
	json_decref(c);
	json_decref(r);
	free(home_uri);
	free(user_uri);
	return out;
}

/* The checks after decoding: the paths. */
static int
paths_ok(struct rpc_req *req, json_t *cpaths, json_t *rpaths)
{
	json_t	*p;
	size_t	 i;

	if (json_array_size(cpaths) == 0 && json_array_size(rpaths) == 0) {
		rpc_fail(req, RPC_INVALID_PARAMS,
		    "at least one config or requirements path is required");
		return 0;
	}
	json_array_foreach(cpaths, i, p)
		if (json_array_size(p) == 0)
			goto empty;
	json_array_foreach(rpaths, i, p)
		if (json_array_size(p) == 0)
			goto empty;
	return 1;
empty:
	rpc_fail(req, RPC_INVALID_PARAMS, "TOML paths must contain at least one key segment");
	return 0;
}

/* The request's params. */
struct read_params {
	json_t	*obj;			/* what the fields below point into */
	char	*cwd;
	json_t	*config_paths, *requirements_paths;
};

/* The fields of rp->obj-like o, checked; cwd only turned into a path later. */
static int
read_decode(json_t *o, void *arg, struct jx_err *e)
{
	struct read_params	*rp = arg;
	json_t			*cwd = NULL;
	char			*path;
	enum uri_status		 us;
	int			 r;

	if (jx_struct(o, "EnvironmentConfigReadParams", e) == -1 ||
	    (r = jx_any(o, "cwd", JX_REQ, &cwd, e)) == -1)
		return -1;
	if (r == 1) {
		if (!json_is_string(cwd))
			return serde_type_error(e, cwd, "a string", 0);
		if ((path = uri_json_to_path(cwd, e, &us)) == NULL)
			return -1;
		free(path);
	}
	return key_paths(o, "configPaths", &rp->config_paths, e) == -1 ||
	    key_paths(o, "requirementsPaths", &rp->requirements_paths, e) == -1 ? -1 : 0;
}

/* 0, or -1 with the request answered. */
static int
read_params(struct rpc_req *req, json_t *params, struct read_params *rp)
{
	static const char *const fields[] = { "cwd", "configPaths", "requirementsPaths", NULL };
	static const struct serde_struct sp = { "EnvironmentConfigReadParams", fields, 0 };
	struct jx_err	 e;
	long		 n;
	enum uri_status	 us;
	int		 rc;

	rp->obj = serde_struct_params(params, &sp, &n);
	rc = jx_in_order(rp->obj, read_decode, rp, &e);
	/* here even a URI that names no local path is -32602, as the reference says */
	if (rc == 0 && (rp->cwd = uri_json_to_path(json_object_get(rp->obj, "cwd"), &e,
	    &us)) == NULL)
		rc = -1;
	if (serde_struct_seq_end(&sp, n, rc, &e) == 0)
		return 0;
	rpc_fail_params(req, &e);
	return -1;
}

static void
m_read(struct rpc_req *req, json_t *params)
{
	struct read_params	 rp = { NULL, NULL, NULL, NULL };
	struct ec_layers	 config = { NULL, 0 }, reqs = { NULL, 0 };
	json_t			*res;
	char			*home = NULL, err[EC_ERRLEN];

	if (read_params(req, params, &rp) == -1 || !rpc_admit(req) ||
	    !paths_ok(req, rp.config_paths, rp.requirements_paths))
		goto done;
	if ((home = codex_home_find(err, sizeof(err))) == NULL ||
	    ec_load(rp.cwd, home, &config, &reqs, err, sizeof(err)) == -1) {
		rpc_fail(req, RPC_INTERNAL_ERROR, "%s%s", home != NULL ?
		    "failed to load executor-local config: " : "failed to find Codex home: ", err);
		goto done;
	}
	if ((res = result(home, rp.config_paths, rp.requirements_paths, &config, &reqs)) ==
	    NULL) {
		log_warnx("environmentConfig/read: out of memory");
		rpc_fail(req, RPC_INTERNAL_ERROR, "out of memory");
		goto done;
	}
	rpc_reply(req, res);
done:
	ec_layers_free(&config);
	ec_layers_free(&reqs);
	free(rp.cwd);
	free(home);
	json_decref(rp.obj);
}
