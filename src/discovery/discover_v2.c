/*
 * capabilities/discoverV2: the skills and plugins installed on this host,
 * from the roots the reference searches, in its order: $CODEX_HOME/skills,
 * $HOME/.agents/skills, /etc/codex/skills, then the plugins of the cache
 * $CODEX_HOME/plugins/cache/<marketplace>/<plugin>/<version> (a version
 * `local` wins, otherwise the highest).  `cwd` chooses nothing: the
 * project's own skills are found by the client through the fs methods.
 *
 * With a `sandbox`, what it does not let execd see is not listed: a root
 * outside it silently, a file it denies with the reference's one warning
 * for the root, as for a skill that cannot be read or is invalid.
 */
#include "config.h"

#include <sys/stat.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "fs/fs_access.h"
#include "discovery/discovery_int.h"
#include "fs/fs_param.h"
#include "policy/fs_policy.h"
#include "rpc/rpc_scan.h"
#include "rpc/rpc_serde.h"
#include "util/codex_home.h"
#include "uri.h"

#define META_FILE_MAX	(1U << 20)	/* bytes of an openai.yaml the reference reads */
#define DISCOVER_WARNING "some capability metadata could not be loaded; discovery may be incomplete"

struct discovery {
	const struct fs_policy	*pol;
	json_t			*skills, *plugins, *warnings;
};

static void
warn_once(struct discovery *d)
{
	json_array_append_new(d->warnings, json_string(DISCOVER_WARNING));
}

