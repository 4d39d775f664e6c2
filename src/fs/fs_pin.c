/*
 * Paths of sandboxed fs requests, pinned: what the policy checks is what
 * the operation then uses.
 *
 * A sandboxed process may swap any directory it can write for a symlink
 * while execd works, so a path that was checked by name cannot be opened
 * again by name.  Here the path is resolved once, relative to the deepest
 * policy root covering it, with openat2(2) (RESOLVE_BENEATH: nothing leads
 * out of the root, RESOLVE_NO_MAGICLINKS: /proc/self/fd/N and the like
 * never lead to execd's own descriptors); the policy is then checked on the
 * path the kernel says the descriptor has, and the caller acts only through
 * that descriptor (*at() calls with the last component, never following it).
 *
 * A symlink leading from one root into another is resolved a second time
 * from "/" (still refusing magic links): the check on the descriptor's own
 * path is what keeps the request inside the policy.  Without openat2, or
 * when the kernel keeps reporting a rename race, the request is refused:
 * never resolved by name.
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/statfs.h>

#include <linux/magic.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "openat2.h"
#include "fs/fs_int.h"

#define PIN_LINKS_MAX	40	/* as the kernel's ELOOP limit */

/* The descriptor of the deepest root of pol covering path, and its path. */
static int
open_anchor(const struct fs_policy *pol, const char *path, const char **anchor)
{
	const struct fs_rule	*r, *best;
	size_t			 i, n, bestn, limit = (size_t)-1;
	int			 fd;

	for (;;) {
		best = NULL;
		bestn = 0;
		for (i = 0; (r = fs_policy_rule(pol, i)) != NULL; i++) {
			if (r->access == FS_ACCESS_DENY || r->is_glob ||
			    !fs_path_covers(r->path, path))
				continue;
			n = fs_path_depth(r->path);
			if (n < limit && (best == NULL || n > bestn)) {
				best = r;
				bestn = n;
			}
		}
		if (best == NULL || bestn == 0)
			break;
		if ((fd = open(best->path, O_PATH | O_DIRECTORY | O_CLOEXEC)) != -1) {
			*anchor = best->path;
			return fd;
		}
		limit = bestn;	/* a file rule (/dev/null), or gone: one further up */
	}
	*anchor = "/";
	return open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
}

/* openat2 beneath dfd, retrying the races the kernel reports; -1 with errno. */
static int
open_beneath(int dfd, const char *rel, int oflags, unsigned long long resolve)
{
	int	fd;

	if ((fd = openat2_retry(dfd, rel, oflags, resolve)) == -1 && errno == EAGAIN)
		log_warnx("fs sandbox: resolution kept racing renames: refused");
	return fd;
}

/*
 * Open the absolute, lexically normal path with oflags, following symlinks
 * but never magic links or out of the policy's roots except into another
 * place the caller checks.  -1 with errno; ELOOP for a magic link.
 */
