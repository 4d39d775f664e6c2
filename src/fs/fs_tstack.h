/*
 * A depth-first walk of a directory tree without recursion and without
 * following symlinks: an explicit stack of directories, each opened
 * relative to its parent with O_NOFOLLOW, its entries read in one go.
 * Only a window of the deepest directories keeps a descriptor; going back
 * up reopens a parent through ".." and checks it is the same directory, so
 * any depth works with a bounded number of descriptors.
 */
#ifndef EXECD_FS_TSTACK_H
#define EXECD_FS_TSTACK_H

#include <sys/types.h>

#include <stddef.h>

struct ts_entry {
	char		*name;
	unsigned char	 type;		/* DT_*, DT_UNKNOWN until asked */
};

struct ts_frame {
	size_t		 pathlen;	/* this directory's end in ts->path */
	int		 fd;		/* -1 while out of the window */
	dev_t		 dev;
	ino_t		 ino;
	struct ts_entry	*ents;
	size_t		 nents, next;
	int		 listed;
};

struct tstack {
	struct ts_frame	*f;
	size_t		 n, cap, nopen;
	size_t		 lowopen;	/* no frame in 1..lowopen-1 holds a descriptor */
	char		*path;		/* the top's path: root, then "/name"... */
	size_t		 pathcap;
};

/* Start at an open directory (the stack owns fd); path names it. 0 or an errno. */
int	ts_init(struct tstack *ts, int fd, const char *path);
void	ts_free(struct tstack *ts);
/* The top's descriptor. */
int	ts_fd(struct tstack *ts);
/* Read the top's entries (once). 0 or an errno. */
int	ts_list(struct tstack *ts);
/* The top's next entry, its type filled in (lstat semantics); NULL at the end. */
struct ts_entry *ts_next(struct tstack *ts, int *err);
/* Enter the subdirectory name of the top. 0 or an errno (ELOOP/ENOTDIR: not a directory now). */
int	ts_push(struct tstack *ts, const char *name);
/* Leave the top; the new top's descriptor is usable. 0 or an errno. */
int	ts_pop(struct tstack *ts);
/* The path of the top's entry name (valid until the next call); NULL when out of memory. */
const char *ts_path_of(struct tstack *ts, const char *name);

#endif
