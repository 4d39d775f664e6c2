/*
 * fs methods: the table, what they share, and the one-shot metadata and
 * directory requests.  Paths arrive as file:// URIs (lib/uri.c), an optional
 * `sandbox` becomes a policy enforced here (fs_policy.c).
 */
#include "config.h"

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "fs/fs.h"
#include "fs/fs_int.h"
#include "rpc/rpc_serde.h"
#include "sandbox/sandbox.h"
#include "session/session.h"
#include "uri.h"

mode_t	fs_umask = 022;

static void	m_create_directory(struct rpc_req *, json_t *);
static void	m_get_metadata(struct rpc_req *, json_t *);
static void	m_read_directory(struct rpc_req *, json_t *);
static void	m_canonicalize(struct rpc_req *, json_t *);

const struct rpc_method fs_methods[] = {
	{ "fs/readFile", FS_GROUP, fs_m_read_file, RPC_SELF_GATED },
	{ "fs/writeFile", FS_GROUP, fs_m_write_file, RPC_SELF_GATED, "dataBase64" },
	{ "fs/createDirectory", FS_GROUP, m_create_directory, RPC_SELF_GATED },
	{ "fs/getMetadata", FS_GROUP, m_get_metadata, RPC_SELF_GATED },
	{ "fs/readDirectory", FS_GROUP, m_read_directory, RPC_SELF_GATED },
	{ "fs/remove", FS_GROUP, fs_m_remove, RPC_SELF_GATED },
	{ "fs/copy", FS_GROUP, fs_m_copy, RPC_SELF_GATED },
	{ "fs/canonicalize", FS_GROUP, m_canonicalize, RPC_SELF_GATED },
	{ "fs/walk", FS_GROUP, fs_m_walk, RPC_SELF_GATED },
	{ "fs/open", FS_GROUP, fs_m_open, RPC_SELF_GATED },
	{ "fs/readBlock", FS_GROUP, fs_m_read_block, RPC_SELF_GATED },
	{ "fs/writeBlock", FS_GROUP, fs_m_write_block, RPC_SELF_GATED },
	{ "fs/close", FS_GROUP, fs_m_close, RPC_SELF_GATED },
	{ NULL, NULL, NULL },
};

void
fs_init(void)
{
	static int	done;

	if (done)
		return;
	done = 1;
	fs_umask = umask(022);
	umask(fs_umask);
	rpc_on_detach(fs_handles_close_all);
	session_set_capability("fileWriteStreaming", 1);
	session_set_capability("sandboxedFileStreaming", 1);
}

static int
sandbox_decode(json_t *v, void *out, struct jx_err *e, int *code)
{
	struct fs_policy	**pol = out;

	if (json_is_array(v) && json_array_size(v) == 0) {
		/* serde's sequence form; a longer one is a type error here (README) */
		*code = RPC_INVALID_PARAMS;
		snprintf(e->msg, sizeof(e->msg),
		    "invalid length 0, expected struct WireFileSystemSandboxContext with 10 elements");
		return -1;
	}
	if (!json_is_object(v)) {
		*code = RPC_INVALID_PARAMS;
		return serde_type_error(e, v, "struct WireFileSystemSandboxContext", 0);
	}
	fs_policy_free(*pol);
	*pol = NULL;
	return fs_policy_parse(v, pol, e, code);
}

static void
sandbox_release(void *out)
{
	struct fs_policy	**pol = out;

	fs_policy_free(*pol);
	*pol = NULL;
}

const struct fp_decoder fs_sandbox_field = { sandbox_decode, sandbox_release };

