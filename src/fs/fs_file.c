/*
 * fs/readFile and fs/writeFile: whole files in one message.
 *
 * Reading encodes into the answer as it reads, so execd holds the base64
 * text and one small chunk, not the file as well.  Writing never leaves a
 * half-written file: the data, decoded a stretch at a time as it is
 * written (from the message's own text: see rpc_req_string()), goes to a
 * temporary file beside the target, is synced, and renamed over it,
 * keeping the target's mode and owner.
 * (The reference truncates and writes in place.)  A file with hard links
 * is written in place instead, so that the links survive (write_linked).
 */
#include "config.h"

#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "b64.h"
#include "fdio.h"
#include "log.h"
#include "fs/fs_int.h"

#define READ_CHUNK	(3 * 1024 * 1024)	/* a multiple of 3: no padding mid-stream */
#define LINKS_MAX	40			/* as the kernel's ELOOP limit */
#define HUGE_PAGE	(2 * 1024 * 1024)
#define DECODE_CHUNK	(3 * 256 * 1024)	/* decoded and written at a time: 3n bytes */

/*
 * What fs/writeFile writes: its base64, checked, decoded a stretch at a
 * time as it is written, so that the data is never held whole.
 */
struct wdata {
	const char	*b64;
	size_t		 b64len;
	size_t		 len;		/* decoded */
};

/*
 * A large answer in 2 MiB pages where the kernel offers them (THP in
 * "madvise" mode): a 64 MiB file's 85 MiB of base64 is then 43 page faults
 * rather than 21,000.
 */
static void
huge_pages(void *p, size_t len)
{
	uintptr_t	start = ((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
	uintptr_t	end = ((uintptr_t)p + len) & ~(uintptr_t)(HUGE_PAGE - 1);

	if (end > start && madvise((void *)start, end - start, MADV_HUGEPAGE) == -1)
		log_debug("madvise MADV_HUGEPAGE: %s", strerror(errno));
}

/*
 * Base64 of everything fd yields, into a malloc'd *out after `head` bytes
 * left for the caller (and with room for `tail` more at the end);
 * 0 or an errno (EFBIG: over the limit).
 */
static int
read_b64(int fd, size_t hint, size_t head, size_t tail, char **out, size_t *outlen)
{
	unsigned char	*chunk;
	char		*b, *nb;
	size_t		 cap, have = 0, total = 0, o = head, ncap;
	ssize_t		 n;
	int		 err = 0;

	cap = head + B64_ENCLEN(hint) + tail + 1;
	if ((chunk = malloc(READ_CHUNK)) == NULL || (b = malloc(cap)) == NULL) {
		free(chunk);
		return ENOMEM;
	}
	huge_pages(b, cap);
	for (;;) {
		n = read(fd, chunk + have, READ_CHUNK - have);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			err = errno;
			break;
		}
		have += (size_t)n;
		total += (size_t)n;
		if (total > FS_READ_MAX) {
			err = EFBIG;
			break;
		}
		if (n > 0 && have < READ_CHUNK)
			continue;
		if (o + B64_ENCLEN(have) + tail + 1 > cap) {
			/* the file grew while we read it */
			ncap = cap + cap / 2 + B64_ENCLEN(READ_CHUNK);
			if ((nb = realloc(b, ncap)) == NULL) {
				err = ENOMEM;
				break;
			}
			b = nb;
			cap = ncap;
		}
		o += b64_encode_to(b + o, chunk, have);
		have = 0;
		if (n == 0)
			break;
	}
	free(chunk);
	if (err != 0) {
		free(b);
		return err;
	}
	*out = b;
	*outlen = o - head;
	return 0;
}

#ifdef RPC_HAVE_REPLY_JSON
#define RESULT_HEAD	"{\"dataBase64\":\""
#define RESULT_TAIL	"\"}"

/* The answer serialised here: base64 needs no escaping, and jansson need not copy it. */
static int
reply_b64(struct rpc_req *req, int fd, size_t hint)
{
	char	*b;
	size_t	 len, head = sizeof(RESULT_HEAD) - 1, tail = sizeof(RESULT_TAIL) - 1;
	int	 err;

	/* room for the envelope before the result: the answer is not copied again */
	if ((err = read_b64(fd, hint, RPC_REPLY_ROOM + head, tail + 1, &b, &len)) != 0)
		return err;
	memcpy(b + RPC_REPLY_ROOM, RESULT_HEAD, head);
	memcpy(b + RPC_REPLY_ROOM + head + len, RESULT_TAIL, tail + 1);
	rpc_reply_json(req, b, RPC_REPLY_ROOM, head + len + tail);
	return 0;
}
#else
static int
reply_b64(struct rpc_req *req, int fd, size_t hint)
{
	json_t	*res, *s;
	char	*b;
	size_t	 len;
	int	 err;

	if ((err = read_b64(fd, hint, 0, 0, &b, &len)) != 0)
		return err;
	/* jansson copies the text: let ours go before the answer is serialised */
	s = json_stringn_nocheck(b, len);
	free(b);
	if (s == NULL || (res = json_object()) == NULL ||
	    json_object_set_new_nocheck(res, "dataBase64", s) == -1) {
		json_decref(s);
		return ENOMEM;
	}
	rpc_reply(req, res);
	return 0;
}
#endif

/*
 * The reference opens before it looks: a directory it may not read is
 * "Permission denied", one it may read "is not a file".
 */
static void
fail_not_readable(struct rpc_req *req, const char *path, const struct stat *st)
{
	int	fd;

	if (S_ISDIR(st->st_mode)) {
		if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
			rpc_fail_errno(req, errno);
			return;
		}
		close(fd);
	}
	fs_fail_not_a_file(req, path);
}

