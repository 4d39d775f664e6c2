/* What the fs method files share. */
#ifndef EXECD_FS_INT_H
#define EXECD_FS_INT_H

#include <sys/stat.h>

#include <limits.h>
#include <stddef.h>

#include <jansson.h>

#include "fs/fs_access.h"
#include "fs/fs_param.h"
#include "policy/fs_policy.h"
#include "rpc/rpc.h"

#define FS_READ_MAX	(512u * 1024 * 1024)	/* fs/readFile, as the reference */
#define FS_BLOCK_MAX	(1024 * 1024)		/* fs/readBlock, fs/writeBlock */
#define FS_GROUP	"filesystem"

/* umask of execd, read once: what new files and directories get. */
extern mode_t	fs_umask;

/*
 * How every fs method starts, in the reference's order: params decoded
 * (-32602 with serde's wording), lifecycle gating, then with pol the
 * failures fs_deferred reports.  0: go on; -1: req has been answered.
 */
int	fs_begin(struct rpc_req *req, json_t *params, const char *sname,
	    const struct fp_field *f, size_t nf, struct fp_deferred *d,
	    struct fs_policy *const *pol);

/*
 * The path with symlinks resolved as far as it exists (the rest appended
 * as is); follow_last 0 leaves a final symlink itself.  Into out (PATH_MAX);
 * 0 or ENAMETOOLONG.
 */
int	fs_resolve(const char *path, int follow_last, char *out, size_t outlen);

/*
 * Sandboxed requests act on pinned paths (fs_pin.c): a directory resolved
 * beneath the policy's roots, never through a magic link, the policy
 * checked on the path of the descriptor, and one name in it used only with
 * *at() calls that do not follow it.  0 or the errno to answer with.
 */
struct fs_pin {
	int	dfd;			/* the directory, O_PATH; -1 when closed */
	char	leaf[NAME_MAX + 1];	/* "." when the path is "/" */
	char	real[PATH_MAX];		/* the directory's real path + "/" + leaf */
};
#define FS_PIN_NOCHECK	(-1)	/* as want: pin only, the caller checks */

/* Pin path's directory; check want (or FS_PIN_NOCHECK) on p->real. */
int	fs_pin_parent(const struct fs_policy *pol, const char *path, int want,
	    struct fs_pin *p);
/* Follow path's symlinks to their end (as writing does), and pin that. */
int	fs_pin_final(const struct fs_policy *pol, const char *path, int want,
	    struct fs_pin *p);
/* Check want on p->real; closes p if refused. */
int	fs_pin_parent_check(const struct fs_policy *pol, struct fs_pin *p, int want);
void	fs_pin_close(struct fs_pin *p);
/* stat and lstat of path, both pinned and checked for FS_WANT_STAT. */
int	fs_pin_stat(const struct fs_policy *pol, const char *path, struct stat *st,
	    struct stat *lst);
/*
 * err, except that a path missing (ENOENT) inside a place pol denies,
 * symlinks followed by name, is EACCES there as it is when it exists.
 */
int	fs_pin_enoent(const struct fs_policy *pol, const char *path, int err);
/* The path the kernel has for fd (absolute, or EACCES). */
int	fs_fd_path(int fd, char *out, size_t outlen);

/* mkdir -p as Rust's create_dir_all; path is modified and restored. -1 with errno. */
int	fs_mkdir_all(char *path);

/* mkdir (-p) with each directory made in its pinned, checked parent. 0 or an errno. */
int	fs_mkdir_pinned(const struct fs_policy *pol, const char *path, int recursive);

/* A directory's entries as fs/readDirectory shows them: stat-able, visible under pol. */
struct fs_dirent {
	char	*name;
	int	 is_dir, is_file;	/* through symlinks */
	int	 is_link;		/* or of unknown type: ask lstat */
};
int	fs_list_dir(const char *path, const struct fs_policy *pol, struct fs_dirent **out,
	    size_t *n);
void	fs_dirents_free(struct fs_dirent *d, size_t n);

/* ``path `/x` is not a file`` */
void	fs_fail_not_a_file(struct rpc_req *req, const char *path);
/* A UTF-8 copy with invalid sequences replaced by U+FFFD, as Rust's to_string_lossy. */
char	*fs_lossy(const char *s);
int	 fs_utf8_valid(const char *s);
/* {} */
void	fs_reply_empty(struct rpc_req *req);

/* The methods, by file. */
void	fs_m_read_file(struct rpc_req *, json_t *);	/* fs_file.c */
void	fs_m_write_file(struct rpc_req *, json_t *);
void	fs_m_remove(struct rpc_req *, json_t *);	/* fs_tree.c */
void	fs_m_copy(struct rpc_req *, json_t *);
void	fs_m_walk(struct rpc_req *, json_t *);		/* fs_walk.c */
void	fs_m_open(struct rpc_req *, json_t *);		/* fs_handle.c */
void	fs_m_read_block(struct rpc_req *, json_t *);
void	fs_m_write_block(struct rpc_req *, json_t *);
void	fs_m_close(struct rpc_req *, json_t *);
void	fs_handles_close_all(void);

#endif