int
fs_deferred(struct rpc_req *req, const struct fp_deferred *d, const struct fs_policy *pol)
{
	const char	*err;
	char		 why[PATH_MAX * 2 + 96];

	if (d->code != 0 && d->rank < 100) {
		rpc_fail(req, d->code, "%s", d->msg);	/* the sandbox's own */
		return 1;
	}
	if ((err = fs_policy_error(pol)) != NULL) {
		rpc_fail(req, RPC_INTERNAL_ERROR, "fs sandbox helper failed with status exit "
		    "status: 1: error building bubblewrap command: Fatal error: %s", err);
		return 1;
	}
	if (d->code != 0) {
		rpc_fail(req, d->code, "%s", d->msg);
		return 1;
	}
	/* as a command's sandbox is refused (sandbox_mount.c) */
	if (pol != NULL && sandbox_place_link(pol, why, sizeof(why))) {
		rpc_fail(req, RPC_INTERNAL_ERROR, "fs sandbox helper failed with status exit "
		    "status: 1: error building bubblewrap command: Fatal error: %s", why);
		return 1;
	}
	/*
	 * What it may write, the configuration readers refuse (execd(8)
	 * SECURITY): recorded here, before any method that took a sandbox
	 * acts, whichever way it reached its checks.
	 */
	if (pol != NULL && sandbox_record_policy(pol) == -1) {
		rpc_fail(req, RPC_INTERNAL_ERROR, "fs sandbox helper failed with status exit "
		    "status: 1: cannot record the sandbox's writable roots (execd(8) SECURITY)");
		return 1;
	}
	return 0;
}

int
fs_begin(struct rpc_req *req, json_t *params, const char *sname, const struct fp_field *f,
    size_t nf, struct fp_deferred *d, struct fs_policy *const *pol)
{
	struct jx_err	e;

	if (fp_parse(params, sname, f, nf, d, &e) == -1) {
		rpc_fail_params(req, &e);
		return -1;
	}
	if (!rpc_admit(req))
		return -1;
	if (pol != NULL && fs_deferred(req, d, *pol))
		return -1;
	return 0;
}

int
fs_allowed(const struct fs_policy *pol, const char *path, int follow_last, int want)
{
	char	real[PATH_MAX];

	if (pol == NULL)
		return 0;
	/* a path too long to resolve is refused, not guessed at */
	if (fs_resolve(path, follow_last, real, sizeof(real)) != 0)
		return ENAMETOOLONG;
	return fs_policy_check(pol, real, want);
}

void
fs_fail_not_a_file(struct rpc_req *req, const char *path)
{
	char	*shown = fs_lossy(path);

	rpc_fail(req, RPC_INVALID_REQUEST, "path `%s` is not a file", shown ? shown : path);
	free(shown);
}

void
fs_reply_empty(struct rpc_req *req)
{
	rpc_reply(req, json_object());
}

/* Milliseconds since the epoch; 0 before it, as the reference. */
static int64_t
unix_ms(const struct timespec *ts)
{
	if (ts->tv_sec < 0)
		return 0;
	return (int64_t)ts->tv_sec * 1000 + ts->tv_nsec / 1000000;
}

static void
m_get_metadata(struct rpc_req *req, json_t *params)
{
	char			*path = NULL;
	struct fs_policy	*pol = NULL;
	struct fp_deferred	 d = { 0 };
	int			 flag = 0;
	struct fp_field		 f[] = {
		{ "path", FP_PATH, FP_REQ, &path },
		/* an Option<bool> execd has no use for, by position only */
		{ " flag", FP_BOOL, FP_SEQ_DEFAULT, &flag },
		{ "sandbox", FP_DECODE, FP_OPT, &pol, &fs_sandbox_field },
	};
	struct stat		 st, lst;
	int			 err;

	if (fs_begin(req, params, "WireFsGetMetadataParams", f, 3, &d, &pol) == -1)
		goto out;
	if ((err = fs_allowed(pol, path, 1, FS_WANT_STAT)) != 0 ||
	    (err = fs_allowed(pol, path, 0, FS_WANT_STAT)) != 0) {
		rpc_fail_errno(req, err);
		goto out;
	}
	if (pol != NULL && (err = fs_pin_stat(pol, path, &st, &lst)) != 0) {
		rpc_fail_errno(req, err);
		goto out;
	}
	if (pol == NULL && (stat(path, &st) == -1 || lstat(path, &lst) == -1)) {
		rpc_fail_errno(req, errno);
		goto out;
	}
	/* the reference gets no birth time on Linux: it says 0 */
	rpc_reply(req, json_pack("{s:b,s:b,s:b,s:I,s:I,s:I}",
	    "isDirectory", S_ISDIR(st.st_mode), "isFile", S_ISREG(st.st_mode),
	    "isSymlink", S_ISLNK(lst.st_mode), "size", (json_int_t)st.st_size,
	    "createdAtMs", (json_int_t)0, "modifiedAtMs", (json_int_t)unix_ms(&st.st_mtim)));
out:
	fp_release(f, 3);
}

