/*
 * Paths as the policy compares them: prefix and depth, the real path in
 * as few lookups as the kernel allows, and the walk of a path as the
 * kernel resolves it, for the checks that must see every symlink met.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "openat2.h"
#include "policy/fs_policy_int.h"

int
fs_path_covers(const char *root, const char *path)
{
	size_t	n = strlen(root);

	if (strcmp(root, "/") == 0)
		return 1;
	return strncmp(root, path, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

size_t
fs_path_depth(const char *p)
{
	size_t	n = 0;

	for (; *p != '\0'; p++)
		if (*p == '/' && p[1] != '\0')
			n++;
	return n;
}

/* Absolute, and no empty, "." or ".." segment, no trailing slash: a name realpath(3) could give. */
static int
lexically_canonical(const char *path)
{
	const char	*seg;
	size_t		 len;

	if (path[0] != '/')
		return 0;
	if (path[1] == '\0')
		return 1;
	for (seg = path + 1;; seg += len + 1) {
		len = strcspn(seg, "/");
		if (len == 0 || (len == 1 && seg[0] == '.') ||
		    (len == 2 && seg[0] == '.' && seg[1] == '.'))
			return 0;
		if (seg[len] == '\0')
			return 1;
	}
}

/*
 * Does path exist with no symlink on the way?  Then, written canonically,
 * it is its own real path: one lookup answers what open, readlink and
 * lstat did.  0 when it does not or cannot tell (no openat2).
 */
int
fs_path_is_real(const char *path)
{
	int	fd;

	if (!lexically_canonical(path) || strlen(path) >= PATH_MAX)
		return 0;
	if ((fd = openat2_retry(AT_FDCWD, path, O_PATH, RESOLVE_NO_SYMLINKS)) == -1)
		return 0;
	close(fd);
	return 1;
}

/*
 * realpath(3) in one lookup when the path has no symlink, else in three
 * system calls instead of a readlink and a stat per component of every
 * prefix: the kernel resolves the whole path once (O_PATH), and /proc
 * gives back the name it reached.  Without /proc it is realpath(3)'s; a
 * pipe, a socket or a deleted file behind a link has no path (ENOENT).
 */
char *
fs_realpath(const char *path, char *out)
{
	static const char	deleted[] = " (deleted)";
	char			link[32];
	struct stat		st;
	ssize_t			n;
	int			fd, gone;

	if (fs_path_is_real(path))
		return strcpy(out, path);
	if ((fd = open(path, O_PATH | O_CLOEXEC)) == -1)
		return NULL;
	(void)snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, out, PATH_MAX);
	if (n <= 0 || n >= PATH_MAX) {
		close(fd);
		return realpath(path, out);
	}
	out[n] = '\0';
	/*
	 * A file no longer linked anywhere has no path: /proc names it
	 * "<old path> (deleted)", which is only text (a file or a symlink
	 * anyone may make under that name: never to be resolved as a path).
	 * One with links left that is really called so keeps its name.
	 */
	gone = (size_t)n >= sizeof(deleted) - 1 &&
	    strcmp(out + n - (sizeof(deleted) - 1), deleted) == 0 &&
	    (fstat(fd, &st) == -1 || st.st_nlink == 0);
	close(fd);
	/* "pipe:[N]" and the like: realpath(3) finds no such name either */
	if (out[0] != '/' || gone) {
		errno = ENOENT;
		return NULL;
	}
	return out;
}

/*
 * Walk path as the kernel resolves it, component by component, following
 * each symlink met (up to the kernel's 40) and its target's components
 * in turn; "." and ".." are taken lexically, as met.  visit(arg, cur, st)
 * sees every component, st NULL where it does not exist: 1 ends the walk
 * with 1 (found), -1 ends it with 0 (no further), 0 goes on.  0 at the
 * end of the path, at a missing component, at a path too long, and at a
 * link past the limit or unreadable.
 */
int
fs_path_walk(const char *path, int (*visit)(void *, const char *, const struct stat *),
    void *arg)
{
	char		cur[PATH_MAX], rest[PATH_MAX], next[PATH_MAX], target[PATH_MAX];
	const char	*r;
	struct stat	st;
	size_t		n;
	ssize_t		tn;
	int		links = 0, ok, v;

	cur[0] = '\0';		/* "/" */
	if (snprintf(rest, sizeof(rest), "%s", path) >= (int)sizeof(rest))
		return 0;
	for (r = rest;;) {
		while (*r == '/')
			r++;
		if (*r == '\0')
			return 0;
		n = strcspn(r, "/");
		if ((n == 1 && r[0] == '.') || (n == 2 && r[0] == '.' && r[1] == '.')) {
			if (n == 2)
				*(strrchr(cur, '/') != NULL ? strrchr(cur, '/') : cur) = '\0';
			r += n;
			continue;
		}
		if (snprintf(next, sizeof(next), "%s/%.*s", cur, (int)n, r) >= (int)sizeof(next))
			return 0;
		r += n;
		ok = lstat(next, &st) == 0;
		if ((v = visit(arg, next, ok ? &st : NULL)) != 0)
			return v == 1;
		if (!ok)
			return 0;
		if (!S_ISLNK(st.st_mode)) {
			memcpy(cur, next, strlen(next) + 1);
			continue;
		}
		/* cur stays the link's directory, which a relative target is read from */
		if (++links > 40 || (tn = readlink(next, target, sizeof(target) - 1)) == -1)
			return 0;
		target[tn] = '\0';
		if (target[0] == '/')
			cur[0] = '\0';
		if (snprintf(next, sizeof(next), "%s%s", target, r) >= (int)sizeof(next))
			return 0;
		memcpy(rest, next, strlen(next) + 1);
		r = rest;
	}
}
