/* Decoding a sandbox object (FileSystemSandboxContext) with the reference's error texts. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/fs_policy_int.h"
#include "rpc/rpc.h"
#include "rpc/rpc_serde.h"
#include "uri.h"

static const char *const profile_types[] = { "managed", "disabled", "external", NULL };
static const char *const networks[] = { "restricted", "enabled", NULL };
static const char *const fs_types[] = { "restricted", "unrestricted", NULL };
static const char *const accesses[] = { "read", "write", "deny", "none", NULL };
static const char *const path_types[] = { "path", "glob_pattern", "special", NULL };
static const char *const specials[] = { "root", "minimal", "current_working_directory",
	"project_roots", "tmpdir", "slash_tmp", "unknown", NULL };
static const char *const missing_behaviors[] = { "skip", NULL };
static const char *const win_levels[] = { "disabled", "restricted-token", "elevated",
	"mxc", NULL };
static const char *const proxy_modes[] = { "reconcile", "preserve", NULL };

/* ---- decoding (inside `permissions` serde buffers: "integer `5`" wording) ---- */

static int
want_str(json_t *o, const char *key, int req, const char **out, struct jx_err *e)
{
	json_t	*v = json_object_get(o, key);

	if (v == NULL || (json_is_null(v) && !req)) {
		if (req)
			return serde_missing(e, key);
		*out = NULL;
		return 0;
	}
	if (!json_is_string(v))
		return serde_type_error(e, v, "a string", 1);
	*out = json_string_value(v);
	return 0;
}

static int
want_variant(json_t *o, const char *key, int req, const char *const *vars, int *out,
    struct jx_err *e)
{
	json_t	*v = json_object_get(o, key);

	*out = -1;
	if (v == NULL || (json_is_null(v) && !req)) {
		if (req)
			return serde_missing(e, key);
		return 0;
	}
	if (!json_is_string(v))
		return serde_type_error(e, v, "string or map", 1);
	if ((*out = serde_variant_json(v, vars)) == -1)
		return serde_unknown_variant_json(e, v, vars);
	return 0;
}

/*
 * A tag that is no string.  Within an enum serde has buffered (one inside
 * another internally tagged enum) a value keeps its kind: an unsigned
 * integer is the variant's index, anything else is named with its value.
 */
static int
tag_not_string(json_t *t, const char *const *vars, int buffered, int *out, struct jx_err *e)
{
	json_int_t	i;
	int		n;

	if (!buffered)
		return serde_type_error(e, t, "variant identifier", 0);
	for (n = 0; vars[n] != NULL; n++)
		;
	if (json_is_integer(t) && (i = json_integer_value(t)) >= 0) {
		if (i < n) {
			*out = (int)i;
			return 0;
		}
		snprintf(e->msg, sizeof(e->msg), "invalid value: integer `%" JSON_INTEGER_FORMAT
		    "`, expected variant index 0 <= i < %d", i, n);
		return -1;
	}
	return serde_type_error(e, t, "variant identifier", 1);
}

/* The "type" tag of an internally tagged enum (buffered: see tag_not_string()). */
static int
want_tag(json_t *o, const char *enum_name, const char *const *vars, int buffered, int *out,
    struct jx_err *e)
{
	char	 exp[128];
	json_t	*t;

	snprintf(exp, sizeof(exp), "internally tagged enum %s", enum_name);
	if (!json_is_object(o))
		return serde_type_error(e, o, exp, 1);
	if ((t = json_object_get(o, "type")) == NULL)
		return serde_missing(e, "type");
	if (!json_is_string(t))
		return tag_not_string(t, vars, buffered, out, e);
	if ((*out = serde_variant_json(t, vars)) == -1)
		return serde_unknown_variant_json(e, t, vars);
	return 0;
}

static int
decode_special(json_t *v, struct fsp_entry *en, struct jx_err *e)
{
	const char	*sub = NULL, *path = NULL;
	json_t		*k;
	int		 i;

	if (!json_is_object(v))
		return serde_type_error(e, v, "internally tagged enum FileSystemSpecialPath", 1);
	if ((k = json_object_get(v, "kind")) == NULL)
		return serde_missing(e, "kind");
	if (!json_is_string(k))
		return serde_type_error(e, k, "variant identifier", 0);
	if ((i = serde_variant_json(k, specials)) == -1)
		return serde_unknown_variant_json(e, k, specials);
	en->special = (enum fsp_special)i;
	if (en->special == S_PROJECT_ROOTS) {
		if (want_str(v, "subpath", 0, &sub, e) == -1)
			return -1;
		if (sub != NULL && (en->subpath = strdup(sub)) == NULL)
			return -1;
	} else if (en->special == S_UNKNOWN) {
		if (want_str(v, "path", 1, &path, e) == -1 ||
		    want_str(v, "subpath", 0, &sub, e) == -1)
			return -1;
	}
	return 0;
}

