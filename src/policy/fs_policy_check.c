/*
 * Sandbox policies: the access checks on a built policy (fs_policy.c
 * builds it), for sandboxed fs requests and the plan's mount view.
 */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/fs_policy_int.h"

/* Segment-wise fnmatch(3), "**" standing for any number of segments. */
static int
glob_match(const char *pat, const char *path)
{
	const char	*pe, *se;
	char		 ps[NAME_MAX + 1], ss[NAME_MAX + 1];
	size_t		 pl, sl;

	while (*pat == '/')
		pat++;
	while (*path == '/')
		path++;
	if (*pat == '\0')
		return *path == '\0';
	pe = pat + strcspn(pat, "/");
	pl = (size_t)(pe - pat);
	if (pl == 2 && strncmp(pat, "**", 2) == 0) {
		for (;;) {
			if (glob_match(pe, path))
				return 1;
			if (*path == '\0')
				return 0;
			path += strcspn(path, "/");
			while (*path == '/')
				path++;
		}
	}
	if (*path == '\0')
		return 0;
	se = path + strcspn(path, "/");
	sl = (size_t)(se - path);
	if (pl > NAME_MAX || sl > NAME_MAX)
		return 0;
	memcpy(ps, pat, pl);
	ps[pl] = '\0';
	memcpy(ss, path, sl);
	ss[sl] = '\0';
	if (fnmatch(ps, ss, 0) != 0)
		return 0;
	return glob_match(pe, se);
}

/* A deny glob masks what it matches and everything below that. */
static int
glob_covers(const char *pat, const char *path)
{
	char	*buf, *cut;
	int	 hit = 0;

	if ((buf = strdup(path)) == NULL)
		return 1;	/* fail closed */
	for (;;) {
		if ((hit = glob_match(pat, buf)) != 0)
			break;
		if ((cut = strrchr(buf, '/')) == NULL || cut == buf)
			break;
		*cut = '\0';
	}
	free(buf);
	return hit;
}

/* Is path a directory on the way to a granted root (shown, but holding nothing else)? */
static int
on_the_way(const struct fs_policy *p, const char *path)
{
	const struct fs_rule	*r;
	size_t			 i;

	for (i = 0; i < p->nrules; i++) {
		r = &p->rules[i];
		if (r->access != FS_ACCESS_DENY && !r->is_glob && fs_path_covers(path, r->path) &&
		    strcmp(path, r->path) != 0)
			return 1;
	}
	return 0;
}

static int
denied(const struct fs_rule *r, const char *path, int want)
{
	if (r->access != FS_ACCESS_DENY)
		return 0;
	if (r->is_glob)
		return want == FS_WANT_STAT ? glob_covers(r->path, path) &&
		    !glob_match(r->path, path) : glob_covers(r->path, path);
	if (want == FS_WANT_STAT && strcmp(r->path, path) == 0)
		return 0;	/* the mask itself is there to be looked at */
	return fs_path_covers(r->path, path);
}

/*
 * A process of the host under /proc (a pid, self, thread-self)?  A
 * sandbox's /proc holds its own processes only; through the host's, a
 * request would read execd's environment and everyone else's.
 */
static int
host_process(const char *path)
{
	const char	*c = path + 6;
	size_t		 n, i;

	if (strncmp(path, "/proc/", 6) != 0 || (n = strcspn(c, "/")) == 0)
		return 0;
	if ((n == 4 && strncmp(c, "self", 4) == 0) ||
	    (n == 11 && strncmp(c, "thread-self", 11) == 0))
		return 1;
	for (i = 0; i < n; i++)
		if (c[i] < '0' || c[i] > '9')
			return 0;
	return 1;
}

/*
 * The host's devices a sandbox has its own of (a fresh /dev): other
 * programs' shared memory in /dev/shm, their terminals in /dev/pts, and
 * execd's controlling terminal as /dev/tty are not there for a request.
 * 0, or the errno (the reference's helper's, as far as it has one).
 */
static int
host_device(const char *path, int want)
{
	if (strncmp(path, "/dev/shm/", 9) == 0 && path[9] != '\0')
		return want == FS_WANT_WRITE ? EACCES : ENOENT;
	if (strncmp(path, "/dev/pts/", 9) == 0 && path[9] != '\0' &&
	    strcmp(path + 9, "ptmx") != 0)
		return EACCES;
	if (strcmp(path, "/dev/tty") == 0 && want != FS_WANT_STAT)
		return ENXIO;	/* a new session has no controlling terminal */
	return 0;
}

int
fs_policy_check(const struct fs_policy *p, const char *path, int want)
{
	const struct fs_rule	*r, *best = NULL;
	size_t			 i, n, bestn = 0;
	char			*parent, *cut;
	int			 up;

	if (p == NULL)
		return 0;
	if (host_process(path))
		return ENOENT;
	if ((up = host_device(path, want)) != 0)
		return up;
	for (i = 0; i < p->nown; i++)
		if (!p->own[i].readonly && fs_path_covers(p->own[i].path, path) &&
		    (want != FS_WANT_STAT || strcmp(p->own[i].path, path) != 0))
			return EACCES;	/* masked, as in a command's view */
	for (i = 0; i < p->nrules; i++)
		if (denied(&p->rules[i], path, want))
			return EACCES;
	for (i = 0; i < p->nrules; i++) {
		r = &p->rules[i];
		if (r->access == FS_ACCESS_DENY || r->is_glob || !fs_path_covers(r->path, path))
			continue;
		n = fs_path_depth(r->path);
		if (best == NULL || n > bestn || (n == bestn && r->access == FS_ACCESS_WRITE)) {
			best = r;
			bestn = n;
		}
	}
	if (best != NULL && want == FS_WANT_WRITE && best->access == FS_ACCESS_WRITE) {
		for (i = 0; i < p->nown; i++)
			if (p->own[i].readonly && fs_path_covers(p->own[i].path, path) &&
			    (p->own[i].readonly != FS_OWN_PLACE ||
			    strlen(best->path) < strlen(p->own[i].path)))
				return EROFS;
	}
	if (best != NULL)
		return want == FS_WANT_WRITE && best->access != FS_ACCESS_WRITE ? EROFS : 0;
	if (on_the_way(p, path))
		return want == FS_WANT_WRITE ? EROFS : 0;
	if (want != FS_WANT_WRITE)
		return ENOENT;
	/* creating something beside the way to a root: visible, but read-only */
	if ((parent = strdup(path)) == NULL)
		return EROFS;
	if ((cut = strrchr(parent, '/')) != NULL)
		*(cut == parent ? cut + 1 : cut) = '\0';
	up = on_the_way(p, parent);
	free(parent);
	return up ? EROFS : ENOENT;
}

int
fs_policy_visible(const struct fs_policy *p, const char *path)
{
	return fs_policy_check(p, path, 0) != ENOENT;
}

const char *
fs_policy_error(const struct fs_policy *p)
{
	return p == NULL ? NULL : p->error;
}

size_t
fs_policy_nrules(const struct fs_policy *p)
{
	return p == NULL ? 0 : p->nrules;
}

const struct fs_rule *
fs_policy_rule(const struct fs_policy *p, size_t i)
{
	return p == NULL || i >= p->nrules ? NULL : &p->rules[i];
}
