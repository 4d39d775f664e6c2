/* A directory tree walked with an explicit stack; see fs_tstack.h. */
#include "config.h"

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs_tstack.h"

#define TS_WINDOW	16	/* directory descriptors kept open below the root */

static int
path_reserve(struct tstack *ts, size_t need)
{
	char	*np;
	size_t	 ncap;

	if (need <= ts->pathcap)
		return 0;
	ncap = ts->pathcap ? ts->pathcap : 256;
	while (ncap < need)
		ncap *= 2;
	if ((np = realloc(ts->path, ncap)) == NULL)
		return ENOMEM;
	ts->path = np;
	ts->pathcap = ncap;
	return 0;
}

static int
frame_add(struct tstack *ts, int fd, size_t pathlen)
{
	struct ts_frame	*f;
	struct stat	 st;
	size_t		 ncap;

	if (fstat(fd, &st) == -1)
		return errno;
	if (ts->n == ts->cap) {
		ncap = ts->cap ? ts->cap * 2 : 16;
		if ((f = reallocarray(ts->f, ncap, sizeof(*f))) == NULL)
			return ENOMEM;
		ts->f = f;
		ts->cap = ncap;
	}
	f = &ts->f[ts->n++];
	memset(f, 0, sizeof(*f));
	f->fd = fd;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->pathlen = pathlen;
	ts->nopen++;
	return 0;
}

int
ts_init(struct tstack *ts, int fd, const char *path)
{
	size_t	len;
	int	err;

	if (strcmp(path, "/") == 0)
		path = "";	/* entries are "/name", not "//name" */
	len = strlen(path);
	memset(ts, 0, sizeof(*ts));
	if ((err = path_reserve(ts, len + 1)) != 0 || (err = frame_add(ts, fd, len)) != 0) {
		close(fd);
		ts_free(ts);
		return err;
	}
	memcpy(ts->path, path, len + 1);
	return 0;
}

static void
frame_clear(struct tstack *ts, struct ts_frame *f)
{
	size_t	i;

	if (f->fd != -1) {
		close(f->fd);
		f->fd = -1;
		ts->nopen--;
	}
	for (i = 0; i < f->nents; i++)
		free(f->ents[i].name);
	free(f->ents);
	f->ents = NULL;
	f->nents = f->next = 0;
}

void
ts_free(struct tstack *ts)
{
	while (ts->n > 0)
		frame_clear(ts, &ts->f[--ts->n]);
	free(ts->f);
	free(ts->path);
	memset(ts, 0, sizeof(*ts));
}

int
ts_fd(struct tstack *ts)
{
	return ts->f[ts->n - 1].fd;
}

int
ts_list(struct tstack *ts)
{
	struct ts_frame	*f = &ts->f[ts->n - 1];
	struct ts_entry	*e;
	struct dirent	*de;
	DIR		*dp;
	size_t		 cap = 0;
	int		 fd, err = 0;

	if (f->listed)
		return 0;
	f->listed = 1;
	if ((fd = dup(f->fd)) == -1)
		return errno;
	if ((dp = fdopendir(fd)) == NULL) {
		err = errno;
		close(fd);
		return err;
	}
	rewinddir(dp);
	while ((errno = 0, de = readdir(dp)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (f->nents == cap) {
			cap = cap ? cap * 2 : 16;
			if ((e = reallocarray(f->ents, cap, sizeof(*e))) == NULL) {
				err = ENOMEM;
				break;
			}
			f->ents = e;
		}
		e = &f->ents[f->nents];
		if ((e->name = strdup(de->d_name)) == NULL) {
			err = ENOMEM;
			break;
		}
		e->type = de->d_type;
		f->nents++;
	}
	if (err == 0 && errno != 0)
		err = errno;
	closedir(dp);
	return err;
}

struct ts_entry *
ts_next(struct tstack *ts, int *err)
{
	struct ts_frame	*f = &ts->f[ts->n - 1];
	struct ts_entry	*e;
	struct stat	 st;

	*err = 0;
	while (f->next < f->nents) {
		e = &f->ents[f->next++];
		if (e->type != DT_UNKNOWN)
			return e;
		if (fstatat(f->fd, e->name, &st, AT_SYMLINK_NOFOLLOW) == -1) {
			if (errno == ENOENT)
				continue;	/* gone meanwhile */
			*err = errno;
			return NULL;
		}
		e->type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG :
		    S_ISLNK(st.st_mode) ? DT_LNK : DT_FIFO;
		return e;
	}
	return NULL;
}

/* Keep the open descriptors bounded: close the shallowest one but the root and the top. */
static void
trim_window(struct tstack *ts)
{
	size_t	i;

	if (ts->lowopen < 1)
		ts->lowopen = 1;
	for (i = ts->lowopen; ts->nopen > TS_WINDOW + 1 && i + 1 < ts->n; i++) {
		if (ts->f[i].fd != -1) {
			close(ts->f[i].fd);
			ts->f[i].fd = -1;
			ts->nopen--;
		}
		ts->lowopen = i + 1;
	}
}

int
ts_push(struct tstack *ts, const char *name)
{
	size_t	len = ts->f[ts->n - 1].pathlen, nlen = strlen(name);
	int	fd, err;

	fd = openat(ts_fd(ts), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return errno;
	if ((err = path_reserve(ts, len + nlen + 2)) != 0 ||
	    (err = frame_add(ts, fd, len + 1 + nlen)) != 0) {
		close(fd);
		return err;
	}
	ts->path[len] = '/';
	memcpy(ts->path + len + 1, name, nlen + 1);
	trim_window(ts);
	return 0;
}

int
ts_pop(struct tstack *ts)
{
	struct ts_frame	*top = &ts->f[ts->n - 1], *parent;
	struct stat	 st;
	int		 fd;

	if (ts->n >= 2 && (parent = &ts->f[ts->n - 2])->fd == -1) {
		/* back up through "..", which must still be the directory we came from */
		fd = openat(top->fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd == -1)
			return errno;
		if (fstat(fd, &st) == -1 || st.st_dev != parent->dev || st.st_ino != parent->ino) {
			close(fd);
			return ESTALE;
		}
		parent->fd = fd;
		ts->nopen++;
		if (ts->n - 2 < ts->lowopen)
			ts->lowopen = ts->n - 2;
	}
	frame_clear(ts, top);
	ts->n--;
	if (ts->n > 0)
		ts->path[ts->f[ts->n - 1].pathlen] = '\0';
	return 0;
}

const char *
ts_path_of(struct tstack *ts, const char *name)
{
	size_t	len = ts->f[ts->n - 1].pathlen, nlen = strlen(name);

	if (path_reserve(ts, len + nlen + 2) != 0)
		return NULL;
	ts->path[len] = '/';
	memcpy(ts->path + len + 1, name, nlen + 1);
	return ts->path;
}
