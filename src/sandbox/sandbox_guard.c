/*
 * A writable root's missing .git, .codex, .agents and .aws: the command
 * must not create them.  Neither Landlock (its grants only add up) nor a
 * mount can forbid a name that does not exist, so, as the reference does,
 * execd creates an empty mode 555 directory there on the host (a
 * placeholder), and the child's mount namespace binds it read-only on
 * itself: it cannot be written into, removed or renamed over from inside.
 * Planning takes the lock and decides; the mkdir itself waits until the
 * child exists (sandbox_spawned), which meanwhile builds its namespaces
 * and binds no protected name before execd says the placeholders are
 * there.
 *
 * The placeholder lives while a command that needs it lives: until its
 * process/closed, which comes only once every process of the sandbox is
 * gone (they all die with its pid namespace).  Commands of several
 * instances may share one, so each path has a lock file in the state
 * directory, placeholders/<hash>, holding the identity of the placeholder
 * made there.  Each instance using the path holds a shared flock on it
 * (one descriptor per path, counted in memory for its processes, and kept
 * open, unlocked, between its starts: lock_release); the last
 * user to release it gets the lock exclusively and removes the
 * placeholder if it is still the empty directory that was made (its name
 * at once, its inode at the spawn helper's close: remove_placeholder).  An
 * instance that dies drops its locks with its descriptors; what it left
 * goes at the next use of the path.  Taking the lock shared before
 * looking at the placeholder means a remover never pulls one out from
 * under a process that has just joined it.  A lock file stays while its
 * path is in use (its record rewritten in place: no file is created or
 * freed on a start of a path in use); each instance, at its first
 * placeholder, sweeps away the ones nobody holds.
 *
 * A missing .git is protected below a parent repository too, as the
 * reference does: otherwise `git init` there, and a core.fsmonitor set in
 * the new repository, would run code later, outside the sandbox (git
 * passes over an empty .git directory and still finds the parent).  The
 * lock files live in the state directory, which sandboxed commands never
 * see (sandbox_hide).
 */
#include "config.h"

#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fnv.h"
#include "log.h"
#include "sandbox/sandbox_int.h"

/* One per placeholder path this instance uses, with its shared lock. */
struct guard_lock {
	char			*path;
	int			 fd;
	unsigned		 refs;
	struct guard_lock	*next;
};

struct sbx_guard {
	struct guard_lock	*lock;
	int			 pending;	/* to be made by sandbox_spawned */
	struct sbx_guard	*next;
};

static struct guard_lock	*locks;
/* the last close of a removed placeholder (NULL: close here) */
static void			(*close_later)(const int *, size_t);
/* removed placeholders' descriptors, handed over together at the end of a release */
#define CLOSE_BATCH	8
static int			 to_close[CLOSE_BATCH];
static size_t			 nto_close;

/* sandbox_set_state_dir(): dir/placeholders/ holds the lock files */
static const char		*state_dir;

void
sandbox_set_closer(void (*closer)(const int *fds, size_t n))
{
	close_later = closer;
}

void
sandbox_set_state_dir(const char *dir)
{
	state_dir = dir;
}

static void
close_batch(void)
{
	if (nto_close > 0)
		close_later(to_close, nto_close);
	nto_close = 0;
}

/*
 * The directory holding path's last name, opened with no symlink followed
 * on the way: every placeholder is made, looked at and removed relative
 * to it, so that a directory of a writable root swapped for a link since
 * planning never takes execd's mkdir or rmdir (it is root) out of the
 * root.  *name: the last name, in path.  -1 with errno.
 */
static int
parent_open(const char *path, const char **name)
{
	char		 dir[PATH_MAX];
	const char	*slash = strrchr(path, '/');

	if (slash == NULL || path[0] != '/' || slash[1] == '\0' ||
	    (size_t)(slash - path) >= sizeof(dir)) {
		errno = EINVAL;
		return -1;
	}
	if (slash == path)
		strcpy(dir, "/");
	else {
		memcpy(dir, path, (size_t)(slash - path));
		dir[slash - path] = '\0';
	}
	*name = slash + 1;
	return sbx_open_real(dir, O_PATH | O_DIRECTORY);
}

/* lstat(2) of path, reached as parent_open does. */
static int
real_lstat(const char *path, struct stat *st)
{
	const char	*name;
	int		 dfd, r;

	if ((dfd = parent_open(path, &name)) == -1)
		return -1;
	r = fstatat(dfd, name, st, AT_SYMLINK_NOFOLLOW);
	close(dfd);
	return r;
}