void
fs_m_read_file(struct rpc_req *req, json_t *params)
{
	char			*path = NULL, real[PATH_MAX];
	struct fs_policy	*pol = NULL;
	struct fp_deferred	 d = { 0 };
	int			 flag = 0;
	struct fp_field		 f[] = {
		{ "path", FP_PATH, FP_REQ, &path },
		/* an Option<bool> execd has no use for, by position only */
		{ " flag", FP_BOOL, FP_SEQ_DEFAULT, &flag },
		{ "sandbox", FP_DECODE, FP_OPT, &pol, &fs_sandbox_field },
	};
	struct stat		 st;
	int			 fd = -1, err;

	if (fs_begin(req, params, "WireFsReadFileParams", f, 3, &d, &pol) == -1)
		goto out;
	if ((err = fs_allowed(pol, path, 1, FS_WANT_READ)) != 0 ||
	    (stat(path, &st) == -1 && (err = fs_pin_enoent(pol, path, errno)) != 0)) {
		rpc_fail_errno(req, err);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		fail_not_readable(req, path, &st);
		goto out;
	}
	if ((size_t)st.st_size > FS_READ_MAX)
		goto too_large;
	/* O_NONBLOCK: a path swapped for a FIFO must not hang the loop */
	if (pol != NULL && (err = fs_pin_open(pol, path, FS_WANT_READ, O_RDONLY | O_NONBLOCK |
	    O_NOCTTY, &fd, real, sizeof(real))) != 0) {
		rpc_fail_errno(req, err);
		goto out;
	}
	if ((fd == -1 && (fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)) == -1) ||
	    fstat(fd, &st) == -1) {
		rpc_fail_errno(req, errno);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		fs_fail_not_a_file(req, path);
		goto out;
	}
	if ((err = reply_b64(req, fd, (size_t)st.st_size)) == EFBIG)
		goto too_large;
	if (err != 0) {
		log_warnx("fs/readFile %s: %s", path, strerror(err));
		rpc_fail_errno(req, err);
	}
	goto out;
too_large:
	rpc_fail(req, RPC_INVALID_REQUEST, "file is too large to read: limit is %u bytes",
	    FS_READ_MAX);
out:
	if (fd != -1)
		close(fd);
	fp_release(f, 3);
}

