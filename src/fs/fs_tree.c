/*
 * fs/remove and fs/copy, for single files and whole trees.
 *
 * Trees are walked with fs_tstack: relative to directory descriptors, never
 * through a symlink (links are removed or copied as links), at any depth.
 * Under a sandbox policy a first dry pass checks every entry, so a denied
 * entry deep inside refuses the request before anything is touched.
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

#include "fdio.h"
#include "log.h"
#include "fs/fs_int.h"
#include "fs/fs_tstack.h"

#define COPY_BUF	(1024 * 1024)

/* The last component of the top's path, before popping it. */
static void
top_name(const struct tstack *ts, char *out, size_t len)
{
	size_t	start = ts->f[ts->n - 2].pathlen + 1, end = ts->f[ts->n - 1].pathlen;

	snprintf(out, len, "%.*s", (int)(end - start), ts->path + start);
}

/* Remove what is inside the directory fd (real: its resolved path); dry: only check pol. */
static int
remove_tree(int fd, const char *real, const struct fs_policy *pol, int dry)
{
	struct tstack	 ts;
	struct ts_entry	*e;
	const char	*p;
	char		 name[NAME_MAX + 1];
	int		 err;

	if ((err = ts_init(&ts, fd, real)) != 0)
		return err;
	if ((err = ts_list(&ts)) != 0)
		goto out;
	while (ts.n > 0) {
		if ((e = ts_next(&ts, &err)) == NULL) {
			if (err != 0 || ts.n == 1)
				break;
			top_name(&ts, name, sizeof(name));
			if ((err = ts_pop(&ts)) != 0)
				break;
			if (!dry && unlinkat(ts_fd(&ts), name, AT_REMOVEDIR) == -1 &&
			    errno != ENOENT) {
				err = errno;
				break;
			}
			continue;
		}
		if (dry) {
			if ((p = ts_path_of(&ts, e->name)) == NULL) {
				err = ENOMEM;
				break;
			}
			if ((err = fs_policy_check(pol, p, FS_WANT_WRITE)) != 0)
				break;
		}
		if (e->type == DT_DIR) {
			err = ts_push(&ts, e->name);
			if (err == 0 && (err = ts_list(&ts)) != 0)
				break;
			if (err == 0 || err == ENOENT) {
				err = 0;
				continue;
			}
			if (err != ELOOP && err != ENOTDIR)
				break;
			err = 0;	/* no longer a directory: remove it as it is now */
		}
		if (!dry && unlinkat(ts_fd(&ts), e->name, 0) == -1 && errno != ENOENT) {
			err = errno;
			break;
		}
	}
out:
	ts_free(&ts);
	return err;
}

static int
remove_dir(const char *path, int recursive)
{
	int	fd, err;

	if (!recursive)
		return rmdir(path) == -1 ? errno : 0;
	if (strcmp(path, "/") == 0)
		return EBUSY;		/* what rmdir("/") says; never empty "/" */
	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return errno;
	if ((err = remove_tree(fd, path, NULL, 0)) != 0)
		return err;
	return rmdir(path) == -1 && errno != ENOENT ? errno : 0;
}

