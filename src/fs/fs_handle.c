/*
 * fs/open, fs/readBlock, fs/writeBlock, fs/close: file handles of one
 * connection, named by the client, closed when the connection goes.
 * "read" handles read a regular file at any offset; "replace" handles
 * truncate (or create) the file at open and write at any offset, visible at
 * once, as the reference's.  A failed read closes its handle, a failed
 * write does not (as the reference).
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "b64.h"
#include "log.h"
#include "fs/fs.h"
#include "fs/fs_int.h"
#include "rpc/rpc_serde.h"

#define HANDLES_MAX	128
#define HANDLE_ID_MAX	32

struct handle {
	char	 id[HANDLE_ID_MAX + 1];
	size_t	 idlen;
	int	 fd;		/* -1: free slot */
};

static struct handle	handles[HANDLES_MAX];
static int		handles_ready;

static void
handles_init(void)
{
	size_t	i;

	if (handles_ready)
		return;
	fs_init();	/* registers the per-connection cleanup */
	for (i = 0; i < HANDLES_MAX; i++)
		handles[i].fd = -1;
	handles_ready = 1;
}

void
fs_handles_close_all(void)
{
	size_t	i;

	if (!handles_ready)
		return;
	for (i = 0; i < HANDLES_MAX; i++)
		if (handles[i].fd != -1) {
			close(handles[i].fd);
			handles[i].fd = -1;
		}
}

static struct handle *
handle_find(const char *id, size_t len)
{
	size_t	i;

	for (i = 0; i < HANDLES_MAX; i++)
		if (handles[i].fd != -1 && handles[i].idlen == len &&
		    memcmp(handles[i].id, id, len) == 0)
			return &handles[i];
	return NULL;
}

static void
handle_close(struct handle *h)
{
	close(h->fd);
	h->fd = -1;
}

/* The ID check every handle request starts with; 1 if it answered. */
static int
bad_id(struct rpc_req *req, const char *id)
{
	if (strlen(id) <= HANDLE_ID_MAX)
		return 0;
	rpc_fail(req, RPC_INVALID_REQUEST, "file handle ID must not exceed %d bytes",
	    HANDLE_ID_MAX);
	return 1;
}

static void
fail_unknown(struct rpc_req *req, const char *id)
{
	char	*shown = fs_lossy(id);

	rpc_fail(req, RPC_NOT_FOUND, "unknown file handle `%s`", shown ? shown : id);
	free(shown);
}

/* Sandboxed: the file opened through its pinned, checked path.  0 or an errno. */
static int
open_pinned(const struct fs_policy *pol, const char *path, int replace, int *fdp)
{
	struct fs_pin	pin;
	char		real[PATH_MAX];
	int		err = 0;

	if (!replace)
		return fs_pin_open(pol, path, FS_WANT_READ, O_RDONLY | O_NONBLOCK | O_NOCTTY,
		    fdp, real, sizeof(real));
	if ((err = fs_pin_final(pol, path, FS_WANT_WRITE, &pin)) != 0)
		return err;
	if ((*fdp = openat(pin.dfd, pin.leaf, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK |
	    O_NOCTTY | O_CLOEXEC | O_NOFOLLOW, 0666)) == -1)
		err = errno == ELOOP ? EACCES : errno;
	fs_pin_close(&pin);
	return err;
}

/* An open descriptor for the request, or -1 having answered. */
static int
open_file(struct rpc_req *req, const char *path, int replace, const struct fs_policy *pol)
{
	struct stat	st;
	int		fd, err;

	if (!replace)
		err = fs_allowed(pol, path, 1, FS_WANT_READ);
	else if ((err = stat(path, &st) == 0 ? fs_allowed(pol, path, 1, FS_WANT_STAT) : 0) == 0)
		err = fs_allowed(pol, path, 1, FS_WANT_WRITE);
	if (err != 0) {
		rpc_fail_errno(req, err);
		return -1;
	}
	if (!replace) {
		if (stat(path, &st) == -1) {
			rpc_fail_errno(req, fs_pin_enoent(pol, path, errno));
			return -1;
		}
		if (!S_ISREG(st.st_mode)) {
			fs_fail_not_a_file(req, path);
			return -1;
		}
	}
	/* O_NONBLOCK: a FIFO must not hang the loop; dropped once open */
	if (pol != NULL && (err = open_pinned(pol, path, replace, &fd)) != 0) {
		rpc_fail_errno(req, err);
		return -1;
	}
	if (pol == NULL)
		fd = replace ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_NOCTTY |
		    O_CLOEXEC, 0666) : open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd == -1 || fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == -1) {
		err = errno;
		if (fd != -1)
			close(fd);
		rpc_fail_errno(req, err);
		return -1;
	}
	if (!replace && (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode))) {
		close(fd);
		fs_fail_not_a_file(req, path);
		return -1;
	}
	return fd;
}