/* What writing to `path` writes: the end of its symlink chain. */
static int
final_target(const char *path, char *out, size_t outlen)
{
	char	 cur[PATH_MAX], link[PATH_MAX], *slash;
	ssize_t	 n;
	int	 i;

	if (snprintf(cur, sizeof(cur), "%s", path) >= (int)sizeof(cur))
		return ENAMETOOLONG;
	for (i = 0; i < LINKS_MAX; i++) {
		if ((n = readlink(cur, link, sizeof(link) - 1)) == -1) {
			if (errno != EINVAL && errno != ENOENT)
				return errno;
			snprintf(out, outlen, "%s", cur);
			return 0;
		}
		link[n] = '\0';
		if (link[0] == '/')
			snprintf(cur, sizeof(cur), "%s", link);
		else {
			if ((slash = strrchr(cur, '/')) == NULL)
				return EINVAL;
			slash[1] = '\0';
			if (strlen(cur) + strlen(link) >= sizeof(cur))
				return ENAMETOOLONG;
			strcat(cur, link);
		}
	}
	return ELOOP;
}

/* The decoded bytes [off, off + n) of d, written at fd's offset. */
static int
wdata_write(int fd, const struct wdata *d, size_t off, size_t n)
{
	unsigned char	*chunk;
	size_t		 quad = off / 3, skip = off % 3, quads, got, take;
	int		 err = 0;

	if (n == 0)
		return 0;
	if ((chunk = malloc(DECODE_CHUNK)) == NULL)
		return ENOMEM;
	while (n > 0 && err == 0) {
		quads = DECODE_CHUNK / 3;
		if (quads > d->b64len / 4 - quad)
			quads = d->b64len / 4 - quad;
		if (quads == 0) {
			err = EIO;	/* not so: n is within d->len */
			break;
		}
		got = b64_decode_to(chunk, d->b64 + quad * 4, quads * 4);
		take = got - skip < n ? got - skip : n;
		err = fd_write_all(fd, chunk + skip, take);
		n -= take;
		quad += quads;
		skip = 0;
	}
	free(chunk);
	return err;
}

/* As the reference does it: truncate and write where the file is. */
static int
write_in_place(int dfd, const char *leaf, int nofollow, const struct wdata *d)
{
	int	fd, err;

	fd = openat(dfd, leaf, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_NOCTTY | O_CLOEXEC |
	    (nofollow ? O_NOFOLLOW : 0), 0666);
	if (fd == -1)
		return errno;
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == -1)
		err = errno;
	else
		err = wdata_write(fd, d, 0, d->len);
	if (close(fd) == -1 && err == 0)
		err = errno;
	return err;
}

/* A new file beside base in dfd: ".base.XXXXXX", or shorter if that is too long. */
static int
make_temp(int dfd, const char *base, char *tmp, size_t tmplen)
{
	static const char	 digits[] = "0123456789abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
	unsigned char		 rnd[6];
	char			 sfx[sizeof(rnd) + 1];
	size_t			 i;
	int			 fd, try;

	for (try = 0; try < 100; try++) {
		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			return -1;
		for (i = 0; i < sizeof(rnd); i++)
			sfx[i] = digits[rnd[i] % (sizeof(digits) - 1)];
		sfx[i] = '\0';
		snprintf(tmp, tmplen, ".%.200s.%s", base, sfx);
		fd = openat(dfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd == -1 && errno == ENAMETOOLONG) {
			snprintf(tmp, tmplen, ".execd.%s", sfx);
			fd = openat(dfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0600);
		}
		if (fd != -1 || errno != EEXIST)
			return fd;
	}
	return -1;
}

/* Take over the replaced file's owner and mode; a new file gets 0666 less the umask. */
static int
copy_attrs(int fd, const struct stat *old)
{
	if (old == NULL)
		return fchmod(fd, 0666 & ~fs_umask) == -1 ? errno : 0;
	if (geteuid() == 0 && (old->st_uid != geteuid() || old->st_gid != getegid()) &&
	    fchown(fd, old->st_uid, old->st_gid) == -1)
		log_warn("fs/writeFile: keeping the owner %u:%u", (unsigned)old->st_uid,
		    (unsigned)old->st_gid);
	return fchmod(fd, old->st_mode & 07777) == -1 ? errno : 0;
}

