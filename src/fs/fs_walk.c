/*
 * fs/walk: a bounded breadth-first listing, as the reference's
 * walk_via_directory_reads: each directory's entries sorted by name, files
 * and directories only, directory symlinks followed on request (each real
 * directory visited once), what cannot be inspected reported in `errors`,
 * and the answer kept under 4 MiB.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fnv.h"
#include "log.h"
#include "rpc/errno_text.h"
#include "fs/fs_int.h"
#include "uri.h"

#define WALK_DEPTH_MAX		64
#define WALK_DIRS_MAX		10000
#define WALK_ENTRIES_MAX	50000
#define WALK_BYTES_MAX		(4 * 1024 * 1024)
#define WALK_ITEM_OVERHEAD	64

struct wdir {
	char		*path;
	char		*uri;
	uint64_t	 depth;
};

struct walk {
	const struct fs_walk_opts *o;
	const struct fs_policy *pol;
	struct wdir	*q;
	size_t		 qhead, qlen, qcap;
	char		**seen;		/* open addressing, power-of-two size */
	size_t		 nseen, seencap;
	uint64_t	 ndirs, nentries;
	size_t		 bytes;
	json_t		*entries, *errors;
	int		 truncated;
};

/* 1 if added, 0 if already there, -1 out of memory. Takes s. */
static int
seen_add(struct walk *w, char *s)
{
	char	**ns;
	size_t	 i, ncap;

	if (s == NULL)
		return -1;
	if ((w->nseen + 1) * 2 > w->seencap) {
		ncap = w->seencap ? w->seencap * 2 : 64;
		if ((ns = calloc(ncap, sizeof(*ns))) == NULL) {
			free(s);
			return -1;
		}
		for (i = 0; i < w->seencap; i++)
			if (w->seen[i] != NULL) {
				size_t j = fnv1a64(w->seen[i]) & (ncap - 1);
				while (ns[j] != NULL)
					j = (j + 1) & (ncap - 1);
				ns[j] = w->seen[i];
			}
		free(w->seen);
		w->seen = ns;
		w->seencap = ncap;
	}
	for (i = fnv1a64(s) & (w->seencap - 1); w->seen[i] != NULL; i = (i + 1) & (w->seencap - 1))
		if (strcmp(w->seen[i], s) == 0) {
			free(s);
			return 0;
		}
	w->seen[i] = s;
	w->nseen++;
	return 1;
}

static int
enqueue(struct walk *w, char *path, char *uri, uint64_t depth)
{
	struct wdir	*nq;
	size_t		 ncap;

	if (w->qlen == w->qcap) {
		ncap = w->qcap ? w->qcap * 2 : 16;
		if ((nq = reallocarray(w->q, ncap, sizeof(*nq))) == NULL)
			return -1;
		w->q = nq;
		w->qcap = ncap;
	}
	w->q[w->qlen].path = path;
	w->q[w->qlen].uri = uri;
	w->q[w->qlen].depth = depth;
	w->qlen++;
	return 0;
}

/* Room in the answer for one more item; else the walk ends truncated. */
static int
reserve(struct walk *w, size_t n)
{
	n += WALK_ITEM_OVERHEAD;
	if (w->bytes + n > WALK_BYTES_MAX) {
		w->truncated = 1;
		return 0;
	}
	w->bytes += n;
	return 1;
}

/* 1 to go on, 0 when the answer is full. */
static int
walk_error(struct walk *w, const char *uri, int err)
{
	char	text[256];

	errno_text(err, text, sizeof(text));
	if (!reserve(w, strlen(uri) + strlen(text)))
		return 0;
	json_array_append_new(w->errors, json_pack("{s:s,s:s}", "path", uri, "message", text));
	return 1;
}

/* fs/getMetadata's view of path: 0 or an errno. */
static int
metadata(const struct fs_policy *pol, const char *path, struct stat *st, int *is_link)
{
	struct stat	lst;
	int		err;

	if ((err = fs_allowed(pol, path, 1, FS_WANT_STAT)) != 0 ||
	    (err = fs_allowed(pol, path, 0, FS_WANT_STAT)) != 0)
		return err;
	if (pol != NULL && (err = fs_pin_stat(pol, path, st, &lst)) != 0)
		return err;
	if (pol == NULL && (stat(path, st) == -1 || lstat(path, &lst) == -1))
		return errno;
	*is_link = S_ISLNK(lst.st_mode);
	return 0;
}

