/*
 * capabilityRoots/discoverV1, the legacy discovery the reference still
 * serves: every SKILL.md under each root (hidden directories and symlinks
 * followed, one entry per file however many paths reach it), in path
 * order, with the agents/openai.yaml beside it as its metadata.  A root
 * with a plugin manifest is that plugin, its manifest its namespace
 * manifest.
 */
#include "config.h"

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "toml/toml.h"
#include "fs/fs_access.h"
#include "discovery/discovery_int.h"
#include "sandbox/sandbox.h"
#include "policy/fs_policy.h"
#include "rpc/errno_text.h"
#include "rpc/rpc_serde.h"
#include "uri.h"

#define DISCOVER_DEPTH	64		/* directories below a root */
#define DISCOVER_FILE_MAX (1U << 20)	/* bytes of one SKILL.md or its metadata */

/* The walk's state: what it found, and what it must not find twice. */
struct walk {
	json_t			*found;		/* paths of SKILL.md files */
	json_t			*seen;		/* their real paths, and "dev:ino" of directories */
	const struct fs_policy	*pol;		/* what the request's sandbox lets us see */
	json_t			*warnings;	/* of directories it denies */
	json_t			*queue;		/* [path, depth] of directories to list */
};

/* "failed to <what> <uri>: <errno text>" into warnings. */
void
fs_discover_warn(json_t *warnings, const char *what, const char *path, int err)
{
	char	*uri = path_to_uri(path), text[128];

	if (warnings != NULL && uri != NULL)
		json_array_append_new(warnings, json_sprintf("failed to %s %s: %s", what, uri,
		    errno_text(err, text, sizeof(text))));
	free(uri);
}

static void	walk_dir(struct walk *w, const char *dir, int depth);

static int
by_path(const void *a, const void *b)
{
	return strcmp(json_string_value(*(json_t *const *)a),
	    json_string_value(*(json_t *const *)b));
}

static void
walk_entry(struct walk *w, const char *dir, const char *name, int depth)
{
	char		path[PATH_MAX], real[PATH_MAX], key[64];
	struct stat	st;
	int		err;

	if (fs_pathf(path, sizeof(path), "%s/%s", strcmp(dir, "/") == 0 ? "" : dir,
	    name) != 0 || stat(path, &st) == -1)
		return;
	if (S_ISDIR(st.st_mode) && (err = fs_allowed(w->pol, path, 1, FS_WANT_READ)) != 0) {
		if (err != ENOENT)
			fs_discover_warn(w->warnings, "scan capability path", path, err);
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		snprintf(key, sizeof(key), "%ju:%ju", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino);
		/* breadth first, as the reference: a level's warnings before the next's */
		if (json_object_get(w->seen, key) == NULL &&
		    json_object_set_new(w->seen, key, json_true()) == 0 &&
		    json_array_append_new(w->queue, json_pack("[s,i]", path, depth + 1)) == -1)
			log_warnx("capabilityRoots/discoverV1: out of memory");
		return;
	}
	/* as the reference: a SKILL.md that is a symlink is no skill (a directory link is followed) */
	if (!S_ISREG(st.st_mode) || strcmp(name, "SKILL.md") != 0 ||
	    lstat(path, &st) == -1 || !S_ISREG(st.st_mode) ||
	    realpath(path, real) == NULL || json_object_get(w->seen, real) != NULL)
		return;
	if (json_object_set_new(w->seen, real, json_true()) == -1 ||
	    json_array_append_new(w->found, json_string(path)) == -1)
		log_warnx("capabilityRoots/discoverV1: out of memory");
}

/* dir listed as it was checked: pinned under pol (a link swapped in leads nowhere else) */
static DIR *
open_dir(const struct fs_policy *pol, const char *dir)
{
	char	real[PATH_MAX];
	DIR	*d;
	int	fd, err;

	if (pol == NULL)
		return opendir(dir);
	if ((err = fs_pin_open(pol, dir, FS_WANT_READ, O_RDONLY | O_DIRECTORY, &fd, real,
	    sizeof(real))) != 0) {
		errno = err;
		return NULL;
	}
	if ((d = fdopendir(fd)) == NULL)
		close(fd);
	return d;
}