/*
 * rmdir with the directory still open: its name goes now, and its block
 * (freed with a synchronous discard on some file systems: a fraction of
 * a millisecond, more on a busy disk) when the last descriptor closes,
 * elsewhere and later.
 */
static int
remove_placeholder(const char *path)
{
	const char	*name;
	int		 dfd, fd, r;

	if ((dfd = parent_open(path, &name)) == -1)
		return -1;
	fd = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	r = unlinkat(dfd, name, AT_REMOVEDIR);
	close(dfd);
	if (fd != -1) {
		if (r == 0 && close_later != NULL) {
			if (nto_close == CLOSE_BATCH)
				close_batch();
			to_close[nto_close++] = fd;
		} else
			close(fd);
	}
	return r;
}

/*
 * Record what was made at path (st; NULL: nothing any more), so that only
 * that is ever removed.  Always the whole record, padded: the file keeps
 * its one block instead of freeing and allocating one each time.
 */
#define ID_LEN	(PATH_MAX + 64)

static int
write_id(int fd, const char *path, const struct stat *st)
{
	char	id[ID_LEN];
	int	n = 0;

	if (st != NULL && (n = snprintf(id, sizeof(id), "%llu %llu %s\n",
	    (unsigned long long)st->st_dev, (unsigned long long)st->st_ino, path)) >=
	    (int)sizeof(id))
		return -1;
	memset(id + n, ' ', sizeof(id) - (size_t)n);
	return pwrite(fd, id, sizeof(id), 0) == (ssize_t)sizeof(id) ? 0 : -1;
}

/* The path a lock file records a placeholder at (out, PATH_MAX), and its identity. */
static int
read_id(int fd, char *out, unsigned long long *dev, unsigned long long *ino)
{
	char		id[ID_LEN + 1];
	ssize_t		n;
	int		off;

	if ((n = pread(fd, id, sizeof(id) - 1, 0)) <= 0)
		return -1;
	id[n] = '\0';
	id[strcspn(id, "\n")] = '\0';	/* the padding goes with the newline */
	if (sscanf(id, "%llu %llu %n", dev, ino, &off) != 2 || id[off] != '/' ||
	    strlen(id + off) >= PATH_MAX)
		return -1;
	strcpy(out, id + off);
	return 0;
}

/* Is the directory at path the placeholder this lock file records? */
static int
is_placeholder(int fd, const char *path)
{
	char			rec[PATH_MAX];
	unsigned long long	dev, ino;
	struct stat		st;

	return read_id(fd, rec, &dev, &ino) == 0 && strcmp(rec, path) == 0 &&
	    real_lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev == dev &&
	    st.st_ino == ino;
}

/*
 * Once per instance: the lock files nobody holds go, with a placeholder an
 * instance that died left behind.  An instance waiting on one of them
 * sees it unlinked once it has the lock, and takes a new one (lock_open).
 */
static void
sweep(const char *dir)
{
	char		file[PATH_MAX + 256], rec[PATH_MAX];
	unsigned long long dev, ino;
	struct dirent	*de;
	DIR		*d;
	int		 fd;

	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || snprintf(file, sizeof(file), "%s/%s", dir,
		    de->d_name) >= (int)sizeof(file) ||
		    (fd = open(file, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) == -1)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			if (read_id(fd, rec, &dev, &ino) == 0 && is_placeholder(fd, rec))
				(void)remove_placeholder(rec);
			(void)unlink(file);
		}
		close(fd);
	}
	closedir(d);
}