/* leaf opened for writing, not truncated: the kernel judges whether we may write it */
static int
open_for_write(int dfd, const char *leaf, int nofollow, int *fd)
{
	*fd = openat(dfd, leaf, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC |
	    (nofollow ? O_NOFOLLOW : 0));
	return *fd == -1 ? errno : 0;
}

/* The decoded bytes [off, off + n) of d at off in fd */
static int
write_at(int fd, const struct wdata *d, size_t off, size_t n)
{
	if (lseek(fd, (off_t)off, SEEK_SET) == -1)
		return errno;
	return wdata_write(fd, d, off, n);
}

/*
 * A file with other names (hard links) keeps its inode, so that every name
 * sees the new content, as with the reference, but written more safely
 * than the reference's truncate-then-write: the bytes past the old end go
 * first, so that a full disk fails (and the file is cut back) before a byte
 * of the old content changes; then the old extent, which needs no new space
 * on a filesystem that overwrites in place, is overwritten and synced.
 */
static int
write_linked(int fd, off_t old, const struct wdata *d)
{
	size_t	len = d->len, head = (size_t)old < len ? (size_t)old : len;
	int	err;

	if (len > head && (err = write_at(fd, d, head, len - head)) != 0) {
		if (ftruncate(fd, old) == -1)
			log_warn("fs/writeFile: cutting back to %lld bytes", (long long)old);
		return err;
	}
	if ((err = write_at(fd, d, 0, head)) != 0)
		return err;
	if (ftruncate(fd, (off_t)len) == -1 || fsync(fd) == -1)
		return errno;
	return 0;
}

/*
 * Write leaf in the directory dfd (shown: its path, for the log) through a
 * temporary file renamed over it.  nofollow (sandboxed): leaf was followed
 * to its end already; a symlink there now is a swap, refused.
 */