static int
decode_entry_path(json_t *v, struct fsp_entry *en, struct fsp_ctx *c, struct jx_err *e)
{
	const char	*s;
	struct jx_err	 ue;
	enum uri_status	 us;
	int		 type;
	json_t		*val;

	if (want_tag(v, "ExecFileSystemPath", path_types, 1, &type, e) == -1)
		return -1;
	en->kind = (enum fsp_kind)type;
	switch (en->kind) {
	case E_PATH:
		if (want_str(v, "path", 1, &s, e) == -1)
			return -1;
		/* the whole string: a NUL must not cut the path short */
		if ((en->path = uri_json_to_path(json_object_get(v, "path"), &ue,
		    &us)) != NULL)
			return 0;
		if (us != URI_NOT_LOCAL) {
			*e = ue;
			return -1;
		}
		if (!c->bad_entry_uri) {
			c->bad_entry_uri = 1;
			if (snprintf(c->bad_uri.msg, sizeof(c->bad_uri.msg),
			    "invalid sandbox permission path URI: %s", ue.msg) < 0)
				c->bad_uri.msg[0] = '\0';
		}
		return 0;
	case E_GLOB:
		if (want_str(v, "pattern", 1, &s, e) == -1)
			return -1;
		return (en->path = strdup(s)) == NULL ? -1 : 0;
	case E_SPECIAL:
		if ((val = json_object_get(v, "value")) == NULL)
			return serde_missing(e, "value");
		return decode_special(val, en, e);
	}
	return 0;
}

static int
decode_entry(json_t *v, struct fsp_entry *en, struct fsp_ctx *c, struct jx_err *e)
{
	json_t	*p;
	int	 acc, mpb;

	if (!json_is_object(v))
		return serde_type_error(e, v, "struct ExecFileSystemSandboxEntry", 1);
	if ((p = json_object_get(v, "path")) == NULL)
		return serde_missing(e, "path");
	if (decode_entry_path(p, en, c, e) == -1)
		return -1;
	if (want_variant(v, "access", 1, accesses, &acc, e) == -1 ||
	    want_variant(v, "missing_path_behavior", 0, missing_behaviors, &mpb, e) == -1)
		return -1;
	en->access = acc == 0 ? FS_ACCESS_READ : acc == 1 ? FS_ACCESS_WRITE : FS_ACCESS_DENY;
	return 0;
}

static int
decode_restricted(json_t *fs, struct fsp_ctx *c, struct jx_err *e)
{
	json_t	*entries, *depth, *v;
	size_t	 i;

	if ((entries = json_object_get(fs, "entries")) == NULL)
		return serde_missing(e, "entries");
	if (!json_is_array(entries))
		return serde_type_error(e, entries, "a sequence", 1);
	if ((c->entries = calloc(json_array_size(entries) + 1, sizeof(*c->entries))) == NULL)
		return -1;
	json_array_foreach(entries, i, v) {
		if (decode_entry(v, &c->entries[i], c, e) == -1) {
			c->nentries = i + 1;
			return -1;
		}
		c->nentries = i + 1;
	}
	depth = json_object_get(fs, "glob_scan_max_depth");
	if (depth != NULL && !json_is_null(depth)) {
		if (json_is_integer(depth) && json_integer_value(depth) <= 0) {
			snprintf(e->msg, sizeof(e->msg),
			    "invalid value: integer `%" JSON_INTEGER_FORMAT
			    "`, expected a nonzero usize", json_integer_value(depth));
			return -1;
		}
		if (!json_is_integer(depth))
			return serde_type_error(e, depth, "a nonzero usize", 1);
	}
	c->restricted = 1;
	return 0;
}

static int
decode_permissions(json_t *perm, struct fsp_ctx *c, struct jx_err *e)
{
	const char	*key;
	json_t		*v;
	size_t		 klen;
	int		 type, net, fst;

	if (want_tag(perm, "ExecPermissionProfile", profile_types, 0, &type, e) == -1)
		return -1;
	if (type == 1)		/* disabled */
		return 0;
	if (type == 0) {	/* managed: its fields as they come, then what is missing */
		jx_fields_foreach(perm, key, klen, v) {
			if (strcmp(key, "file_system") == 0) {
				if (want_tag(v, "ExecManagedFileSystemPermissions", fs_types, 1,
				    &fst, e) == -1 || (fst == 0 && decode_restricted(v, c, e) == -1))
					return -1;
			} else if (strcmp(key, "network") == 0 &&
			    want_variant(perm, "network", 1, networks, &net, e) == -1)
				return -1;
		}
		if (json_object_get(perm, "file_system") == NULL)
			return serde_missing(e, "file_system");
	}
	return want_variant(perm, "network", 1, networks, &net, e);
}