void
fs_m_open(struct rpc_req *req, json_t *params)
{
	const char		*id = NULL;
	char			*path = NULL;
	struct fs_policy	*pol = NULL;
	struct fp_deferred	 d = { 0 };
	int			 mode = 0, fd;
	struct fp_field		 f[] = {
		{ "handleId", FP_STR, FP_REQ, &id },
		{ "path", FP_PATH, FP_REQ, &path },
		{ "mode", FP_MODE, FP_PLAIN | FP_SEQ_DEFAULT, &mode },
		{ "sandbox", FP_DECODE, FP_OPT, &pol, &fs_sandbox_field },
	};
	struct handle		*h = NULL;
	size_t			 i;

	handles_init();
	if (fs_begin(req, params, "WireFsOpenParams", f, 4, &d, NULL) == -1)
		goto out;
	if (bad_id(req, id))
		goto out;
	if (handle_find(id, strlen(id)) != NULL) {
		rpc_fail(req, RPC_INVALID_REQUEST, "file handle `%s` already exists", id);
		goto out;
	}
	for (i = 0; i < HANDLES_MAX && h == NULL; i++)
		if (handles[i].fd == -1)
			h = &handles[i];
	if (h == NULL) {
		rpc_fail(req, RPC_INVALID_REQUEST,
		    "at most %d file handles may be open per connection", HANDLES_MAX);
		goto out;
	}
	if (fs_deferred(req, &d, pol) || (fd = open_file(req, path, mode == 1, pol)) == -1)
		goto out;
	h->fd = fd;
	h->idlen = strlen(id);
	memcpy(h->id, id, h->idlen + 1);
	rpc_reply(req, json_pack("{s:o}", "handleId", jx_id_json(id)));
out:
	fp_release(f, 4);
}

/* Up to len bytes from offset; *eof when fewer came.  0 or an errno. */
static int
read_at(int fd, uint64_t offset, unsigned char *buf, size_t len, size_t *got, int *eof)
{
	ssize_t	n;

	*got = 0;
	if (offset > INT64_MAX)
		return EINVAL;
	while (*got < len) {
		n = pread(fd, buf + *got, len - *got, (off_t)(offset + *got));
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return errno;
		if (n == 0)
			break;
		*got += (size_t)n;
	}
	*eof = *got < len;
	return 0;
}

void
fs_m_read_block(struct rpc_req *req, json_t *params)
{
	const char	*id = NULL;
	uint64_t	 offset = 0, len = 0;
	struct fp_field	 f[] = {
		{ "handleId", FP_STR, FP_REQ, &id },
		{ "offset", FP_U64, FP_REQ, &offset },
		{ "len", FP_USIZE, FP_REQ, &len },
	};
	struct fp_deferred d = { 0 };
	struct handle	*h;
	unsigned char	*buf = NULL;
	char		*b64 = NULL;
	size_t		 got;
	int		 eof = 0, err;

	handles_init();
	if (fs_begin(req, params, "FsReadBlockParams", f, 3, &d, NULL) == -1)
		return;
	if (bad_id(req, id))
		return;
	if (len < 1 || len > FS_BLOCK_MAX) {
		rpc_fail(req, RPC_INVALID_REQUEST,
		    "file read block length must be between 1 and %d", FS_BLOCK_MAX);
		return;
	}
	if ((h = handle_find(id, strlen(id))) == NULL) {
		fail_unknown(req, id);
		return;
	}
	if ((buf = malloc(len)) == NULL) {
		rpc_fail(req, RPC_INTERNAL_ERROR, "out of memory");
		return;
	}
	if ((err = read_at(h->fd, offset, buf, len, &got, &eof)) != 0) {
		handle_close(h);
		rpc_fail_errno(req, err);
	} else if ((b64 = b64_encode(buf, got, NULL)) == NULL)
		rpc_fail(req, RPC_INTERNAL_ERROR, "out of memory");
	else
		rpc_reply(req, json_pack("{s:s,s:b}", "chunk", b64, "eof", eof));
	free(b64);
	free(buf);
}