/* Is the entry `name` of the directory real shown under the policy? */
static int
entry_visible(const struct fs_policy *pol, const char *real, const char *name)
{
	char	path[PATH_MAX];

	if (pol == NULL)
		return 1;
	return fs_pathf(path, sizeof(path), "%s/%s", strcmp(real, "/") == 0 ? "" : real,
	    name) == 0 && fs_policy_visible(pol, path);
}

/*
 * What the link `name` of the directory real points to, into st: it must
 * be there to look at in a sandbox's view, not denied (in the reference's
 * helper a stat into a mask fails: the entry is left out, as a dangling
 * link is).  0 or an errno.
 */
static int
link_target(const struct fs_policy *pol, const char *real, const char *name, struct stat *st)
{
	char	path[PATH_MAX], treal[PATH_MAX];
	int	fd, err;

	if (fs_pathf(path, sizeof(path), "%s/%s", strcmp(real, "/") == 0 ? "" : real, name) != 0)
		return ENAMETOOLONG;
	if ((err = fs_pin_open(pol, path, FS_WANT_STAT, O_PATH, &fd, treal, sizeof(treal))) != 0)
		return err;
	err = fstat(fd, st) == -1 ? errno : 0;
	close(fd);
	return err;
}

void
fs_dirents_free(struct fs_dirent *d, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		free(d[i].name);
	free(d);
}

int
fs_list_dir(const char *path, const struct fs_policy *pol, struct fs_dirent **out, size_t *nout)
{
	char		 real[PATH_MAX];
	struct fs_dirent *d = NULL, *nd;
	struct dirent	*de;
	struct stat	 st;
	size_t		 n = 0, cap = 0;
	DIR		*dp;
	int		 fd, err = 0;

	if (pol != NULL) {
		/* listed is what was checked: the directory pinned beneath the roots */
		if ((err = fs_pin_open(pol, path, FS_WANT_READ, O_RDONLY | O_DIRECTORY, &fd, real,
		    sizeof(real))) != 0)
			return err;
		if ((dp = fdopendir(fd)) == NULL) {
			err = errno;
			close(fd);
			return err;
		}
	} else if ((dp = opendir(path)) == NULL)
		return errno;
	while ((errno = 0, de = readdir(dp)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		/*
		 * As the reference: entries are stat'ed through symlinks and those
		 * that do not stat (dangling links) are left out.  What is not a
		 * link, readdir has already typed.
		 */
		if (de->d_type != DT_UNKNOWN && de->d_type != DT_LNK)
			st.st_mode = DTTOIF(de->d_type);
		else if (pol != NULL && !fs_path_covers("/dev", real)) {
			/* checked and typed by the same lookup: a link repointed meanwhile tells nothing */
			if (link_target(pol, real, de->d_name, &st) != 0)
				continue;
		} else if (fstatat(dirfd(dp), de->d_name, &st, 0) == -1)
			continue;	/* /dev/stdin and the like: shown, as the reference's own */
		if (!entry_visible(pol, real, de->d_name))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			if ((nd = reallocarray(d, cap, sizeof(*d))) == NULL) {
				err = ENOMEM;
				break;
			}
			d = nd;
		}
		if ((d[n].name = strdup(de->d_name)) == NULL) {
			err = ENOMEM;
			break;
		}
		d[n].is_dir = S_ISDIR(st.st_mode);
		d[n].is_file = S_ISREG(st.st_mode);
		d[n].is_link = de->d_type == DT_LNK || de->d_type == DT_UNKNOWN;
		n++;
	}
	if (err == 0 && errno != 0)
		err = errno;
	closedir(dp);
	if (err != 0) {
		fs_dirents_free(d, n);
		return err;
	}
	*out = d;
	*nout = n;
	return 0;
}

