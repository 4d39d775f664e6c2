/*
 * A writable root's missing .git, .codex and .agents: the command must not
 * create them.  Neither Landlock (its grants only add up) nor a mount can
 * forbid a name that does not exist, so, as the reference does, execd
 * creates an empty mode 555 directory there on the host (a placeholder),
 * and the child's mount namespace binds it read-only on itself: it cannot
 * be written into, removed or renamed over (EBUSY) from inside.
 *
 * The placeholder lives while a command that needs it lives (until its
 * process/closed).  Commands of several instances may share one, so the
 * owners are counted in the state directory: protected/<hash>/ holds the
 * placeholder's identity and one file per owner, named after the owning
 * instance's pid, all under an flock.  The last owner removes the
 * placeholder if it is still the empty directory that was made; owners
 * whose instance is gone are dropped on the next use of the same path.
 *
 * A missing .git is left alone when a parent directory holds a repository
 * (a .git directory with HEAD, or a .git file starting "gitdir:"), so that
 * git still finds it.  Without mount namespaces nothing is created and the
 * names stay unprotected (logged): the rest of the policy still holds.
 */
#include "config.h"

#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "execd.h"
#include "fnv.h"
#include "log.h"
#include "sandbox/sandbox_int.h"

struct sbx_guard {
	char			*path;
	char			 dir[PATH_MAX];		/* the registry entry */
	char			 owner[PATH_MAX + 64];	/* this owner's file in it */
	struct sbx_guard	*next;
};

static unsigned	owner_seq;

/* Does a directory above root hold a git repository? */
static int
parent_repo(const char *root)
{
	char		 dir[PATH_MAX], probe[PATH_MAX + 16], head[8];
	struct stat	 st;
	char		*slash;
	int		 fd;
	ssize_t		 n;

	if (snprintf(dir, sizeof(dir), "%s", root) >= (int)sizeof(dir))
		return 0;
	while ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
		*slash = '\0';
		snprintf(probe, sizeof(probe), "%s/.git", dir);
		if (lstat(probe, &st) == -1)
			continue;
		if (S_ISDIR(st.st_mode)) {
			snprintf(probe, sizeof(probe), "%s/.git/HEAD", dir);
			if (access(probe, F_OK) == 0)
				return 1;
		} else if (S_ISREG(st.st_mode) &&
		    (fd = open(probe, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) != -1) {
			n = read(fd, head, sizeof(head) - 1);
			close(fd);
			if (n >= 7 && memcmp(head, "gitdir:", 7) == 0)
				return 1;
		}
	}
	return 0;
}

static int
registry_lock(void)
{
	char	path[PATH_MAX];
	int	fd;

	if (conf.state_dir == NULL)
		return -1;
	if ((mkdir(conf.state_dir, 0700) == -1 && errno != EEXIST) ||
	    snprintf(path, sizeof(path), "%s/protected", conf.state_dir) >= (int)sizeof(path) ||
	    (mkdir(path, 0700) == -1 && errno != EEXIST) ||
	    strlen(path) + 6 >= sizeof(path))
		return -1;
	strcat(path, "/.lock");
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) == -1)
		return -1;
	while (flock(fd, LOCK_EX) == -1)
		if (errno != EINTR) {
			close(fd);
			return -1;
		}
	return fd;
}

/* Drop owners whose instance is gone; 1 if a live one is left. */
static int
live_owners(const char *dir)
{
	struct dirent	*de;
	DIR		*d;
	char		 path[PATH_MAX + 256];
	long		 pid;
	int		 live = 0;

	if ((d = opendir(dir)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "owner.", 6) != 0)
			continue;
		pid = strtol(de->d_name + 6, NULL, 10);
		if (pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM)) {
			live = 1;
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	closedir(d);
	return live;
}

/* Remove the placeholder if it is still the empty directory made for it. */
static void
remove_placeholder(const char *dir)
{
	char		 id[PATH_MAX + 64], path[PATH_MAX + 16];
	unsigned long long dev, ino;
	struct stat	 st;
	ssize_t		 n;
	int		 fd;

	snprintf(path, sizeof(path), "%s/id", dir);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) != -1) {
		n = read(fd, id, sizeof(id) - 1);
		close(fd);
		id[n > 0 ? n : 0] = '\0';
		id[strcspn(id, "\n")] = '\0';
		if (sscanf(id, "%llu %llu ", &dev, &ino) == 2 && strchr(id, '/') != NULL &&
		    lstat(strchr(id, '/'), &st) == 0 && S_ISDIR(st.st_mode) &&
		    st.st_dev == dev && st.st_ino == ino && rmdir(strchr(id, '/')) == -1 &&
		    errno != ENOTEMPTY && errno != EEXIST)
			log_warn("sandbox: removing the placeholder %s", strchr(id, '/'));
		unlink(path);
	}
	rmdir(dir);
}