static int
resolve(const struct fs_policy *pol, const char *path, int oflags)
{
	const char	*anchor, *rel;
	int		 afd, fd, e;

	if ((afd = open_anchor(pol, path, &anchor)) == -1)
		return -1;
	rel = path + (strcmp(anchor, "/") == 0 ? 0 : strlen(anchor));
	while (*rel == '/')
		rel++;
	if (*rel == '\0')
		rel = ".";
	if (strcmp(anchor, "/") == 0)
		fd = open_beneath(afd, rel, oflags, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
	else if ((fd = open_beneath(afd, rel, oflags, RESOLVE_BENEATH |
	    RESOLVE_NO_MAGICLINKS)) == -1 && errno == EXDEV) {
		/* a link into another root (or out of all): its end is checked below */
		close(afd);
		if ((afd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1)
			return -1;
		fd = open_beneath(afd, path + 1, oflags, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
	}
	e = errno;
	close(afd);
	if (fd == -1 && e == ENOSYS)
		log_warnx("fs sandbox: no openat2 on this kernel: sandboxed request refused");
	errno = e;
	return fd;
}

static int
denied_visit(void *arg, const char *cur, const struct stat *st)
{
	(void)st;
	if (fs_policy_check(arg, cur, FS_WANT_STAT) == EACCES)
		return 1;
	/* what /proc shows as links are execd's descriptors: not followed */
	return fs_path_covers("/proc", cur) ? -1 : 0;
}

/*
 * Does resolving path by name (symlinks followed) pass through a denied
 * place?  Only the choice of an error hangs on this, never an access: a
 * missing file inside a denied directory must fail as an existing one does
 * (EACCES), or a planted symlink would tell which exist.
 */
static int
denied_on_the_way(const struct fs_policy *pol, const char *path)
{
	return fs_path_walk(path, denied_visit, (void *)pol);
}

int
fs_pin_enoent(const struct fs_policy *pol, const char *path, int err)
{
	return err == ENOENT && pol != NULL && denied_on_the_way(pol, path) ? EACCES : err;
}

/* Refused outright: a magic link, a kernel without openat2, a resolution racing on. */
static int
refused(const struct fs_policy *pol, const char *path, int err)
{
	if (err == ENOENT && denied_on_the_way(pol, path))
		return EACCES;
	return err == ENOSYS || err == EAGAIN || err == EXDEV ? EACCES : err;
}

/* Would following path without magic links be what fails?  Then EACCES, else ELOOP. */
static int
loop_or_magic(const char *path)
{
	int	fd;

	/* only looked at, never used */
	if ((fd = open(path, O_PATH | O_CLOEXEC)) != -1) {
		close(fd);
		return EACCES;
	}
	return errno == ELOOP ? ELOOP : EACCES;
}

int
fs_fd_path(int fd, char *out, size_t outlen)
{
	char	proc[64];
	ssize_t	n;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if ((n = readlink(proc, out, outlen - 1)) == -1) {
		log_warn("fs sandbox: %s", proc);
		return EACCES;
	}
	if ((size_t)n == outlen - 1)
		return ENAMETOOLONG;
	out[n] = '\0';
	/* another mount namespace's or a detached path: nothing to check */
	return out[0] == '/' ? 0 : EACCES;
}

int
fs_pin_open(const struct fs_policy *pol, const char *path, int want, int oflags, int *fdp,
    char *real, size_t reallen)
{
	int	fd, err;

	if ((fd = resolve(pol, path, oflags)) == -1) {
		err = errno;
		return err == ELOOP ? loop_or_magic(path) : refused(pol, path, err);
	}
	if ((err = fs_fd_path(fd, real, reallen)) != 0 ||
	    (err = fs_policy_check(pol, real, want)) != 0) {
		close(fd);
		return err;
	}
	*fdp = fd;
	return 0;
}

/* Split path into its directory (into dir) and last component. */
static int
split(const char *path, char *dir, size_t dirlen, char *leaf, size_t leaflen)
{
	const char	*slash = strrchr(path, '/');

	if (slash == NULL)
		return EINVAL;
	if (slash[1] == '\0' || strcmp(slash + 1, ".") == 0 || strcmp(slash + 1, "..") == 0) {
		/* "/" itself (a normal path has no other): the directory, as "." */
		if (fs_pathf(dir, dirlen, "%s", path) != 0)
			return ENAMETOOLONG;
		return fs_pathf(leaf, leaflen, ".");
	}
	if (fs_pathf(leaf, leaflen, "%s", slash + 1) != 0)
		return ENAMETOOLONG;
	return fs_pathf(dir, dirlen, "%.*s", slash == path ? 1 : (int)(slash - path), path);
}

/* Pin the directory of path without a policy check. */
static int
pin_dir(const struct fs_policy *pol, const char *path, struct fs_pin *p)
{
	char	dir[PATH_MAX], dreal[PATH_MAX];
	int	err;

	p->dfd = -1;
	if ((err = split(path, dir, sizeof(dir), p->leaf, sizeof(p->leaf))) != 0)
		return err;
	if ((p->dfd = resolve(pol, dir, O_PATH | O_DIRECTORY)) == -1) {
		err = errno;
		return err == ELOOP ? loop_or_magic(dir) : refused(pol, dir, err);
	}
	if ((err = fs_fd_path(p->dfd, dreal, sizeof(dreal))) != 0 ||
	    (err = fs_pathf(p->real, sizeof(p->real), "%s/%s", strcmp(dreal, "/") == 0 ?
	    "" : dreal, p->leaf)) != 0) {
		fs_pin_close(p);
		return err;
	}
	if (strcmp(p->leaf, ".") == 0)
		snprintf(p->real, sizeof(p->real), "%s", dreal);
	return 0;
}

int
fs_pin_parent(const struct fs_policy *pol, const char *path, int want, struct fs_pin *p)
{
	int	err;

	if ((err = pin_dir(pol, path, p)) != 0)
		return err;
	if (want >= 0 && (err = fs_policy_check(pol, p->real, want)) != 0) {
		fs_pin_close(p);
		return err;
	}
	return 0;
}

/* Lexically normal: no ".", no "..", no "//", no trailing "/" (in place). */
static void
normalise(char *path)
{
	char	*in = path, *out = path, *seg;
	size_t	 n;

	while (*in != '\0') {
		while (*in == '/')
			in++;
		seg = in;
		n = strcspn(seg, "/");
		in += n;
		if (n == 0 || (n == 1 && seg[0] == '.'))
			continue;
		if (n == 2 && seg[0] == '.' && seg[1] == '.') {
			while (out > path && *--out != '/')
				;
			continue;
		}
		*out++ = '/';
		memmove(out, seg, n);
		out += n;
	}
	if (out == path)
		*out++ = '/';
	*out = '\0';
}

int
fs_pin_final(const struct fs_policy *pol, const char *path, int want, struct fs_pin *p)
{
	char		cur[PATH_MAX], link[PATH_MAX];
	struct stat	st;
	struct statfs	sfs;
	ssize_t		n;
	int		i, err;

	if (fs_pathf(cur, sizeof(cur), "%s", path) != 0)
		return ENAMETOOLONG;
	for (i = 0; i < PIN_LINKS_MAX; i++) {
		if ((err = pin_dir(pol, cur, p)) != 0)
			return err;
		if (fstatat(p->dfd, p->leaf, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
		    !S_ISLNK(st.st_mode))
			return fs_pin_parent_check(pol, p, want);
		/* what /proc shows as links are descriptors, not paths: never followed */
		if (fstatfs(p->dfd, &sfs) == -1 || sfs.f_type == PROC_SUPER_MAGIC ||
		    (n = readlinkat(p->dfd, p->leaf, link, sizeof(link) - 1)) == -1) {
			fs_pin_close(p);
			return EACCES;
		}
		link[n] = '\0';
		fs_pin_close(p);
		if ((link[0] == '/' ? fs_pathf(cur, sizeof(cur), "%s", link) :
		    fs_pathf(cur, sizeof(cur), "%s/../%s", p->real, link)) != 0)
			return ENAMETOOLONG;
		normalise(cur);
	}
	return ELOOP;
}

int
fs_pin_parent_check(const struct fs_policy *pol, struct fs_pin *p, int want)
{
	int	err;

	if ((err = fs_policy_check(pol, p->real, want)) != 0)
		fs_pin_close(p);
	return err;
}

int
fs_pin_stat(const struct fs_policy *pol, const char *path, struct stat *st, struct stat *lst)
{
	struct fs_pin	pin;
	char		real[PATH_MAX];
	int		fd, err;

	if ((err = fs_pin_open(pol, path, FS_WANT_STAT, O_PATH, &fd, real, sizeof(real))) != 0)
		return err;
	err = fstat(fd, st) == -1 ? errno : 0;
	close(fd);
	if (err != 0 || (err = fs_pin_parent(pol, path, FS_WANT_STAT, &pin)) != 0)
		return err;
	if (fstatat(pin.dfd, pin.leaf, lst, AT_SYMLINK_NOFOLLOW) == -1)
		err = errno;
	fs_pin_close(&pin);
	return err;
}

void
fs_pin_close(struct fs_pin *p)
{
	if (p->dfd != -1 && close(p->dfd) == -1)
		log_warn("fs sandbox: close");
	p->dfd = -1;
}