static int
cmp_dirent(const void *a, const void *b)
{
	return strcmp(((const struct fs_dirent *)a)->name, ((const struct fs_dirent *)b)->name);
}

/*
 * The reference joins the lossy UTF-8 name to the directory's URI, and the
 * URL parser drops tabs and newlines: what it then looks at may not be the
 * entry (and usually does not exist).
 */
static char *
joined_name(const char *name)
{
	char	*s, *o, *p;

	if ((s = fs_lossy(name)) == NULL)
		return NULL;
	for (o = p = s; *p != '\0'; p++)
		if (*p != '\t' && *p != '\n' && *p != '\r')
			*o++ = *p;
	*o = '\0';
	return s;
}

/* One entry of dir: 1 to go on, 0 when done, -1 out of memory. */
static int
walk_entry(struct walk *w, const struct wdir *dir, const struct fs_dirent *de)
{
	const char	*name = de->name;
	char		*jn, *path = NULL, *uri = NULL, *seg, real[PATH_MAX];
	struct stat	 st;
	int		 link, err, r = 1;
	size_t		 n;

	if (w->nentries == w->o->max_entries) {
		w->truncated = 1;
		return 0;
	}
	w->nentries++;
	if ((jn = joined_name(name)) == NULL || (seg = uri_encode_segment(jn)) == NULL) {
		free(jn);
		return -1;
	}
	n = strlen(dir->path) + strlen(jn) + 2;
	if ((path = malloc(n)) != NULL)
		snprintf(path, n, "%s/%s", strcmp(dir->path, "/") == 0 ? "" : dir->path, jn);
	n = strlen(dir->uri) + strlen(seg) + 2;
	if ((uri = malloc(n)) != NULL)
		snprintf(uri, n, "%s%s%s", dir->uri, dir->uri[strlen(dir->uri) - 1] == '/' ?
		    "" : "/", seg);
	free(seg);
	if (path == NULL || uri == NULL) {
		r = -1;
		goto done;
	}
	if (!de->is_link && w->pol == NULL && strcmp(jn, name) == 0) {
		/* what is not a link, the listing has typed already */
		st.st_mode = de->is_dir ? S_IFDIR : de->is_file ? S_IFREG : 0;
		link = 0;
	} else if ((err = metadata(w->pol, path, &st, &link)) != 0) {
		r = walk_error(w, uri, err);
		goto done;
	}
	if ((link && (!w->o->follow_symlinks || !S_ISDIR(st.st_mode))) ||
	    (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)))
		goto done;
	if (!reserve(w, strlen(uri))) {
		r = 0;
		goto done;
	}
	json_array_append_new(w->entries, json_pack("{s:s,s:s}", "path", uri, "kind",
	    S_ISDIR(st.st_mode) ? "directory" : "file"));
	if (!S_ISDIR(st.st_mode) || dir->depth >= w->o->max_depth ||
	    (w->o->prune_hidden && jn[0] == '.'))
		goto done;
	if (w->o->follow_symlinks) {
		if (realpath(path, real) == NULL) {
			r = walk_error(w, uri, errno);
			goto done;
		}
		if ((r = seen_add(w, strdup(real))) != 1) {
			r = r == 0 ? 1 : -1;
			goto done;
		}
	} else if ((r = seen_add(w, strdup(uri))) != 1) {
		r = r == 0 ? 1 : -1;
		goto done;
	}
	r = 1;
	if (w->ndirs == w->o->max_dirs)
		w->truncated = 1;
	else if (enqueue(w, path, uri, dir->depth + 1) == -1)
		r = -1;
	else {
		w->ndirs++;
		path = uri = NULL;
	}
done:
	free(jn);
	free(path);
	free(uri);
	return r;
}