static void
m_read_directory(struct rpc_req *req, json_t *params)
{
	char			*path = NULL, *shown;
	struct fs_policy	*pol = NULL;
	struct fp_deferred	 d = { 0 };
	struct fp_field		 f[] = {
		{ "path", FP_PATH, FP_REQ, &path },
		/* an Option without serde(default): its sequence form must give it */
		{ "sandbox", FP_DECODE, FP_OPT, &pol, &fs_sandbox_field },
	};
	struct fs_dirent	*ents = NULL;
	size_t			 n = 0, i;
	json_t			*arr = NULL, *o;
	int			 err;

	if (fs_begin(req, params, "WireFsReadDirectoryParams", f, 2, &d, &pol) == -1)
		goto out;
	if ((err = fs_allowed(pol, path, 1, FS_WANT_READ)) != 0 ||
	    (err = fs_list_dir(path, pol, &ents, &n)) != 0) {
		rpc_fail_errno(req, err);
		goto out;
	}
	if ((arr = json_array()) == NULL)
		goto nomem;
	for (i = 0; i < n; i++) {
		shown = NULL;
		if (!fs_utf8_valid(ents[i].name) && (shown = fs_lossy(ents[i].name)) == NULL)
			goto nomem;
		/* built by hand: json_pack per entry costs more than the listing */
		if ((o = json_object()) == NULL || json_array_append_new(arr, o) == -1 ||
		    json_object_set_new_nocheck(o, "fileName",
		    json_string_nocheck(shown ? shown : ents[i].name)) == -1 ||
		    json_object_set_new_nocheck(o, "isDirectory",
		    json_boolean(ents[i].is_dir)) == -1 ||
		    json_object_set_new_nocheck(o, "isFile", json_boolean(ents[i].is_file)) == -1) {
			free(shown);
			goto nomem;
		}
		free(shown);
	}
	rpc_reply(req, json_pack("{s:o}", "entries", arr));
	arr = NULL;
	goto out;
nomem:
	log_warnx("fs/readDirectory %s: out of memory", path);
	rpc_fail(req, RPC_INTERNAL_ERROR, "out of memory");
out:
	json_decref(arr);
	fs_dirents_free(ents, n);
	fp_release(f, 2);
}

static void
m_canonicalize(struct rpc_req *req, json_t *params)
{
	char			*path = NULL, real[PATH_MAX], *uri;
	struct fs_policy	*pol = NULL;
	struct fp_deferred	 d = { 0 };
	struct fp_field		 f[] = {
		{ "path", FP_PATH, FP_REQ, &path },
		/* as fs/readDirectory's */
		{ "sandbox", FP_DECODE, FP_OPT, &pol, &fs_sandbox_field },
	};
	int			 fd, err;

	if (fs_begin(req, params, "WireFsCanonicalizeParams", f, 2, &d, &pol) == -1)
		goto out;
	if ((err = fs_allowed(pol, path, 1, FS_WANT_READ)) != 0) {
		rpc_fail_errno(req, err);
		goto out;
	}
	if (pol != NULL && (err = fs_pin_open(pol, path, FS_WANT_READ, O_PATH, &fd, real,
	    sizeof(real))) != 0) {
		rpc_fail_errno(req, err);
		goto out;
	}
	if (pol != NULL)
		close(fd);
	else if (strlen(path) >= PATH_MAX) {
		/* the reference's realpath (musl) refuses it before any lookup */
		rpc_fail_errno(req, ENAMETOOLONG);
		goto out;
	} else if (realpath(path, real) == NULL) {
		rpc_fail_errno(req, errno);
		goto out;
	}
	if ((uri = path_to_uri(real)) == NULL) {
		rpc_fail(req, RPC_INTERNAL_ERROR, "out of memory");
		goto out;
	}
	rpc_reply(req, json_pack("{s:s}", "path", uri));
	free(uri);
out:
	fp_release(f, 2);
}