static int
write_id(struct sbx_guard *g, const struct stat *st)
{
	char	id[PATH_MAX + 64], path[PATH_MAX + 16];
	int	fd, n, r = 0;

	n = snprintf(id, sizeof(id), "%llu %llu %s\n", (unsigned long long)st->st_dev,
	    (unsigned long long)st->st_ino, g->path);
	snprintf(path, sizeof(path), "%s/id", g->dir);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) == -1)
		return -1;
	if (write(fd, id, (size_t)n) != n)
		r = -1;
	close(fd);
	return r;
}

/* Is the directory at st the placeholder this registry entry made? */
static int
is_placeholder(const char *dir, const struct stat *st)
{
	char			id[PATH_MAX + 64], path[PATH_MAX + 16];
	unsigned long long	dev, ino;
	ssize_t			n;
	int			fd;

	snprintf(path, sizeof(path), "%s/id", dir);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	n = read(fd, id, sizeof(id) - 1);
	close(fd);
	id[n > 0 ? n : 0] = '\0';
	return sscanf(id, "%llu %llu ", &dev, &ino) == 2 && dev == st->st_dev &&
	    ino == st->st_ino;
}

/* Make (or join) the placeholder at path and own it; 0 with *out, -1 with why. */
static int
guard_take(const char *path, struct sbx_guard **out, char *why, size_t whylen)
{
	struct sbx_guard	*g;
	struct stat		 st;
	int			 lock, fd, made;

	if ((g = calloc(1, sizeof(*g))) == NULL || (g->path = strdup(path)) == NULL) {
		free(g);
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	if ((lock = registry_lock()) == -1) {
		snprintf(why, whylen, "the placeholder registry in %s: %s", conf.state_dir,
		    strerror(errno));
		goto fail;
	}
	if (snprintf(g->dir, sizeof(g->dir), "%s/protected/%016llx", conf.state_dir,
	    (unsigned long long)fnv1a64(path)) >= (int)sizeof(g->dir)) {
		errno = ENAMETOOLONG;
		goto sysfail;
	}
	if (mkdir(g->dir, 0700) == -1 && errno != EEXIST)
		goto sysfail;
	made = mkdir(path, 0555) == 0;
	if (!made && errno != EEXIST)
		goto sysfail;
	if (lstat(path, &st) == -1 || !S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		goto sysfail;
	}
	if (made && write_id(g, &st) == -1) {
		rmdir(path);
		goto sysfail;
	}
	if (!made && !is_placeholder(g->dir, &st)) {
		/* a real directory, nothing of ours */
		rmdir(g->dir);
		close(lock);
		free(g->path);
		free(g);
		*out = NULL;
		return 0;
	}
	snprintf(g->owner, sizeof(g->owner), "%s/owner.%ld.%u", g->dir, (long)getpid(),
	    owner_seq++);
	if ((fd = open(g->owner, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) == -1)
		goto sysfail;
	close(fd);
	close(lock);
	*out = g;
	return 0;
sysfail:
	snprintf(why, whylen, "placeholder %s: %s", path, strerror(errno));
	close(lock);
fail:
	free(g->path);
	free(g);
	return -1;
}

/* Does the directory at path hold anything?  (A placeholder never does.) */
static int
has_entries(const char *path)
{
	struct dirent	*de;
	DIR		*d;
	int		 fd, any = 0;

	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
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
sbx_guard_protected(struct sandbox_plan *plan, const char *root, const char *path, char *why,
    size_t whylen)
{
	struct sbx_guard	*g;
	const char		*base = strrchr(path, '/');
	static int		 said;

	/* a real .git or .codex: no registry to consult, no lock to take */
	if (has_entries(path))
		return 0;
	if (strcmp(base, "/.git") == 0 && parent_repo(root))
		return 0;
	if (!sbx_namespaces()) {
		if (!said++)
			log_info("sandbox: without mount namespaces, a writable root's missing "
			    ".git, .codex and .agents cannot be protected");
		return 0;
	}
	if (guard_take(path, &g, why, whylen) == -1)
		return -1;
	if (g == NULL)
		return 0;
	g->next = plan->guards;
	plan->guards = g;
	return 0;
}

void
sandbox_guards_release(struct sbx_guard *g)
{
	struct sbx_guard	*next;
	int			 lock;

	if (g == NULL)
		return;
	lock = registry_lock();
	for (; g != NULL; g = next) {
		next = g->next;
		unlink(g->owner);
		if (lock != -1 && !live_owners(g->dir))
			remove_placeholder(g->dir);
		free(g->path);
		free(g);
	}
	if (lock != -1)
		close(lock);
}

const char *
sbx_guard_path(const struct sbx_guard *g)
{
	return g->path;
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
