/*
 * One watch per connection, as the reference: the client names paths that
 * do not exist yet; we watch the nearest existing ancestor of each for the
 * next path component appearing, say so once, and forget the watch.
 *
 * With a `sandbox`, each path is checked against its policy first, as
 * every other fs method checks: a denied path (or one the sandbox does not
 * show) fails the request whether or not anything is there, so that
 * neither the answer nor a later fs/missingChanged tells what exists in a
 * place the sandbox hides.  (The reference ignores the field.)
 */
#include "config.h"

#include <sys/inotify.h>
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evloop.h"
#include "log.h"
#include "rpc/rpc_serde.h"
#include "session/session.h"
#include "fs/fs_int.h"
#include "fs/fs_watch.h"
#include "uri.h"

#define WATCH_MAX_PATHS	1024

struct watch_target {
	int	 wd;
	char	*name;		/* the component that must appear in wd's directory */
};

static struct {
	int			 fd;	/* inotify, -1 when no watch */
	struct ev_io		 io;
	uint64_t		 id;	/* the active watch */
	uint64_t		 last;	/* highest id ever used: ids only go up */
	int			 used;
	struct watch_target	*t;
	size_t			 nt;
} fw = { .fd = -1 };

static void	m_watch_missing(struct rpc_req *, json_t *);

const struct rpc_method fs_watch_methods[] = {
	{ "fs/watchMissing", "filesystem", m_watch_missing, RPC_SELF_GATED },
	{ NULL, NULL, NULL, 0 },
};

static void
watch_clear(void)
{
	size_t	i;

	if (fw.fd != -1) {
		ev_io_del(&fw.io);
		close(fw.fd);
		fw.fd = -1;
	}
	for (i = 0; i < fw.nt; i++)
		free(fw.t[i].name);
	free(fw.t);
	fw.t = NULL;
	fw.nt = 0;
}

static void
watch_event(struct ev_io *io, uint32_t events, void *arg)
{
	char				 buf[16384] __attribute__((aligned(8)));
	const struct inotify_event	*ev;
	ssize_t				 n;
	size_t				 i, off;
	int				 hit = 0;

	while ((n = read(fw.fd, buf, sizeof(buf))) > 0) {
		for (off = 0; off < (size_t)n; off += sizeof(*ev) + ev->len) {
			ev = (const struct inotify_event *)(buf + off);
			for (i = 0; i < fw.nt && !hit; i++)
				if (fw.t[i].wd == ev->wd && (ev->mask & IN_IGNORED ||
				    (ev->len > 0 && strcmp(ev->name, fw.t[i].name) == 0)))
					hit = 1;
		}
	}
	if (!hit)
		return;
	rpc_notify("fs/missingChanged", json_pack("{s:I}", "watchId", (json_int_t)fw.id));
	watch_clear();
}

/* Split path into its nearest existing ancestor and the next component. */
static int
nearest_ancestor(const char *path, char *dir, size_t dirlen, char **next)
{
	struct stat	 st;
	char		*slash;
	const char	*comp;
	size_t		 n;

	if (strlen(path) >= dirlen)
		return -1;
	strcpy(dir, path);
	for (;;) {
		if ((slash = strrchr(dir, '/')) == NULL)
			return -1;
		comp = path + (slash - dir) + 1;
		if (slash == dir)
			dir[1] = '\0';
		else
			*slash = '\0';
		if (stat(dir, &st) == 0) {
			if (S_ISDIR(st.st_mode))
				break;
			return -1;	/* a file there: nothing can appear below it */
		}
		if (strcmp(dir, "/") == 0)
			return -1;
	}
	n = strcspn(comp, "/");
	if (n == 0 || (*next = strndup(comp, n)) == NULL)
		return -1;
	return 0;
}

static int
watch_add(const char *path)
{
	struct watch_target	*t;
	char			 dir[PATH_MAX], *next;
	int			 wd;

	if (nearest_ancestor(path, dir, sizeof(dir), &next) == -1)
		return -1;
	wd = inotify_add_watch(fw.fd, dir, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR);
	if (wd == -1 || (t = reallocarray(fw.t, fw.nt + 1, sizeof(*t))) == NULL) {
		log_warn("inotify watch %s", dir);
		free(next);
		return -1;
	}
	fw.t = t;
	fw.t[fw.nt].wd = wd;
	fw.t[fw.nt].name = next;
	fw.nt++;
	return 0;
}

static json_t *
watching(int on)
{
	return json_pack("{s:b}", "watching", on);
}

/* FsWatchMissingParams, in the reference's declaration order (its sequence form's) */
static const char *const watch_fields[] = { "watchId", "missing", "sandbox", NULL };
static const struct serde_struct watch_struct = { "FsWatchMissingParams", watch_fields, 0 };

static void	watch_missing(struct rpc_req *, json_t *, long);

static void
m_watch_missing(struct rpc_req *req, json_t *raw)
{
	json_t	*params;
	long	 n;

	params = serde_struct_params(raw, &watch_struct, &n);
	watch_missing(req, params, n);
	json_decref(params);
}