static int
is_dir(const char *path)
{
	struct stat	st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Up to max bytes of path into buf: their count, or -1. */
static ssize_t
read_upto(const struct fs_policy *pol, const char *path, char *buf, size_t max)
{
	ssize_t	r = 0;
	size_t	got = 0;
	int	fd;

	if ((fd = fs_discover_open(pol, path)) == -1)
		return -1;
	while (got < max) {
		if ((r = read(fd, buf + got, max - got)) == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	return r == -1 ? -1 : (ssize_t)got;
}

/*
 * The dependencies and policy of the skill whose SKILL.md is path, from
 * agents/openai.yaml beside it, into s.  A file that is not there (or not
 * a file) is no metadata; one that cannot be read as text of at most 1 MiB
 * is a warning.  1: warn.
 */
static int
skill_meta(const struct fs_policy *pol, const char *path, json_t *s)
{
	char		 meta[PATH_MAX], *buf;
	const char	*slash = strrchr(path, '/');
	json_t		*deps = json_null(), *policy = json_null();
	struct stat	 st;
	ssize_t		 n;
	int		 err, bad = 0;

	if (slash == NULL || fs_pathf(meta, sizeof(meta), "%.*s/agents/openai.yaml",
	    (int)(slash - path), path) != 0)
		goto out;
	if (stat(meta, &st) == -1) {
		bad = errno != ENOENT && errno != ENOTDIR;	/* e.g. agents/ unreadable */
		goto out;
	}
	if (!S_ISREG(st.st_mode))
		goto out;
	if ((err = fs_allowed(pol, meta, 1, FS_WANT_READ)) != 0) {
		bad = err != ENOENT;
		goto out;
	}
	if ((buf = malloc(META_FILE_MAX + 1)) == NULL) {
		log_warnx("capabilities/discoverV2: out of memory");
		goto out;
	}
	n = read_upto(pol, meta, buf, META_FILE_MAX + 1);
	if (n < 0 || (size_t)n > META_FILE_MAX || !utf8_valid((uint8_t *)buf, (size_t)n))
		bad = 1;
	else
		fs_skill_meta_parse(buf, (size_t)n, &deps, &policy);
	free(buf);
out:
	json_object_set_new(s, "dependencies", deps);
	json_object_set_new(s, "policy", policy);
	return bad;
}

/* One skill, or NULL: *bad says whether the reference would warn of it. */
static json_t *
skill(const struct fs_policy *pol, const char *path, const char *prefix, int *bad)
{
	char		 dir[PATH_MAX], *slash, *uri, *named = NULL;
	const char	*base;
	json_t		*file, *contents, *s = NULL;
	int		 err;

	if ((err = fs_allowed(pol, path, 1, FS_WANT_READ)) != 0) {
		*bad |= err != ENOENT;
		return NULL;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	if ((slash = strrchr(dir, '/')) != NULL)
		*slash = '\0';
	base = (slash = strrchr(dir, '/')) != NULL ? slash + 1 : dir;
	file = fs_discover_file_entry(pol, path);
	if ((contents = json_object_get(file, "contents")) != NULL)
		s = fs_skill_parse(json_string_value(contents), json_string_length(contents), base);
	json_decref(file);
	if (s == NULL) {
		*bad = 1;
		return NULL;
	}
	if (prefix != NULL && asprintf(&named, "%s:%s",
	    prefix, json_string_value(json_object_get(s, "name"))) != -1)
		json_object_set_new(s, "name", json_string(named));
	free(named);
	if ((uri = path_to_uri(path)) != NULL)
		json_object_set_new(s, "path", json_string(uri));
	free(uri);
	*bad |= skill_meta(pol, path, s);
	return s;
}

/* Move keys a and b to the end of o, in the reference's order of fields. */
static void
last_keys(json_t *o, const char *a, const char *b)
{
	const char	*k[] = { a, b };
	json_t		*v;
	size_t		 i;

	for (i = 0; i < 2; i++)
		if ((v = json_incref(json_object_get(o, k[i]))) != NULL) {
			json_object_del(o, k[i]);
			json_object_set_new(o, k[i], v);
		}
}

/* The skills below dir into out; with root_id, each names its root. */
static int
skills_below(struct discovery *d, const char *dir, const char *root_id, const char *prefix,
    json_t *out)
{
	json_t	*files, *v, *s, *denied = json_array();
	size_t	 i;
	char	*uri;
	int	 bad = 0;

	files = fs_discover_files(dir, d->pol, denied);
	bad = json_array_size(denied) > 0;
	json_decref(denied);
	uri = path_to_uri(dir);
	json_array_foreach(files, i, v) {
		if ((s = skill(d->pol, json_string_value(v), prefix, &bad)) == NULL)
			continue;
		if (root_id != NULL)
			json_object_set_new(s, "discoveryRoot", json_pack("{s:s,s:s?}",
			    "id", root_id, "path", uri));
		last_keys(s, "dependencies", "policy");
		json_array_append_new(out, s);
	}
	free(uri);
	json_decref(files);
	return bad;
}

/*
 * As fs_allowed for reading, except that below a denied directory there
 * is nothing (ENOENT), as the reference's sandbox shows it: only the
 * denied directory itself is there and unreadable (EACCES).
 */
static int
readable(const struct fs_policy *pol, const char *path)
{
	char	parent[PATH_MAX], *slash;
	int	err;

	if ((err = fs_allowed(pol, path, 1, FS_WANT_READ)) != EACCES)
		return err;
	snprintf(parent, sizeof(parent), "%s", path);
	if ((slash = strrchr(parent, '/')) != NULL && slash != parent)
		*slash = '\0';
	return fs_allowed(pol, parent, 1, FS_WANT_READ) == EACCES ? ENOENT : EACCES;
}

static void
skill_root(struct discovery *d, const char *id, const char *dir)
{
	int	err;

	if (!is_dir(dir))
		return;
	if ((err = readable(d->pol, dir)) != 0) {
		if (err != ENOENT)
			warn_once(d);
		return;
	}
	if (skills_below(d, dir, id, NULL, d->skills))
		warn_once(d);
}

/*
 * Names of the directories in dir (an empty array if none), in the
 * directory's own order: the order the reference folds versions in.
 */
static json_t *
subdirs(const char *dir)
{
	DIR		*dp;
	struct dirent	*de;
	json_t		*names = json_array();
	char		 path[PATH_MAX];

	if (names == NULL || (dp = opendir(dir)) == NULL)
		return names;
	while ((de = readdir(dp)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
		    fs_pathf(path, sizeof(path), "%s/%s", dir,
		    de->d_name) == 0 && is_dir(path))
			json_array_append_new(names, json_string(de->d_name));
	closedir(dp);
	return names;
}

/* {"path","contents"} of root/name if it is there, else null. */
static json_t *
optional_file(struct discovery *d, const char *root, const char *name, int *bad)
{
	char	path[PATH_MAX];
	int	fd;

	if (fs_pathf(path, sizeof(path), "%s/%s", root, name) != 0 ||
	    access(path, F_OK) != 0 || fs_allowed(d->pol, path, 1, FS_WANT_READ) != 0)
		return json_null();
	/* there but unreadable: null, and the plugin's one warning */
	if ((fd = fs_discover_open(d->pol, path)) == -1) {
		*bad = 1;
		return json_null();
	}
	close(fd);
	return fs_discover_file_entry(d->pol, path);
}

static void
plugin(struct discovery *d, const char *market, const char *name, const char *root,
    const char *version)
{
	char		 manifest[PATH_MAX], skills[PATH_MAX], *uri, *id = NULL;
	json_t		*mf, *parsed = NULL, *p, *list, *name_v, *mcp, *apps;
	const char	*shown = strrchr(root, '/') + 1;	/* without a name: the version */
	int		 err, bad = 0;

	static const char *const kinds[] = { ".codex-plugin", ".claude-plugin", ".cursor-plugin" };
	size_t		 k;

	/* the first of the manifests there is, as the reference looks for them */
	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		if (fs_pathf(manifest, sizeof(manifest), "%s/%s/plugin.json", root, kinds[k]) != 0 ||
		    access(manifest, F_OK) == 0)
			break;
	if (k == sizeof(kinds) / sizeof(kinds[0]))
		k = 0;
	if (fs_pathf(manifest, sizeof(manifest), "%s/%s/plugin.json", root, kinds[k]) != 0)
		return;
	if ((err = readable(d->pol, root)) != 0) {
		if (err != ENOENT)
			warn_once(d);
		return;
	}
	if (access(manifest, F_OK) != 0) {
		warn_once(d);
		return;
	}
	if ((err = fs_allowed(d->pol, manifest, 1, FS_WANT_READ)) != 0) {
		if (err != ENOENT)
			warn_once(d);
		return;
	}
	mf = fs_discover_file_entry(d->pol, manifest);
	if (json_is_object(mf))
		parsed = json_loads(json_string_value(json_object_get(mf, "contents")), 0, NULL);
	if (!json_is_object(parsed)) {
		warn_once(d);
		goto out;
	}
	/* a name that is not a string spoils the manifest; an empty one is none */
	if ((name_v = json_object_get(parsed, "name")) != NULL && !json_is_null(name_v) &&
	    !json_is_string(name_v)) {
		warn_once(d);
		goto out;
	}
	if (json_string_length(name_v) > 0)
		shown = json_string_value(name_v);
	list = json_array();
	/* one warning for the plugin, whatever of it could not be read */
	if (fs_pathf(skills, sizeof(skills), "%s/skills", root) == 0 && is_dir(skills) &&
	    skills_below(d, skills, NULL, shown, list))
		bad = 1;
	mcp = optional_file(d, root, ".mcp.json", &bad);
	apps = optional_file(d, root, ".app.json", &bad);
	if (bad)
		warn_once(d);
	uri = path_to_uri(root);
	if (asprintf(&id, "%s@%s", name, market) == -1) {
		id = NULL;
		json_decref(mcp);
		json_decref(apps);
		json_decref(list);
		log_warnx("capabilities/discoverV2: out of memory");
	} else if ((p = json_pack("{s:s,s:s,s:n,s:s,s:s?,s:{s:O,s:o,s:o},s:o}", "id", id,
	    "displayName", shown, "remotePluginId", "version", version, "root", uri, "files",
	    "manifest", mf, "mcpConfig", mcp, "appsConfig", apps, "skills", list)) != NULL)
		json_array_append_new(d->plugins, p);
	else
		log_warnx("capabilities/discoverV2: out of memory");
	free(id);
	free(uri);
out:
	json_decref(parsed);
	json_decref(mf);
}

static int
by_id(const void *a, const void *b)
{
	return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "id")),
	    json_string_value(json_object_get(*(json_t *const *)b, "id")));
}

/* The reference lists plugins by id, whatever their marketplace. */
static void
sort_by_id(json_t *plugins)
{
	size_t	  i, n = json_array_size(plugins);
	json_t	**v = calloc(n + 1, sizeof(*v));

	if (v == NULL)
		return;
	for (i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(plugins, i));
	qsort(v, n, sizeof(*v), by_id);
	json_array_clear(plugins);
	for (i = 0; i < n; i++)
		json_array_append_new(plugins, v[i]);
	free(v);
}

static void
plugin_cache(struct discovery *d, const char *codex_home)
{
	char		 cache[PATH_MAX], dir[PATH_MAX], root[PATH_MAX];
	json_t		*markets, *names, *versions, *m, *n;
	const char	*v;
	size_t		 i, j;

	if (fs_pathf(cache, sizeof(cache), "%s/plugins/cache", codex_home) != 0 ||
	    !is_dir(cache) || fs_allowed(d->pol, cache, 1, FS_WANT_READ) != 0)
		return;
	markets = subdirs(cache);
	json_array_foreach(markets, i, m) {
		/* a marketplace or plugin the sandbox hides has nothing, without a warning */
		if (!fs_cache_name_ok(json_string_value(m)) ||
		    fs_pathf(dir, sizeof(dir), "%s/%s", cache, json_string_value(m)) != 0 ||
		    fs_allowed(d->pol, dir, 1, FS_WANT_READ) != 0)
			continue;
		names = subdirs(dir);
		json_array_foreach(names, j, n) {
			if (!fs_cache_name_ok(json_string_value(n)) ||
			    fs_pathf(root, sizeof(root), "%s/%s", dir, json_string_value(n)) != 0 ||
			    fs_allowed(d->pol, root, 1, FS_WANT_READ) != 0)
				continue;
			versions = subdirs(root);
			if ((v = fs_pick_version(versions)) != NULL &&
			    fs_pathf(root, sizeof(root), "%s/%s/%s", dir, json_string_value(n), v) == 0)
				plugin(d, json_string_value(m), json_string_value(n), root, v);
			json_decref(versions);
		}
		json_decref(names);
	}
	json_decref(markets);
	sort_by_id(d->plugins);
}

/*
 * $CODEX_HOME (symlinks resolved) or ~/.codex, and the home directory; -1
 * with err set when CODEX_HOME names no directory, as the reference fails.
 */
static int
homes(char *codex_home, char *home, size_t len, char *err, size_t errlen)
{
	const char	*env = getenv("CODEX_HOME"), *h = getenv("HOME");
	struct passwd	*pw;
	char		*real;

	if ((h == NULL || h[0] == '\0') && (pw = getpwuid(getuid())) != NULL)
		h = pw->pw_dir;
	snprintf(home, len, "%s", h != NULL ? h : "");
	if (env != NULL && env[0] != '\0') {
		if ((real = codex_home_find(err, errlen)) == NULL)
			return -1;
		if (fs_pathf(codex_home, len, "%s", real) != 0)
			codex_home[0] = '\0';
		free(real);
	} else if (fs_pathf(codex_home, len, "%s/.codex", home) != 0)
		codex_home[0] = '\0';	/* too long to name: no skills there */
	return 0;
}

/* As the fs methods' sandbox, named as the discovery request's type. */
static int
sandbox_decode(json_t *v, void *out, struct jx_err *e, int *code)
{
	if (json_is_array(v) && json_array_size(v) == 0) {
		/* serde's sequence form; a longer one is a type error (README) */
		*code = RPC_INVALID_PARAMS;
		snprintf(e->msg, sizeof(e->msg),
		    "invalid length 0, expected struct FileSystemSandboxContext with 9 elements");
		return -1;
	}
	if (!json_is_object(v)) {
		*code = RPC_INVALID_PARAMS;
		return serde_type_error(e, v, "struct FileSystemSandboxContext", 0);
	}
	return fs_sandbox_field.decode(v, out, e, code);
}

static void
sandbox_release(void *out)
{
	fs_sandbox_field.release(out);
}

static const struct fp_decoder discover_sandbox = { sandbox_decode, sandbox_release };

/* The reference wants sandbox.cwd even where it does not use it. */
static int
sandbox_has_cwd(json_t *params)
{
	json_t	*sb = json_object_get(params, "sandbox");

	return !json_is_object(sb) || json_object_get(sb, "cwd") != NULL;
}

void
fs_m_discover_v2(struct rpc_req *req, json_t *params)
{
	char			*cwd = NULL, ch[PATH_MAX], home[PATH_MAX], dir[PATH_MAX + 16];
	char			 err[PATH_MAX + 128];
	struct fs_policy	*pol = NULL;
	struct fp_deferred	 fd = { 0 };
	struct fp_field		 f[] = {
		{ "cwd", FP_PATH, FP_REQ, &cwd },
		{ "sandbox", FP_DECODE, FP_SEQ_DEFAULT, &pol, &discover_sandbox },
	};
	struct discovery	 d = { NULL, json_array(), json_array(), json_array() };
	struct jx_err		 e;

	if (fp_parse(params, "DiscoverV2CapabilitiesRequest", f, 2, &fd, &e) == -1) {
		rpc_fail_params(req, &e);
		goto out;
	}
	if (!sandbox_has_cwd(params)) {
		rpc_fail(req, RPC_INVALID_PARAMS, "missing field `cwd`");
		goto out;
	}
	/* cwd chooses nothing: one naming no local path is no error (the sandbox's are) */
	if (fd.code != 0 && fd.rank >= 100)
		fd.code = 0;
	if (!rpc_admit(req) || fs_deferred(req, &fd, pol))
		goto out;
	d.pol = pol;
	if (homes(ch, home, sizeof(ch), err, sizeof(err)) == -1) {
		rpc_fail(req, RPC_INTERNAL_ERROR, "%s", err);
		goto out;
	}
	/* a link out of a protected place into a writable root leads to nothing */
	fs_discover_check_written(1);
	snprintf(dir, sizeof(dir), "%s/skills", ch);
	skill_root(&d, "codex-home-skills", dir);
	snprintf(dir, sizeof(dir), "%s/.agents/skills", home);
	skill_root(&d, "user-agent-skills", dir);
	skill_root(&d, "system-skills", "/etc/codex/skills");
	plugin_cache(&d, ch);
	fs_discover_check_written(0);
	rpc_reply(req, json_pack("{s:O,s:O,s:O}", "plugins", d.plugins, "skills", d.skills,
	    "warnings", d.warnings));
out:
	json_decref(d.skills);
	json_decref(d.plugins);
	json_decref(d.warnings);
	fp_release(f, 2);
}