static int
write_atomic(int dfd, const char *leaf, const char *shown, int nofollow,
    const struct wdata *d)
{
	char		 tmp[NAME_MAX + 32];
	struct stat	 st;
	int		 exists, fd, sfd, err;

	exists = fstatat(dfd, leaf, &st, nofollow ? AT_SYMLINK_NOFOLLOW : 0) == 0;
	if (!exists && errno != ENOENT)
		return errno;
	if (exists && S_ISDIR(st.st_mode))
		return EISDIR;
	if (exists && S_ISLNK(st.st_mode))
		return EACCES;
	if (exists && !S_ISREG(st.st_mode))	/* a device, a FIFO */
		return write_in_place(dfd, leaf, nofollow, d);
	if (strcmp(leaf, ".") == 0 || strcmp(leaf, "..") == 0)
		return write_in_place(dfd, leaf, nofollow, d);
	/* a file the caller may not write (0444) is refused, as the reference's open is */
	if (exists && (err = open_for_write(dfd, leaf, nofollow, &fd)) != 0)
		return err;
	if (exists) {
		err = st.st_nlink > 1 ? write_linked(fd, st.st_size, d) : 0;
		if (close(fd) == -1 && err == 0)
			err = errno;
		if (err != 0 || st.st_nlink > 1)
			return err;
	}
	if ((fd = make_temp(dfd, leaf, tmp, sizeof(tmp))) == -1) {
		err = errno;
		/* a writable file in a directory we may not add to: the old way */
		if (exists && (err == EACCES || err == EPERM))
			return write_in_place(dfd, leaf, nofollow, d);
		return err;
	}
	if ((err = copy_attrs(fd, exists ? &st : NULL)) == 0 &&
	    (err = wdata_write(fd, d, 0, d->len)) == 0 && fsync(fd) == -1)
		err = errno;
	if (close(fd) == -1 && err == 0)
		err = errno;
	if (err == 0 && renameat(dfd, tmp, dfd, leaf) == -1)
		err = errno;
	if (err != 0) {
		if (unlinkat(dfd, tmp, 0) == -1)
			log_warn("fs/writeFile: removing %s/%s", shown, tmp);
		return err;
	}
	if ((sfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1) {
		if (fsync(sfd) == -1)
			log_debug("fs/writeFile: fsync %s: %s", shown, strerror(errno));
		close(sfd);
	}
	return 0;
}

/* Unsandboxed: the target's directory by name, as given. */
static int
write_path(const char *target, const struct wdata *d)
{
	char		 dir[PATH_MAX];
	const char	*slash = strrchr(target, '/'), *leaf;
	int		 dfd, err;

	if (slash == NULL)
		return EINVAL;
	leaf = slash[1] == '\0' ? "." : slash + 1;
	if (fs_pathf(dir, sizeof(dir), "%.*s", slash == target ? 1 : (int)(slash - target),
	    target) != 0)
		return ENAMETOOLONG;
	if ((dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1)
		return errno;
	err = write_atomic(dfd, leaf, dir, 0, d);
	close(dfd);
	return err;
}

/* Sandboxed: where the checked chain of links ends, pinned. */
static int
write_pinned(const struct fs_policy *pol, const char *path, const struct wdata *d)
{
	struct fs_pin	pin;
	int		err;

	if ((err = fs_pin_final(pol, path, FS_WANT_WRITE, &pin)) != 0)
		return err;
	err = write_atomic(pin.dfd, pin.leaf, pin.real, 1, d);
	fs_pin_close(&pin);
	return err;
}

void
fs_m_write_file(struct rpc_req *req, json_t *params)
{
	char			*path = NULL, target[PATH_MAX], berr[256];
	json_t			*b64 = NULL;
	struct fs_policy	*pol = NULL;
	struct fp_deferred	 d = { 0 };
	struct fp_field		 f[] = {
		{ "path", FP_PATH, FP_REQ, &path },
		{ "dataBase64", FP_JSTR, FP_REQ, &b64 },
		{ "sandbox", FP_DECODE, FP_SEQ_DEFAULT, &pol, &fs_sandbox_field },
		{ " options", FP_ANY, 0, NULL },
	};
	struct stat		 st;
	struct wdata		 data;
	ssize_t			 n;
	int			 err;

	if (fs_begin(req, params, "WireFsWriteFileParams", f, 4, &d, NULL) == -1)
		goto out;
	if ((data.b64 = rpc_req_string(req, b64, &data.b64len)) == NULL) {
		rpc_fail_errno(req, ENOMEM);
		goto out;
	}
	if ((n = b64_valid(data.b64, data.b64len, berr, sizeof(berr))) == -1) {
		rpc_fail(req, RPC_INVALID_REQUEST,
		    "fs/writeFile requires valid base64 dataBase64: %s", berr);
		goto out;
	}
	data.len = (size_t)n;
	if (fs_deferred(req, &d, pol))
		goto out;
	if ((err = final_target(path, target, sizeof(target))) != 0) {
		rpc_fail_errno(req, err);
		goto out;
	}
	if (pol != NULL) {
		/* as the kernel orders it: lookup, "is a directory", then "read-only" */
		err = 0;
		if (stat(target, &st) == 0 &&
		    (err = fs_allowed(pol, target, 1, FS_WANT_STAT)) == 0 && S_ISDIR(st.st_mode))
			err = EISDIR;
		if (err == 0)
			err = fs_allowed(pol, target, 1, FS_WANT_WRITE);
		if (err != 0) {
			rpc_fail_errno(req, err);
			goto out;
		}
	}
	if ((err = pol != NULL ? write_pinned(pol, path, &data) :
	    write_path(target, &data)) != 0) {
		log_debug("fs/writeFile %s: %s", target, strerror(err));
		rpc_fail_errno(req, err);
		goto out;
	}
	fs_reply_empty(req);
out:
	fp_release(f, 4);
}