/* The lock file of path, locked shared; -1 with errno. */
static int
lock_open(const char *path)
{
	static int	swept;
	struct stat	st, fst;
	char		file[PATH_MAX];
	int		fd, tries;

	if (state_dir == NULL) {
		errno = ENOENT;
		return -1;
	}
	if (snprintf(file, sizeof(file), "%s/placeholders/%016llx", state_dir,
	    (unsigned long long)fnv1a64(path)) >= (int)sizeof(file)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (!swept) {
		swept = 1;
		*strrchr(file, '/') = '\0';
		sweep(file);
		file[strlen(file)] = '/';
	}
	for (tries = 0; tries < 8; tries++) {
		if ((fd = open(file, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)) == -1 &&
		    errno == ENOENT) {
			/* the first placeholder ever: its directories */
			(void)mkdir(state_dir, 0700);
			*strrchr(file, '/') = '\0';
			(void)mkdir(file, 0700);
			file[strlen(file)] = '/';
			fd = open(file, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		}
		if (fd == -1)
			return -1;
		while (flock(fd, LOCK_SH) == -1)
			if (errno != EINTR) {
				close(fd);
				return -1;
			}
		/* still the file at that name (a sweep may have unlinked it meanwhile)? */
		if (fstat(fd, &fst) == 0 && stat(file, &st) == 0 && st.st_dev == fst.st_dev &&
		    st.st_ino == fst.st_ino)
			return fd;
		close(fd);
	}
	errno = EAGAIN;
	return -1;
}

/* A path this instance no longer keeps: off the list, its descriptor closed. */
static void
lock_forget(struct guard_lock *l)
{
	struct guard_lock	**pp;

	for (pp = &locks; *pp != l; pp = &(*pp)->next)
		;
	*pp = l->next;
	if (l->fd != -1)
		close(l->fd);
	free(l->path);
	free(l);
}

/*
 * A lock file this instance used before and kept open (unlocked) locked
 * shared again: 0, or -1 when it is no longer the file at its name (a
 * sweep took it while nobody held it), which is then closed.
 */
static int
lock_rejoin(struct guard_lock *l)
{
	struct stat	st, fst;
	char		file[PATH_MAX];

	while (flock(l->fd, LOCK_SH) == -1)
		if (errno != EINTR)
			goto stale;
	if (snprintf(file, sizeof(file), "%s/placeholders/%016llx", state_dir,
	    (unsigned long long)fnv1a64(l->path)) < (int)sizeof(file) &&
	    fstat(l->fd, &fst) == 0 && stat(file, &st) == 0 && st.st_dev == fst.st_dev &&
	    st.st_ino == fst.st_ino)
		return 0;
stale:
	close(l->fd);
	l->fd = -1;
	return -1;
}

/* This instance's hold on the lock of the placeholder at path (not yet the placeholder). */
static struct guard_lock *
lock_take(const char *path, char *why, size_t whylen)
{
	struct guard_lock	*l;

	for (l = locks; l != NULL; l = l->next)
		if (strcmp(l->path, path) == 0)
			break;
	/* kept from an earlier start: its descriptor, locked again */
	if (l != NULL && l->refs == 0 && lock_rejoin(l) == -1 &&
	    (l->fd = lock_open(path)) == -1) {
		snprintf(why, whylen, "placeholder lock for %s in %s: %s", path,
		    state_dir ? state_dir : "(none)", strerror(errno));
		lock_forget(l);
		return NULL;
	}
	if (l == NULL) {
		if ((l = calloc(1, sizeof(*l))) == NULL || (l->path = strdup(path)) == NULL) {
			free(l);
			snprintf(why, whylen, "out of memory");
			return NULL;
		}
		if ((l->fd = lock_open(path)) == -1) {
			snprintf(why, whylen, "placeholder lock for %s in %s: %s", path,
			    state_dir ? state_dir : "(none)", strerror(errno));
			free(l->path);
			free(l);
			return NULL;
		}
		l->next = locks;
		locks = l;
	}
	l->refs++;
	return l;
}

/*
 * The placeholder at l's path, made (or made again if it went since: only
 * the last user removes it, under our lock) or joined: 0 or an errno.
 */
static int
placeholder_make(struct guard_lock *l)
{
	struct stat	 st;
	const char	*name;
	int		 dfd, fd = -1, made, e = 0;

	if ((dfd = parent_open(l->path, &name)) == -1)
		return errno;
	if ((made = mkdirat(dfd, name, 0555) == 0) == 0 && errno != EEXIST)
		e = errno;
	else if ((fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) ==
	    -1 || fstat(fd, &st) == -1)
		e = errno == ELOOP ? ENOTDIR : errno;
	/* exactly 0555 whatever the umask: that is how a placeholder is known */
	else if (made && (((st.st_mode & 07777) != 0555 && fchmod(fd, 0555) == -1) ||
	    write_id(l->fd, l->path, &st) == -1)) {
		e = errno ? errno : EIO;
		(void)unlinkat(dfd, name, AT_REMOVEDIR);
	}
	if (fd != -1)
		close(fd);
	close(dfd);
	return e;
}

/*
 * Done with a path: its lock file stays open, unlocked, for the next
 * start that needs it (an open and a close less each time), up to
 * KEEP_IDLE paths; an idle one holds no lock, so other instances remove
 * and sweep as if it were closed.
 */
#define KEEP_IDLE	16

static void
lock_release(struct guard_lock *l)
{
	struct guard_lock	*o;
	unsigned		 idle = 0;

	if (--l->refs > 0)
		return;
	/* the last user anywhere: nobody else holds it shared */
	if (flock(l->fd, LOCK_EX | LOCK_NB) == 0 && is_placeholder(l->fd, l->path)) {
		if (remove_placeholder(l->path) == -1 && errno != ENOTEMPTY && errno != EEXIST &&
		    errno != ENOENT)
			log_warn("sandbox: removing the placeholder %s", l->path);
		(void)write_id(l->fd, l->path, NULL);
	}
	(void)flock(l->fd, LOCK_UN);
	for (o = locks; o != NULL; o = o->next)
		idle += o->refs == 0;
	if (idle > KEEP_IDLE)
		lock_forget(l);
}

/* Does the directory at path hold anything?  (A placeholder never does.) */
static int
has_entries(const char *path)
{
	struct dirent	*de;
	DIR		*d;
	int		 fd, any = 0;

	if ((fd = sbx_open_real(path, O_RDONLY | O_DIRECTORY)) == -1)
		return 0;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return 0;
	}
	while (!any && (de = readdir(d)) != NULL)
		any = strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	return any;
}

int
sbx_guard_protected(struct sandbox_plan *plan, const char *path, char *why, size_t whylen)
{
	struct sbx_guard	*g;
	struct stat		 st;
	int			 exists;

	/*
	 * A real directory needs no placeholder, nor the lock file: one with
	 * entries, or an empty one of another mode than a placeholder's.
	 */
	if ((exists = real_lstat(path, &st) == 0) && (!S_ISDIR(st.st_mode) ||
	    (st.st_mode & 07777) != 0555 || has_entries(path)))
		return 0;
	if ((g = calloc(1, sizeof(*g))) == NULL) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	if ((g->lock = lock_take(path, why, whylen)) == NULL) {
		free(g);
		return -1;
	}
	g->next = plan->guards;
	plan->guards = g;
	/* under our shared lock nobody removes one that is there: joined as it is */
	if (exists && real_lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return 1;
	/* made while the child builds its namespaces; it waits for the word */
	g->pending = 1;
	if (plan->ready[0] == -1 && pipe2(plan->ready, O_CLOEXEC) == -1) {
		snprintf(why, whylen, "pipe: %s", strerror(errno));
		return -1;
	}
	return 1;
}

int
sandbox_spawned(void *arg)
{
	struct sandbox_plan	*plan = arg;
	struct sbx_guard	*g;
	int			 e = 0;

	if (plan == NULL || plan->ready[1] == -1)
		return 0;
	for (g = plan->guards; g != NULL && e == 0; g = g->next) {
		if (!g->pending)
			continue;
		g->pending = 0;
		if ((e = placeholder_make(g->lock)) != 0)
			log_warnx("sandbox: placeholder %s: %s; the command does not run",
			    g->lock->path, strerror(e));
	}
	/* a short write or none: the child reads EOF and does not go on either */
	(void)!write(plan->ready[1], &e, sizeof(e));
	close(plan->ready[1]);
	plan->ready[1] = -1;
	return e == 0 ? 0 : -1;
}

/* In the child: the word from sandbox_spawned, once. */
int
sbx_guard_wait(const struct sandbox_plan *plan)
{
	ssize_t	n;
	int	e;

	if (plan->ready[0] == -1)
		return 0;
	/* forked by execd itself (no helper yet): its end is not ours to hold */
	if (plan->ready[1] != -1)
		close(plan->ready[1]);
	do
		n = read(plan->ready[0], &e, sizeof(e));
	while (n == -1 && errno == EINTR);
	if (n != sizeof(e))
		return EPIPE;
	return e;
}

void
sandbox_guards_release(struct sbx_guard *g)
{
	struct sbx_guard	*next;

	for (; g != NULL; g = next) {
		next = g->next;
		lock_release(g->lock);
		free(g);
	}
	/* one message to the spawn helper for all of them */
	close_batch();
}

struct sbx_guard *
sandbox_take_guards(struct sandbox_plan *plan)
{
	struct sbx_guard	*g;

	if (plan == NULL)
		return NULL;
	g = plan->guards;
	plan->guards = NULL;
	return g;
}