static void
walk_dir(struct walk *w, const char *dir, int depth)
{
	DIR		*d;
	struct dirent	*de;
	json_t		*names = json_array(), *v, **sorted;
	size_t		 i, n;

	if (depth > DISCOVER_DEPTH || names == NULL || (d = open_dir(w->pol, dir)) == NULL) {
		/* a directory it cannot list, the reference warns of */
		if (names != NULL && depth <= DISCOVER_DEPTH && errno != ENOENT)
			fs_discover_warn(w->warnings, "scan capability path", dir, errno);
		json_decref(names);
		return;
	}
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			json_array_append_new(names, json_string_nocheck(de->d_name));
	closedir(d);
	/* in byte order, level by level: the reference's, its warnings come so */
	n = json_array_size(names);
	if ((sorted = calloc(n + 1, sizeof(*sorted))) == NULL) {
		json_decref(names);
		return;
	}
	json_array_foreach(names, i, v)
		sorted[i] = v;
	qsort(sorted, n, sizeof(*sorted), by_path);
	for (i = 0; i < n; i++)
		walk_entry(w, dir, json_string_value(sorted[i]), depth);
	free(sorted);
	json_decref(names);
}

/* Up to len bytes of fd, to its end; -1 on a read error. */
static ssize_t
read_some(int fd, char *buf, size_t len)
{
	size_t	got = 0;
	ssize_t	r;

	while (got < len) {
		if ((r = read(fd, buf + got, len - got)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/* discoverV2 running: what a sandboxed command could have written is not read */
static int	check_written;

void
fs_discover_check_written(int on)
{
	check_written = on;
}

int
fs_discover_open(const struct fs_policy *pol, const char *path)
{
	char	real[PATH_MAX];
	int	fd, err;

	if (pol == NULL)
		fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	/* what was checked is what is read: a link swapped in since leads nowhere else */
	else if ((err = fs_pin_open(pol, path, FS_WANT_READ, O_RDONLY | O_NONBLOCK | O_NOCTTY,
	    &fd, real, sizeof(real))) != 0) {
		errno = err;
		return -1;
	}
	/* a link out of a protected place into a writable root (execd(8) SECURITY) */
	if (fd != -1 && check_written && sandbox_wrote(fd, path)) {
		log_warnx("capabilities/discoverV2: %s left out: a sandboxed command could "
		    "have written it", path);
		close(fd);
		errno = EACCES;
		return -1;
	}
	return fd;
}

json_t *
fs_discover_file_entry(const struct fs_policy *pol, const char *path)
{
	char	*buf, *uri;
	json_t	*v = NULL;
	ssize_t	 n;
	int	 fd;

	if ((fd = fs_discover_open(pol, path)) == -1)
		return json_null();
	if ((buf = malloc(DISCOVER_FILE_MAX)) != NULL &&
	    (n = read_some(fd, buf, DISCOVER_FILE_MAX)) >= 0 &&
	    (uri = path_to_uri(path)) != NULL) {
		/* not UTF-8: no text, null (json_pack refuses it) */
		v = json_pack("{s:s,s:s%}", "path", uri, "contents", buf, (size_t)n);
		free(uri);
	}
	free(buf);
	close(fd);
	return v != NULL ? v : json_null();
}

/* 1 if fd holds UTF-8; else 0, with the reference's warning for path. */
static int
utf8_file(int fd, const char *path, json_t *warnings)
{
	char	*buf, *uri, why[96];
	size_t	 at, seq;
	ssize_t	 n;
	int	 ok = 1;

	if ((buf = malloc(DISCOVER_FILE_MAX)) == NULL)
		return 1;
	if ((n = read_some(fd, buf, DISCOVER_FILE_MAX)) >= 0 &&
	    toml_utf8_check(buf, (size_t)n, &at, &seq) == -1) {
		ok = 0;
		if (seq == 0)
			snprintf(why, sizeof(why), "incomplete utf-8 byte sequence from index %zu",
			    at);
		else
			snprintf(why, sizeof(why), "invalid utf-8 sequence of %zu bytes from index "
			    "%zu", seq, at);
		if (warnings != NULL && (uri = path_to_uri(path)) != NULL) {
			json_array_append_new(warnings, json_sprintf("capability file %s is not "
			    "UTF-8: %s", uri, why));
			free(uri);
		}
	}
	free(buf);
	return ok;
}

static json_t *
skill_entry(const struct fs_policy *pol, const char *path, json_t *warnings)
{
	char	meta[PATH_MAX];
	size_t	dlen = strlen(path) - strlen("SKILL.md");
	json_t	*md;
	int	err, fd;

	/* a SKILL.md that cannot be read is no skill, and a warning */
	if ((fd = fs_discover_open(pol, path)) == -1) {
		fs_discover_warn(warnings, "read capability file", path, errno);
		return NULL;
	}
	if (!utf8_file(fd, path, warnings)) {
		close(fd);
		return NULL;
	}
	close(fd);
	md = json_null();
	/* agents/openai.yaml, a link followed, as far as the sandbox shows it */
	if (fs_pathf(meta, sizeof(meta), "%.*sagents/openai.yaml", (int)dlen, path) == 0 &&
	    access(meta, F_OK) == 0) {
		if ((err = fs_allowed(pol, meta, 1, FS_WANT_READ)) == 0)
			md = fs_discover_file_entry(pol, meta);
		else if (err != ENOENT)
			fs_discover_warn(warnings, "inspect capability file", meta, err);
	}
	return json_pack("{s:o,s:o}", "instructions", fs_discover_file_entry(pol, path),
	    "metadata", md);
}

json_t *
fs_discover_files(const char *dir, const struct fs_policy *pol, json_t *warnings)
{
	struct walk	 w = { json_array(), json_object(), pol, warnings, json_array() };
	json_t		*out = json_array(), *v;
	size_t		 i, n;
	json_t		**sorted;

	if (w.found != NULL && w.seen != NULL && w.queue != NULL) {
		json_object_set_new(w.seen, "", json_true());	/* no key is "" otherwise */
		json_array_append_new(w.queue, json_pack("[s,i]", dir, 0));
		for (i = 0; i < json_array_size(w.queue); i++) {
			v = json_array_get(w.queue, i);
			walk_dir(&w, json_string_value(json_array_get(v, 0)),
			    (int)json_integer_value(json_array_get(v, 1)));
		}
	}
	n = json_array_size(w.found);
	if (out != NULL && (sorted = calloc(n + 1, sizeof(*sorted))) != NULL) {
		json_array_foreach(w.found, i, v)
			sorted[i] = v;
		qsort(sorted, n, sizeof(*sorted), by_path);
		for (i = 0; i < n; i++)
			json_array_append(out, sorted[i]);
		free(sorted);
	}
	json_decref(w.found);
	json_decref(w.seen);
	json_decref(w.queue);
	return out;
}

/* root/name as {"path","contents"} if it is there, else null (and a warning if unreadable). */
static json_t *
optional_file(const struct fs_policy *pol, const char *root, const char *name,
    json_t *warnings)
{
	char	path[PATH_MAX];
	int	fd;

	if (fs_pathf(path, sizeof(path), "%s/%s", root, name) != 0 ||
	    access(path, F_OK) != 0 || fs_allowed(pol, path, 1, FS_WANT_READ) != 0)
		return json_null();
	if ((fd = fs_discover_open(pol, path)) == -1) {
		fs_discover_warn(warnings, "read capability file", path, errno);
		return json_null();
	}
	close(fd);
	return fs_discover_file_entry(pol, path);
}

/*
 * The manifest of the plugin a root is (the first there is), or null; it is
 * the root's namespace manifest too.
 */
static json_t *
root_manifest(const struct fs_policy *pol, const char *dir, json_t *namespaces,
    json_t *namespaces_warnings)
{
	static const char *const manifests[] = { ".codex-plugin/plugin.json",
	    ".claude-plugin/plugin.json", ".cursor-plugin/plugin.json" };
	char		 path[PATH_MAX];
	struct stat	 st;
	json_t		*mf;
	size_t		 i;
	int		 fd;

	for (i = 0; i < sizeof(manifests) / sizeof(manifests[0]); i++) {
		if (fs_pathf(path, sizeof(path), "%s/%s", dir, manifests[i]) != 0)
			continue;
		if (stat(path, &st) != 0) {
			/* one it cannot even look for, the reference warns of */
			if (errno != ENOENT && errno != ENOTDIR)
				fs_discover_warn(namespaces_warnings, "inspect capability file",
				    path, errno);
			continue;
		}
		if (!S_ISREG(st.st_mode))
			continue;
		if (fs_allowed(pol, path, 1, FS_WANT_READ) != 0)
			continue;
		/* one it cannot read: no plugin, and its warning for each use */
		if ((fd = fs_discover_open(pol, path)) == -1) {
			fs_discover_warn(namespaces_warnings, "read capability file", path, errno);
			fs_discover_warn(namespaces_warnings, "read capability file", path, errno);
			return json_null();
		}
		close(fd);
		mf = fs_discover_file_entry(pol, path);
		if (json_is_null(mf))
			continue;
		json_array_append(namespaces, mf);
		return mf;
	}
	return json_null();
}

/* The plugin of manifest mf (taken): its .mcp.json and .app.json, in that order. */
static json_t *
root_plugin(const struct fs_policy *pol, const char *dir, json_t *mf, json_t *warnings)
{
	json_t	*mcp, *apps;

	if (json_is_null(mf))
		return mf;
	/* one after the other: their warnings come in this order */
	mcp = optional_file(pol, dir, ".mcp.json", warnings);
	apps = optional_file(pol, dir, ".app.json", warnings);
	return json_pack("{s:o,s:o,s:o}", "manifest", mf, "mcpConfig", mcp, "appsConfig", apps);
}

/* A root the sandbox denies: what the reference warns of finding nothing. */
static void
denied_root(const char *dir, int denied, json_t *warnings)
{
	static const char *const manifests[] = { ".codex-plugin", ".claude-plugin",
	    ".cursor-plugin" };
	char	path[PATH_MAX];
	size_t	i;

	fs_discover_warn(warnings, "scan capability path", dir, denied);
	for (i = 0; i < sizeof(manifests) / sizeof(manifests[0]); i++)
		if (fs_pathf(path, sizeof(path), "%s/%s/plugin.json", dir, manifests[i]) == 0)
			fs_discover_warn(warnings, "inspect capability file", path, denied);
}

/* The skills under dir the policy lets us see, or an error text for the root. */
static json_t *
discover_root(const struct fs_policy *pol, const char *dir, const char *uri, char *err,
    size_t errlen, json_t *warnings, json_t **plugin, json_t *namespaces)
{
	json_t		*skills = json_array(), *files = NULL, *v, *entry;
	struct stat	 st;
	char		 text[128];
	size_t		 i;
	int		 denied;

	err[0] = '\0';
	if ((denied = fs_allowed(pol, dir, 1, FS_WANT_READ)) != 0 && denied != ENOENT)
		denied_root(dir, denied, warnings);
	else if (denied != 0 || stat(dir, &st) == -1)
		snprintf(err, errlen, "failed to inspect capability root %s: %s", uri,
		    errno_text(denied != 0 ? denied : errno, text, sizeof(text)));
	else if (!S_ISDIR(st.st_mode))
		snprintf(err, errlen, "capability root %s is not a directory", uri);
	else
		files = fs_discover_files(dir, pol, warnings);
	/* the reference's order: the walk, the manifest, the plugin's files, the skills */
	if (files != NULL)
		*plugin = root_plugin(pol, dir, root_manifest(pol, dir, namespaces, warnings),
		    warnings);
	if (skills != NULL)
		json_array_foreach(files, i, v)
			if (fs_allowed(pol, json_string_value(v), 1, FS_WANT_READ) == 0 &&
			    (entry = skill_entry(pol, json_string_value(v), warnings)) != NULL)
				json_array_append_new(skills, entry);
	json_decref(files);
	return skills;
}

/* WireCapabilityRootDiscoverRequest, in declaration order (its sequence form's) */
static const char *const root_fields[] = { "id", "path", "sandbox", NULL };
static const struct serde_struct root_struct = {
	"WireCapabilityRootDiscoverRequest", root_fields, 0
};

/* A root's sandbox, decoded with the reference's errors into *pol (NULL: none). */
static int
root_sandbox(json_t *root, struct fs_policy **pol, struct jx_err *e)
{
	json_t	*v = json_object_get(root, "sandbox");
	int	 code;

	if (v == NULL || json_is_null(v))
		return 0;
	return fs_sandbox_field.decode(v, pol, e, &code);
}

static json_t *
root_failed(const char *id, const char *uri, const char *why, json_t *warnings)
{
	json_t	*res;
	char	*err;

	if (asprintf(&err, "failed to inspect capability root %s: %s", uri, why) == -1) {
		json_decref(warnings);
		return NULL;
	}
	res = json_pack("{s:s,s:s,s:n,s:[],s:[],s:o,s:s}", "id", id, "path", uri, "plugin",
	    "skills", "namespaceManifests", "warnings", warnings != NULL ? warnings :
	    json_array(), "error", err);
	free(err);
	return res;
}

struct root_args {
	const char		*id, *uri;
	struct fs_policy	*pol;
};

/* path is a PathUri: a malformed one fails the decoding (one naming no local path, later) */
static int
root_path(const char *uri, struct jx_err *e)
{
	char		*dir;
	enum uri_status	 us;

	if (uri == NULL)
		return 0;
	if ((dir = uri_to_path_status(uri, e, &us)) == NULL && us == URI_MALFORMED)
		return -1;
	free(dir);
	return 0;
}

static int
root_decode(json_t *root, void *arg, struct jx_err *e)
{
	struct root_args	*a = arg;

	fs_sandbox_field.release(&a->pol);
	a->id = a->uri = NULL;
	if (jx_struct(root, root_struct.name, e) == -1 ||
	    jx_str(root, "id", JX_REQ, &a->id, NULL, e) == -1 ||
	    jx_str(root, "path", JX_REQ, &a->uri, NULL, e) == -1 ||
	    root_path(a->uri, e) == -1 || root_sandbox(root, &a->pol, e) == -1) {
		fs_sandbox_field.release(&a->pol);
		return -1;
	}
	return 0;
}

/* A root decoded and let go: the reference decodes every root before it gates. */
static int
root_check(json_t *raw, struct jx_err *e)
{
	struct root_args	 a = { NULL, NULL, NULL };
	json_t			*root;
	long			 n;
	int			 rc;

	root = serde_struct_params(raw, &root_struct, &n);
	rc = serde_struct_seq_end(&root_struct, n, jx_in_order(root, root_decode, &a, e), e);
	fs_sandbox_field.release(&a.pol);
	json_decref(root);
	return rc;
}

static json_t *
root_result(json_t *raw, struct jx_err *e)
{
	struct root_args	 a = { NULL, NULL, NULL };
	const char		*id, *uri;
	char			*dir, *shown, err[PATH_MAX + 256];
	json_t			*skills, *root, *res, *warnings, *plugin = NULL, *namespaces;
	struct fs_policy	*pol;
	long			 n;
	enum uri_status		 us;
	int			 rc;

	/* serde's order: the first bad field of the input, then the first missing one */
	root = serde_struct_params(raw, &root_struct, &n);
	rc = jx_in_order(root, root_decode, &a, e);
	id = a.id, uri = a.uri, pol = a.pol;
	if (serde_struct_seq_end(&root_struct, n, rc, e) == -1) {
		fs_sandbox_field.release(&pol);
		json_decref(root);
		return NULL;
	}
	warnings = json_array();
	if ((dir = uri_to_path_status(uri, e, &us)) == NULL) {
		/* a URI naming no local path: this root's error, as the reference has it */
		res = root_failed(id, uri, jx_err_whole(e->msg), warnings);
		fs_sandbox_field.release(&pol);
		json_decref(root);
		return res;
	}
	/* the URI as the reference prints it back: parsed, so " " is "%20" */
	if ((shown = path_to_uri(dir)) != NULL)
		uri = shown;
	namespaces = json_array();
	skills = discover_root(pol, dir, uri, err, sizeof(err), warnings, &plugin, namespaces);
	fs_sandbox_field.release(&pol);
	free(dir);
	res = json_pack("{s:s,s:s,s:o,s:o,s:o,s:o,s:s?}", "id", id, "path", uri, "plugin",
	    plugin != NULL ? plugin : json_null(), "skills", skills != NULL ? skills :
	    json_array(), "namespaceManifests", namespaces != NULL ? namespaces : json_array(),
	    "warnings", warnings != NULL ? warnings : json_array(), "error",
	    err[0] != '\0' ? err : NULL);
	free(shown);
	json_decref(root);
	return res;
}

void
fs_m_discover_v1(struct rpc_req *req, json_t *params)
{
	static const char *const fields[] = { "roots", NULL };
	static const struct serde_struct dp = { "WireCapabilityRootsDiscoverParams", fields, 0 };
	struct jx_err	 e;
	json_t		*o, *roots = NULL, *root, *out, *r;
	size_t		 i;
	long		 n;
	int		 rc;

	o = serde_struct_params(params, &dp, &n);
	rc = jx_struct(o, dp.name, &e) == -1 || jx_any(o, "roots", JX_REQ, &roots, &e) == -1 ||
	    (!json_is_array(roots) && serde_type_error(&e, roots, "a sequence", 0) == -1) ?
	    -1 : 0;
	if (rc == 0)
		json_array_foreach(roots, i, root)
			if ((rc = root_check(root, &e)) == -1)
				break;
	if (serde_struct_seq_end(&dp, n, rc, &e) == -1) {
		rpc_fail_params(req, &e);
		goto done;
	}
	if (!rpc_admit(req) || (out = json_array()) == NULL)
		goto done;
	json_array_foreach(roots, i, root) {
		if ((r = root_result(root, &e)) == NULL) {
			json_decref(out);
			rpc_fail_params(req, &e);
			goto done;
		}
		json_array_append_new(out, r);
	}
	rpc_reply(req, json_pack("{s:o}", "roots", out));
done:
	json_decref(o);
}