struct watch_args {
	uint64_t		 id;
	json_t			*missing;
	struct fs_policy	*pol;
	struct fp_deferred	 d;	/* the sandbox's own failure, reported after gating */
};

/* The optional `sandbox`, decoded as the other fs methods decode theirs. */
static int
watch_sandbox(json_t *o, struct watch_args *a, struct jx_err *e)
{
	json_t		*v = json_object_get(o, "sandbox");
	struct jx_err	 pe;
	int		 code;

	if (v == NULL || json_is_null(v) ||
	    fs_sandbox_field.decode(v, &a->pol, &pe, &code) == 0)
		return 0;
	if (code == RPC_INVALID_PARAMS) {
		*e = pe;
		return -1;
	}
	a->d.code = code;
	snprintf(a->d.msg, sizeof(a->d.msg), "%s", pe.msg);
	return 0;
}

/* 0, or the errno the sandbox refuses one of paths with (as fs/getMetadata would). */
static int
watch_allowed(const struct fs_policy *pol, char **paths, size_t n)
{
	size_t	i;
	int	err;

	for (i = 0; pol != NULL && i < n; i++)
		if ((err = fs_allowed(pol, paths[i], 1, FS_WANT_STAT)) != 0 ||
		    (err = fs_allowed(pol, paths[i], 0, FS_WANT_STAT)) != 0)
			return err;
	return 0;
}

/* each of missing is a PathUri: a malformed one fails the decoding */
static int
watch_decode(json_t *o, void *arg, struct jx_err *e)
{
	struct watch_args	*a = arg;
	json_t			*v;
	size_t			 i;
	char			*path;
	enum uri_status		 us;

	a->id = 0;
	a->missing = NULL;
	if (jx_struct(o, "FsWatchMissingParams", e) == -1 ||
	    jx_u64(o, "watchId", JX_REQ, &a->id, e) == -1 ||
	    jx_strarray(o, "missing", JX_REQ, &a->missing, e) == -1 ||
	    watch_sandbox(o, a, e) == -1)
		return -1;
	json_array_foreach(a->missing, i, v) {
		if ((path = uri_json_to_path(v, e, &us)) == NULL)
			return -1;
		free(path);
	}
	return 0;
}

static void
watch_missing(struct rpc_req *req, json_t *params, long seq_n)
{
	struct watch_args	 a = { 0, NULL, NULL, { 0 } };
	struct jx_err	 e;
	struct stat	 st;
	json_t		*missing = NULL, *v;
	uint64_t	 id;
	char		**paths;
	size_t		 i, n;
	enum uri_status	 us;
	int		 ok = 1, rc, err;

	rc = jx_in_order(params, watch_decode, &a, &e);
	id = a.id;
	missing = a.missing;
	if (serde_struct_seq_end(&watch_struct, seq_n, rc, &e) == -1) {
		rpc_fail_params(req, &e);
		fs_sandbox_field.release(&a.pol);
		return;
	}
	n = json_array_size(missing);
	if ((paths = calloc(n + 1, sizeof(*paths))) == NULL) {
		rpc_fail(req, RPC_INTERNAL_ERROR, "out of memory");
		fs_sandbox_field.release(&a.pol);
		return;
	}
	json_array_foreach(missing, i, v)
		if ((paths[i] = uri_json_to_path(v, &e, &us)) == NULL) {
			rpc_fail_params(req, &e);
			goto out;
		}
	if (!rpc_admit(req) || ((a.pol != NULL || a.d.code != 0) &&
	    fs_deferred(req, &a.d, a.pol)))
		goto out;
	if ((err = watch_allowed(a.pol, paths, n)) != 0) {
		rpc_fail_errno(req, err);
		goto out;
	}
	/* a stale generation, nothing to watch, or something already there */
	if ((fw.used && id <= fw.last) || n == 0 || n > WATCH_MAX_PATHS)
		ok = 0;
	for (i = 0; ok && i < n; i++)
		if (lstat(paths[i], &st) == 0)
			ok = 0;
	if (!fw.used || id > fw.last) {
		fw.last = id;
		fw.used = 1;
	}
	if (!ok) {
		rpc_reply(req, watching(0));
		goto out;
	}
	watch_clear();
	fw.id = id;
	if ((fw.fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) == -1 ||
	    ev_io_add(&fw.io, fw.fd, EPOLLIN, watch_event, NULL) == -1) {
		log_warn("inotify");
		if (fw.fd != -1)
			close(fw.fd);
		fw.fd = -1;
		rpc_reply(req, watching(0));
		goto out;
	}
	for (i = 0; i < n; i++)
		if (watch_add(paths[i]) == -1)
			ok = 0;
	if (!ok)
		watch_clear();
	rpc_reply(req, watching(ok));
out:
	for (i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	fs_sandbox_field.release(&a.pol);
}

static void
fs_watch_detached(void)
{
	/* watches belong to the connection, not the session */
	watch_clear();
	fw.used = 0;
	fw.last = 0;
}

void
fs_watch_init(void)
{
	rpc_on_detach(fs_watch_detached);
	session_set_capability("fsWatchMissing", 1);
}