static int
walk_dir(struct walk *w, const struct wdir *dir)
{
	struct fs_dirent	*ents;
	size_t			 n, i;
	int			 err, r = 1;

	if ((err = fs_allowed(w->pol, dir->path, 1, FS_WANT_READ)) != 0 ||
	    (err = fs_list_dir(dir->path, w->pol, &ents, &n)) != 0)
		return walk_error(w, dir->uri, err);
	if (n > 1)
		qsort(ents, n, sizeof(*ents), cmp_dirent);
	for (i = 0; i < n && r == 1; i++)
		r = walk_entry(w, dir, &ents[i]);
	fs_dirents_free(ents, n);
	return r;
}

static int
walk_run(struct walk *w, const char *root)
{
	char		 real[PATH_MAX], *rp, *ru;
	struct stat	 st;
	int		 link, err, r = 1;

	if ((err = metadata(w->pol, root, &st, &link)) != 0)
		return err;
	if (!S_ISDIR(st.st_mode) || (link && !w->o->follow_symlinks))
		return 0;
	if (w->o->follow_symlinks && realpath(root, real) == NULL)
		return errno;
	if ((rp = strdup(root)) == NULL || (ru = path_to_uri(root)) == NULL) {
		free(rp);
		return ENOMEM;
	}
	if (seen_add(w, strdup(w->o->follow_symlinks ? real : ru)) == -1 ||
	    enqueue(w, rp, ru, 0) == -1) {
		free(rp);
		free(ru);
		return ENOMEM;
	}
	w->ndirs = 1;
	while (w->qhead < w->qlen && r == 1) {
		/* a copy: enqueueing subdirectories may move the queue */
		struct wdir cur = w->q[w->qhead];

		r = walk_dir(w, &cur);
		w->qhead++;
	}
	return r == -1 ? ENOMEM : 0;
}

static void
walk_free(struct walk *w)
{
	size_t	i;

	for (i = 0; i < w->qlen; i++) {
		free(w->q[i].path);
		free(w->q[i].uri);
	}
	free(w->q);
	for (i = 0; i < w->seencap; i++)
		free(w->seen[i]);
	free(w->seen);
	json_decref(w->entries);
	json_decref(w->errors);
}

void
fs_m_walk(struct rpc_req *req, json_t *params)
{
	char			*path = NULL;
	struct fs_policy	*pol = NULL;
	struct fs_walk_opts	 o;
	struct fp_deferred	 d = { 0 };
	struct fp_field		 f[] = {
		{ "path", FP_PATH, FP_REQ, &path },
		{ "options", FP_WALK, FP_REQ, &o },
		{ "sandbox", FP_DECODE, FP_OPT, &pol, &fs_sandbox_field },
	};
	struct walk		 w;
	int			 err;

	memset(&w, 0, sizeof(w));
	if (fs_begin(req, params, "WireFsWalkParams", f, 3, &d, NULL) == -1)
		goto out;
	if (o.max_dirs == 0 || o.max_entries == 0) {
		rpc_fail(req, RPC_INVALID_REQUEST,
		    "filesystem walk limits must be greater than zero");
		goto out;
	}
	if (o.max_depth > WALK_DEPTH_MAX || o.max_dirs > WALK_DIRS_MAX ||
	    o.max_entries > WALK_ENTRIES_MAX) {
		rpc_fail(req, RPC_INVALID_REQUEST, "filesystem walk limits exceed maximums: "
		    "depth=%d, directories=%d, entries=%d", WALK_DEPTH_MAX, WALK_DIRS_MAX,
		    WALK_ENTRIES_MAX);
		goto out;
	}
	if (fs_deferred(req, &d, pol))
		goto out;
	w.o = &o;
	w.pol = pol;
	if ((w.entries = json_array()) == NULL || (w.errors = json_array()) == NULL) {
		rpc_fail(req, RPC_INTERNAL_ERROR, "out of memory");
		goto out;
	}
	if ((err = walk_run(&w, path)) != 0) {
		rpc_fail_errno(req, err);
		goto out;
	}
	rpc_reply(req, json_pack("{s:O,s:O,s:b}", "entries", w.entries, "errors", w.errors,
	    "truncated", w.truncated));
out:
	walk_free(&w);
	fp_release(f, 3);
}