/* Remove the directory leaf of dfd (real: its checked path) and all it holds. */
static int
remove_dir_at(int dfd, const char *leaf, const char *real, const struct fs_policy *pol)
{
	int	fd, again, err;

	if (strcmp(leaf, ".") == 0)
		return EBUSY;		/* "/": what rmdir("/") says */
	if ((fd = openat(dfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return errno;
	/* both passes in the directory that was opened, whatever the name is now */
	if ((again = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		err = errno;
		close(fd);
		return err;
	}
	if ((err = remove_tree(fd, real, pol, 1)) != 0) {
		close(again);
		return err;
	}
	if ((err = remove_tree(again, real, NULL, 0)) != 0)
		return err;
	return unlinkat(dfd, leaf, AT_REMOVEDIR) == -1 && errno != ENOENT ? errno : 0;
}

/* Sandboxed: the entry removed from its pinned, checked directory. */
static int
remove_pinned(const struct fs_policy *pol, const char *path, int recursive, int force)
{
	struct fs_pin	pin;
	struct stat	st;
	int		err;

	if ((err = fs_pin_parent(pol, path, FS_WANT_WRITE, &pin)) != 0)
		return err;
	if (fstatat(pin.dfd, pin.leaf, &st, AT_SYMLINK_NOFOLLOW) == -1)
		err = errno == ENOENT && force ? 0 : errno;
	else if (!S_ISDIR(st.st_mode))
		err = unlinkat(pin.dfd, pin.leaf, 0) == -1 ? errno : 0;
	else if (!recursive)
		err = unlinkat(pin.dfd, pin.leaf, AT_REMOVEDIR) == -1 ? errno : 0;
	else
		err = remove_dir_at(pin.dfd, pin.leaf, pin.real, pol);
	fs_pin_close(&pin);
	return err;
}

void
fs_m_remove(struct rpc_req *req, json_t *params)
{
	char			*path = NULL;
	struct fs_policy	*pol = NULL;
	struct fp_deferred	 d = { 0 };
	int			 recursive = 1, force = 1, err;
	struct fp_field		 f[] = {
		{ "path", FP_PATH, FP_REQ, &path },
		{ "recursive", FP_BOOL, FP_OPT, &recursive },
		{ "force", FP_BOOL, FP_OPT, &force },
		{ "sandbox", FP_DECODE, FP_SEQ_DEFAULT, &pol, &fs_sandbox_field },
		{ " options", FP_ANY, 0, NULL },
	};
	struct stat		 st;

	if (fs_begin(req, params, "WireFsRemoveParams", f, 5, &d, &pol) == -1)
		goto out;
	/* what the policy hides is missing, as in the reference's sandbox */
	if ((err = fs_allowed(pol, path, 0, FS_WANT_STAT)) == 0 && lstat(path, &st) == -1)
		err = fs_pin_enoent(pol, path, errno);
	if (err == ENOENT && force) {
		fs_reply_empty(req);
		goto out;
	}
	if (err == 0)
		err = fs_allowed(pol, path, 0, FS_WANT_WRITE);
	if (err == 0 && pol != NULL)
		err = remove_pinned(pol, path, recursive, force);
	else if (err == 0)
		err = S_ISDIR(st.st_mode) ? remove_dir(path, recursive) :
		    unlink(path) == -1 ? errno : 0;
	if (err != 0) {
		log_debug("fs/remove %s: %s", path, strerror(err));
		rpc_fail_errno(req, err);
	} else
		fs_reply_empty(req);
out:
	fp_release(f, 5);
}

static int
copy_data(int in, int out)
{
	char	*buf;
	ssize_t	 n;
	int	 err = 0;

	for (;;) {
		n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
		if (n == 0)
			return 0;
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			break;
	}
	if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP &&
	    errno != EBADF)
		return errno;
	/* no in-kernel copy here: plain reads and writes from where it stopped */
	if ((buf = malloc(COPY_BUF)) == NULL)
		return ENOMEM;
	while ((n = read(in, buf, COPY_BUF)) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			err = errno;
			break;
		}
		if ((err = fd_write_all(out, buf, (size_t)n)) != 0)
			break;
	}
	free(buf);
	return err;
}

/*
 * As Rust's std::fs::copy: the destination is created or truncated and
 * gets the source's mode.  Unlike it, copying a file onto itself is a
 * no-op rather than an emptied file, and inside a tree (nofollow) an
 * existing symlink is never written through.
 */
static int
copy_file(int sfd, const char *sname, int dfd, const char *dname, int nofollow)
{
	struct stat	 st, dst;
	int		 in, out, err = 0, nf = nofollow ? O_NOFOLLOW : 0;

	if ((in = openat(sfd, sname, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC | nf)) == -1)
		return errno;
	if (fstat(in, &st) == -1 || !S_ISREG(st.st_mode)) {
		err = S_ISREG(st.st_mode) ? errno : EINVAL;
		close(in);
		return err;
	}
	out = openat(dfd, dname, O_WRONLY | O_CREAT | O_NOCTTY | O_NONBLOCK | O_CLOEXEC | nf,
	    st.st_mode & 07777);
	if (out == -1) {
		err = nofollow && errno == ELOOP ? EEXIST : errno;
		close(in);
		return err;
	}
	if (fstat(out, &dst) == -1)
		err = errno;
	else if (dst.st_dev == st.st_dev && dst.st_ino == st.st_ino)
		goto done;	/* the same file */
	else if (S_ISREG(dst.st_mode) && (ftruncate(out, 0) == -1 ||
	    fchmod(out, st.st_mode & 07777) == -1))
		err = errno;
	else if (fcntl(out, F_SETFL, fcntl(out, F_GETFL) & ~O_NONBLOCK) == -1)
		err = errno;
	else
		err = copy_data(in, out);
done:
	close(in);
	if (close(out) == -1 && err == 0)
		err = errno;
	return err;
}

static int
copy_link(int sfd, const char *sname, int dfd, const char *dname)
{
	char	target[PATH_MAX];
	ssize_t	n;

	if ((n = readlinkat(sfd, sname, target, sizeof(target) - 1)) == -1)
		return errno;
	target[n] = '\0';
	return symlinkat(target, dfd, dname) == -1 ? errno : 0;
}

/* mkdir inside the tree: an existing directory is fine, anything else there is not. */
static int
make_dir_at(int dfd, const char *name)
{
	struct stat	st;

	if (mkdirat(dfd, name, 0777) == 0)
		return 0;
	if (errno != EEXIST)
		return errno;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return errno;
	return S_ISDIR(st.st_mode) ? 0 : EEXIST;
}

/* Check one entry of a copy against the policy: readable there, writable here. */
static int
copy_check(struct tstack *s, const char *name, const char *dreal, const struct fs_policy *pol)
{
	const char	*sp;
	char		*dp;
	int		 err;
	size_t		 n;

	if ((sp = ts_path_of(s, name)) == NULL)
		return ENOMEM;
	if ((err = fs_policy_check(pol, sp, FS_WANT_READ)) != 0)
		return err;
	sp += s->f[0].pathlen;	/* relative to the source root */
	n = strlen(dreal) + strlen(sp) + 1;
	if ((dp = malloc(n)) == NULL)
		return ENOMEM;
	snprintf(dp, n, "%s%s", strcmp(dreal, "/") == 0 ? "" : dreal, sp);
	err = fs_policy_check(pol, dp, FS_WANT_WRITE);
	free(dp);
	return err;
}

/*
 * Copy the tree under sfd into dfd; dry: only check pol, creating nothing.
 * With pol the copy checks each entry again: what a sandboxed command
 * moves into the source after the dry pass is checked like the rest.
 */
static int
copy_tree(int sfd, const char *sreal, int dfd, const char *dreal,
    const struct fs_policy *pol, int dry)
{
	struct tstack	 s, d;
	struct ts_entry	*e;
	int		 err;

	memset(&d, 0, sizeof(d));
	if ((err = ts_init(&s, sfd, sreal)) != 0) {
		if (dfd != -1)
			close(dfd);
		return err;
	}
	if (!dry && (err = ts_init(&d, dfd, dreal)) != 0)
		goto out;
	if ((err = ts_list(&s)) != 0)
		goto out;
	while (s.n > 0) {
		if ((e = ts_next(&s, &err)) == NULL) {
			if (err != 0 || s.n == 1 || (err = ts_pop(&s)) != 0 ||
			    (!dry && (err = ts_pop(&d)) != 0))
				break;
			continue;
		}
		if (pol != NULL && (err = copy_check(&s, e->name, dreal, pol)) != 0)
			break;
		if (e->type == DT_DIR) {
			if (!dry && (err = make_dir_at(ts_fd(&d), e->name)) != 0)
				break;
			if ((err = ts_push(&s, e->name)) != 0)
				break;
			if (!dry && (err = ts_push(&d, e->name)) != 0) {
				err = err == ELOOP || err == ENOTDIR ? EEXIST : err;
				break;
			}
			if ((err = ts_list(&s)) != 0)
				break;
		} else if (dry)
			continue;
		else if (e->type == DT_REG)
			err = copy_file(ts_fd(&s), e->name, ts_fd(&d), e->name, 1);
		else if (e->type == DT_LNK)
			err = copy_link(ts_fd(&s), e->name, ts_fd(&d), e->name);
		/* other kinds (FIFOs, sockets, devices) are skipped, as by the reference */
		if (err != 0)
			break;
	}
out:
	ts_free(&s);
	ts_free(&d);
	return err;
}

/* Is dest the source directory itself or somewhere inside it? */
static int
inside_source(const char *src, const char *dest, int *inside)
{
	char	sreal[PATH_MAX], dreal[PATH_MAX];
	size_t	n;

	if (realpath(src, sreal) == NULL)
		return errno;
	if (fs_resolve(dest, 1, dreal, sizeof(dreal)) != 0)
		return ENAMETOOLONG;
	n = strlen(sreal);
	*inside = strcmp(sreal, "/") == 0 || (strncmp(sreal, dreal, n) == 0 &&
	    (dreal[n] == '\0' || dreal[n] == '/'));
	return 0;
}

/*
 * Sandboxed: the source tree read from its pinned directory, checked
 * against the policy, and copied into the pinned destination - which must
 * still be where the check put it.
 */
static int
copy_dir_pinned(const char *src, const char *dest, const struct fs_policy *pol)
{
	struct fs_pin	spin;
	char		dreal[PATH_MAX], dnow[PATH_MAX];
	int		sfd, again, dfd, err;

	if (fs_resolve(dest, 1, dreal, sizeof(dreal)) != 0)
		return ENAMETOOLONG;
	if ((err = fs_policy_check(pol, dreal, FS_WANT_WRITE)) != 0 ||
	    (err = fs_pin_parent(pol, src, FS_WANT_READ, &spin)) != 0)
		return err;
	sfd = openat(spin.dfd, spin.leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	err = sfd == -1 ? errno : 0;
	if (sfd != -1 && (again = openat(sfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		err = errno;
		close(sfd);
	}
	if (err != 0) {
		fs_pin_close(&spin);
		return err;
	}
	if ((err = copy_tree(sfd, spin.real, -1, dreal, pol, 1)) != 0 ||
	    (err = fs_mkdir_pinned(pol, dest, 1)) != 0 ||
	    (err = fs_pin_open(pol, dest, FS_WANT_WRITE, O_RDONLY | O_DIRECTORY, &dfd, dnow,
	    sizeof(dnow))) != 0) {
		close(again);
		fs_pin_close(&spin);
		return err;
	}
	if (strcmp(dnow, dreal) != 0) {
		/* the destination moved since it was checked */
		close(dfd);
		close(again);
		fs_pin_close(&spin);
		return EACCES;
	}
	err = copy_tree(again, spin.real, dfd, dreal, pol, 0);
	fs_pin_close(&spin);
	return err;
}

static int
copy_dir(struct rpc_req *req, const char *src, const char *dest, const struct fs_policy *pol)
{
	char	dreal[PATH_MAX];
	int	sfd, dfd, err, inside = 0;

	if ((err = inside_source(src, dest, &inside)) != 0)
		return err;
	if (inside) {
		rpc_fail(req, RPC_INVALID_REQUEST,
		    "fs/copy cannot copy a directory to itself or one of its descendants");
		return -1;
	}
	if (pol != NULL)
		return copy_dir_pinned(src, dest, pol);
	if (strlen(dest) >= PATH_MAX)
		return ENAMETOOLONG;
	snprintf(dreal, sizeof(dreal), "%s", dest);
	if (fs_mkdir_all(dreal) == -1)
		return errno;
	if ((sfd = open(src, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return errno;
	if ((dfd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		err = errno;
		close(sfd);
		return err;
	}
	return copy_tree(sfd, src, dfd, dest, NULL, 0);
}

/* Sandboxed: a file or a link copied between pinned, checked directories. */
static int
copy_one_pinned(const char *src, const char *dest, int is_link, const struct fs_policy *pol)
{
	struct fs_pin	spin, dpin;
	int		err;

	if ((err = fs_pin_parent(pol, src, FS_WANT_READ, &spin)) != 0)
		return err;
	if ((err = is_link ? fs_pin_parent(pol, dest, FS_WANT_WRITE, &dpin) :
	    fs_pin_final(pol, dest, FS_WANT_WRITE, &dpin)) != 0) {
		fs_pin_close(&spin);
		return err;
	}
	/* nofollow: a link swapped in at either end is not gone through */
	err = is_link ? copy_link(spin.dfd, spin.leaf, dpin.dfd, dpin.leaf) :
	    copy_file(spin.dfd, spin.leaf, dpin.dfd, dpin.leaf, 1);
	fs_pin_close(&spin);
	fs_pin_close(&dpin);
	return err;
}

static int
copy_one(struct rpc_req *req, const char *src, const char *dest, int recursive,
    const struct fs_policy *pol)
{
	struct stat	st;
	int		err;

	if ((err = fs_allowed(pol, src, 0, FS_WANT_READ)) != 0)
		return err;
	if (lstat(src, &st) == -1)
		return fs_pin_enoent(pol, src, errno);
	if (S_ISDIR(st.st_mode)) {
		if (!recursive) {
			rpc_fail(req, RPC_INVALID_REQUEST,
			    "fs/copy requires recursive: true when sourcePath is a directory");
			return -1;
		}
		return copy_dir(req, src, dest, pol);
	}
	if (!S_ISLNK(st.st_mode) && !S_ISREG(st.st_mode)) {
		rpc_fail(req, RPC_INVALID_REQUEST,
		    "fs/copy only supports regular files, directories, and symlinks");
		return -1;
	}
	if ((err = fs_allowed(pol, dest, S_ISREG(st.st_mode), FS_WANT_WRITE)) != 0)
		return err;
	if (pol != NULL)
		return copy_one_pinned(src, dest, S_ISLNK(st.st_mode), pol);
	if (S_ISLNK(st.st_mode))
		return copy_link(AT_FDCWD, src, AT_FDCWD, dest);
	return copy_file(AT_FDCWD, src, AT_FDCWD, dest, 0);
}

void
fs_m_copy(struct rpc_req *req, json_t *params)
{
	char			*src = NULL, *dest = NULL;
	struct fs_policy	*pol = NULL;
	struct fp_deferred	 d = { 0 };
	int			 recursive = 0, err;
	struct fp_field		 f[] = {
		{ "sourcePath", FP_PATH, FP_REQ, &src },
		{ "destinationPath", FP_PATH, FP_REQ, &dest },
		{ "recursive", FP_BOOL, FP_REQ, &recursive },
		{ "sandbox", FP_DECODE, FP_OPT, &pol, &fs_sandbox_field },
	};

	if (fs_begin(req, params, "WireFsCopyParams", f, 4, &d, &pol) == -1)
		goto out;
	if ((err = copy_one(req, src, dest, recursive, pol)) > 0) {
		log_debug("fs/copy %s %s: %s", src, dest, strerror(err));
		rpc_fail_errno(req, err);
	} else if (err == 0)
		fs_reply_empty(req);
out:
	fp_release(f, 4);
}