/* ---- the context around the profile (plain serde: "number" wording) ---- */

static int
ctx_path(json_t *v, char **out, struct jx_err *e)
{
	struct jx_err	ue;
	enum uri_status	us;

	if (!json_is_string(v))
		return serde_type_error(e, v, "a string", 0);
	free(*out);
	if ((*out = uri_json_to_path(v, &ue, &us)) != NULL ||
	    us == URI_NOT_LOCAL)
		return 0;	/* a URI for another host is only an error where it is used */
	*e = ue;
	return -1;
}

static int
ctx_paths(json_t *v, struct fsp_ctx *c, int keep, struct jx_err *e)
{
	json_t	*item;
	size_t	 i;
	char	*p = NULL;

	if (!json_is_array(v))
		return serde_type_error(e, v, "a sequence", 0);
	if (keep && (c->roots = calloc(json_array_size(v) + 1, sizeof(char *))) == NULL)
		return -1;
	json_array_foreach(v, i, item) {
		if (ctx_path(item, &p, e) == -1)
			return -1;
		if (keep && p != NULL)
			c->roots[c->nroots++] = p;
		else
			free(p);
		p = NULL;
	}
	return 0;
}

static int
ctx_field(const char *key, json_t *v, struct fsp_ctx *c, struct jx_err *e)
{
	char	*ignored = NULL;
	int	 i, r;

	if (strcmp(key, "permissions") == 0)
		return decode_permissions(v, c, e);
	if (json_is_null(v) && strcmp(key, "windowsSandboxLevel") != 0)
		return 0;
	if (strcmp(key, "windowsSandboxLevel") == 0) {
		if (!json_is_string(v))
			return serde_type_error(e, v, "string or map", 0);
		if (serde_variant_json(v, win_levels) == -1)
			return serde_unknown_variant_json(e, v, win_levels);
	} else if (strcmp(key, "cwd") == 0)
		return ctx_path(v, &c->cwd, e);
	else if (strcmp(key, "userHomeDir") == 0) {
		r = ctx_path(v, &ignored, e);
		free(ignored);
		return r;
	} else if (strcmp(key, "workspaceRoots") == 0)
		return ctx_paths(v, c, 1, e);
	else if (strcmp(key, "temporaryDirectories") == 0)
		return ctx_paths(v, c, 0, e);
	else if (strcmp(key, "windowsSandboxPrivateDesktop") == 0 ||
	    strcmp(key, "useLegacyLandlock") == 0) {
		if (!json_is_boolean(v))
			return serde_type_error(e, v, "a boolean", 0);
	} else if (strcmp(key, "windowsSandboxProxySettingsMode") == 0) {
		if (!json_is_string(v))
			return serde_type_error(e, v, "string or map", 0);
		if ((i = serde_variant_json(v, proxy_modes)) == -1)
			return serde_unknown_variant_json(e, v, proxy_modes);
	}
	return 0;
}

void
fsp_ctx_free(struct fsp_ctx *c)
{
	size_t	i;

	for (i = 0; i < c->nentries; i++) {
		free(c->entries[i].path);
		free(c->entries[i].subpath);
	}
	free(c->entries);
	for (i = 0; i < c->nroots; i++)
		free(c->roots[i]);
	free(c->roots);
	free(c->cwd);
}

static int
needs_cwd(const struct fsp_ctx *c)
{
	size_t	i;

	for (i = 0; i < c->nentries; i++) {
		const struct fsp_entry *en = &c->entries[i];
		if (en->kind == E_GLOB && en->path[0] != '/')
			return 1;
		if (en->kind == E_SPECIAL && (en->special == S_CWD ||
		    en->special == S_PROJECT_ROOTS))
			return 1;
	}
	return 0;
}

int
fsp_decode(json_t *sandbox, struct fsp_ctx *c, struct jx_err *e, int *code)
{
	const char	*key;
	json_t		*v;
	size_t		 klen;

	memset(c, 0, sizeof(*c));
	*code = RPC_INVALID_PARAMS;
	snprintf(e->msg, sizeof(e->msg), "out of memory");
	jx_fields_foreach(sandbox, key, klen, v)
		if (ctx_field(key, v, c, e) == -1)
			return -1;
	if (json_object_get(sandbox, "permissions") == NULL)
		return serde_missing(e, "permissions");
	if (json_object_get(sandbox, "windowsSandboxLevel") == NULL)
		return serde_missing(e, "windowsSandboxLevel");
	if (c->restricted && needs_cwd(c) && c->cwd == NULL) {
		snprintf(e->msg, sizeof(e->msg),
		    "file system sandbox context with dynamic permissions requires cwd");
		return -1;
	}
	if (c->bad_entry_uri) {
		*e = c->bad_uri;
		*code = RPC_INVALID_REQUEST;
		return -1;
	}
	return 0;
}