static int
write_at(int fd, uint64_t offset, const unsigned char *p, size_t len)
{
	ssize_t	n;

	while (len > 0) {
		n = pwrite(fd, p, len, (off_t)offset);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return errno;
		p += n;
		len -= (size_t)n;
		offset += (uint64_t)n;
	}
	return 0;
}

/* chunk is a ByteChunk: base64 decoded with the params, where it stands among them */
static int
chunk_decode(json_t *v, void *out, struct jx_err *e, int *code)
{
	*code = RPC_INVALID_PARAMS;
	if (!json_is_string(v))
		return serde_type_error(e, v, "a string", 0);
	if (b64_valid(json_string_value(v), json_string_length(v), e->msg,
	    sizeof(e->msg)) == -1)
		return -1;
	*(json_t **)out = v;
	return 0;
}

static void
chunk_release(void *out)
{
	*(json_t **)out = NULL;
}

static const struct fp_decoder chunk_field = { chunk_decode, chunk_release };

void
fs_m_write_block(struct rpc_req *req, json_t *params)
{
	const char	*id = NULL;
	json_t		*chunk = NULL;
	uint64_t	 offset = 0;
	struct fp_field	 f[] = {
		{ "handleId", FP_STR, FP_REQ, &id },
		{ "offset", FP_U64, FP_REQ, &offset },
		{ "chunk", FP_DECODE, FP_REQ, &chunk, &chunk_field },
	};
	struct fp_deferred d = { 0 };
	struct jx_err	 e;
	struct handle	*h;
	unsigned char	*data;
	size_t		 len;
	int		 err;

	handles_init();
	if (fp_parse(params, "FsWriteBlockParams", f, 3, &d, &e) == -1) {
		rpc_fail_params(req, &e);
		return;
	}
	/* the chunk is decoded with the params: a bad one is -32602 */
	if ((data = b64_decode(json_string_value(chunk), json_string_length(chunk), &len,
	    e.msg, sizeof(e.msg))) == NULL) {
		rpc_fail_params(req, &e);
		return;
	}
	if (!rpc_admit(req))
		goto out;
	if (bad_id(req, id))
		goto out;
	if (len < 1 || len > FS_BLOCK_MAX) {
		rpc_fail(req, RPC_INVALID_REQUEST,
		    "file write block length must be between 1 and %d", FS_BLOCK_MAX);
		goto out;
	}
	if (offset > INT64_MAX || len > INT64_MAX - offset) {
		rpc_fail(req, RPC_INVALID_REQUEST,
		    "file write range exceeds the signed 64-bit file offset limit");
		goto out;
	}
	if ((h = handle_find(id, strlen(id))) == NULL) {
		fail_unknown(req, id);
		goto out;
	}
	if ((err = write_at(h->fd, offset, data, len)) != 0)
		rpc_fail_errno(req, err);
	else
		fs_reply_empty(req);
out:
	free(data);
}

void
fs_m_close(struct rpc_req *req, json_t *params)
{
	const char	*id = NULL;
	struct fp_field	 f[] = {
		{ "handleId", FP_STR, FP_REQ, &id },
	};
	struct fp_deferred d = { 0 };
	struct handle	*h;

	handles_init();
	if (fs_begin(req, params, "FsCloseParams", f, 1, &d, NULL) == -1)
		return;
	if (bad_id(req, id))
		return;
	if ((h = handle_find(id, strlen(id))) != NULL)
		handle_close(h);
	fs_reply_empty(req);
}