/* mkdir -p as Rust's create_dir_all: an existing directory anywhere is fine. */
int
fs_mkdir_all(char *path)
{
	struct stat	 st;
	char		*slash;
	int		 e;

	if (mkdir(path, 0777) == 0)
		return 0;
	e = errno;
	if (e != ENOENT)
		return stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : (errno = e, -1);
	if ((slash = strrchr(path, '/')) == NULL)
		return -1;
	if (slash != path) {
		*slash = '\0';
		e = fs_mkdir_all(path) == -1 ? errno : 0;
		*slash = '/';
		if (e != 0) {
			errno = e;
			return -1;
		}
	}
	if (mkdir(path, 0777) == 0)
		return 0;
	e = errno;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : (errno = e, -1);
}

/* One mkdir in a pinned directory; existing_ok: an existing directory is fine. */
static int
mkdir_one(const struct fs_policy *pol, const char *path, int existing_ok)
{
	struct fs_pin	pin;
	struct stat	st;
	int		err;

	if ((err = fs_pin_parent(pol, path, FS_PIN_NOCHECK, &pin)) != 0)
		return err;
	if (existing_ok && fstatat(pin.dfd, pin.leaf, &st, 0) == 0 && S_ISDIR(st.st_mode))
		err = 0;
	else if ((err = fs_pin_parent_check(pol, &pin, FS_WANT_WRITE)) != 0)
		return err;
	else if (mkdirat(pin.dfd, pin.leaf, 0777) == -1) {
		err = errno;
		if (err == EEXIST && existing_ok && fstatat(pin.dfd, pin.leaf, &st, 0) == 0 &&
		    S_ISDIR(st.st_mode))
			err = 0;
	}
	fs_pin_close(&pin);
	return err;
}

/* Sandboxed mkdir (-p): each directory made in its pinned, checked parent. */
int
fs_mkdir_pinned(const struct fs_policy *pol, const char *path, int recursive)
{
	char	buf[PATH_MAX], *slash;
	size_t	len;
	int	err;

	if (!recursive)
		return mkdir_one(pol, path, 0);
	if (fs_pathf(buf, sizeof(buf), "%s", path) != 0)
		return ENAMETOOLONG;
	len = strlen(buf);
	/* up to the deepest directory there is, then down making the rest */
	while ((err = mkdir_one(pol, buf, 1)) == ENOENT) {
		if ((slash = strrchr(buf, '/')) == NULL || slash == buf)
			return ENOENT;
		*slash = '\0';
	}
	while (err == 0 && strlen(buf) < len) {
		buf[strlen(buf)] = '/';
		err = mkdir_one(pol, buf, 1);
	}
	return err;
}

static void
m_create_directory(struct rpc_req *req, json_t *params)
{
	char			*path = NULL;
	struct fs_policy	*pol = NULL;
	struct fp_deferred	 d = { 0 };
	int			 recursive = 1, err;
	struct fp_field		 f[] = {
		{ "path", FP_PATH, FP_REQ, &path },
		{ "recursive", FP_BOOL, FP_OPT, &recursive },
		{ "sandbox", FP_DECODE, FP_SEQ_DEFAULT, &pol, &fs_sandbox_field },
		{ " options", FP_ANY, 0, NULL },
	};
	struct stat		 st;

	if (fs_begin(req, params, "WireFsCreateDirectoryParams", f, 4, &d, &pol) == -1)
		goto out;
	if (pol != NULL) {
		/* as the kernel orders it: lookup, then "exists", then "read-only" */
		if (lstat(path, &st) == 0) {
			if ((err = fs_allowed(pol, path, 0, FS_WANT_STAT)) != 0)
				rpc_fail_errno(req, err);
			else if (recursive && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
				fs_reply_empty(req);
			else
				rpc_fail_errno(req, EEXIST);
			goto out;
		}
		if ((err = fs_allowed(pol, path, 1, FS_WANT_WRITE)) != 0) {
			rpc_fail_errno(req, err);
			goto out;
		}
	}
	if (pol != NULL)
		err = fs_mkdir_pinned(pol, path, recursive);
	else
		err = (recursive ? fs_mkdir_all(path) : mkdir(path, 0777)) == -1 ? errno : 0;
	if (err != 0)
		rpc_fail_errno(req, err);
	else
		fs_reply_empty(req);
out:
	fp_release(f, 4);
}
