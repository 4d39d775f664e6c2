/*
 * What sandboxed commands could write, remembered for the configuration
 * readers.  environmentConfig/read takes a project layer from
 * .codex/config.toml in every trusted directory between the project root
 * and cwd; inside a writable root only its top-level .codex is read-only
 * in the view (sandbox_mount.c), and no mount can forbid a name that does
 * not exist yet at any depth (Landlock and seccomp see no names either).
 * So the rule is kept where the layers are read instead: every writable
 * root a sandboxed command is given is recorded (its path, its device and
 * inode, and the time it was first given), and a project layer file is
 * not read when it lies inside a recorded root -- by where the opened file
 * really is, each directory above it compared by identity too, so a bind
 * mount or a rename of the root does not hide it -- and the file or its
 * .codex directory changed (ctime, which no one can set back) since that
 * time; nor when only the path as asked lies inside one (a symlink there
 * leads elsewhere).  A layer under a protected name at the top of the root
 * (read-only in every such view) is read.  What the host wrote before any
 * command could write there stays read; what changed since is the
 * command's as far as execd can tell.
 *
 * The same record keeps a project root marker a command made (a file's
 * ctime, a directory's birth time since) from marking anything: sandbox_made.
 *
 * The record is a file in the state directory (which no sandboxed command
 * sees), one "dev ino since path" line per root, appended at a sandbox's
 * planning when the root is new (or the clock has gone back), and read
 * again by every instance sharing the directory when it has grown: a
 * restart forgets nothing; removing the file (the operator's way back,
 * execd(8)) makes every instance forget.  It is bounded: past RECORD_MAX
 * roots "/" is recorded, and every project layer below / is refused from
 * then on (logged).
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "sandbox/sandbox.h"
#include "sandbox/sandbox_int.h"

#define RECORD_FILE	"sandbox-roots"
#define RECORD_MAX	4096
#define RECORD_LINE	(PATH_MAX + 64)

struct root_rec {
	char		*path;		/* NULL: known by identity only */
	uint64_t	 dev, ino;
	int64_t		 since;		/* first given (seconds), lowered if the clock goes back */
};

/* ctime and the clock are coarse: a change this close before `since` counts */
#define SINCE_SLACK	2

static struct {
	char		 file[PATH_MAX];	/* "": no state directory, memory only */
	struct root_rec	*v;
	size_t		 n;
	off_t		 read_to;		/* bytes of the file taken in */
	dev_t		 file_dev;		/* the file read so far (ino 0: none yet) */
	ino_t		 file_ino;
	int		 full;
} rec;

static struct root_rec *
known(const char *path, uint64_t dev, uint64_t ino)
{
	size_t	i;

	for (i = 0; i < rec.n; i++)
		if ((path != NULL && rec.v[i].path != NULL && strcmp(rec.v[i].path, path) == 0) ||
		    (rec.v[i].dev == dev && rec.v[i].ino == ino && ino != 0))
			return &rec.v[i];
	return NULL;
}

static int
remember(const char *path, uint64_t dev, uint64_t ino, int64_t since)
{
	struct root_rec	*v;

	if (rec.n >= RECORD_MAX && !(path != NULL && strcmp(path, "/") == 0 && since == 0))
		return -1;	/* only "/" for them all (cover_all) goes past the limit */
	if ((v = reallocarray(rec.v, rec.n + 1, sizeof(*v))) == NULL)
		return -1;
	rec.v = v;
	v[rec.n].path = path != NULL ? strdup(path) : NULL;
	if (path != NULL && v[rec.n].path == NULL)
		return -1;
	v[rec.n].dev = dev;
	v[rec.n].ino = ino;
	v[rec.n].since = since;
	rec.n++;
	return 0;
}

/*
 * No room to be precise: every place is one a command wrote ("/", since
 * 0), in memory; whoever made the record full wrote that line too.
 */
static int
cover_all(void)
{
	struct stat	st;

	if (rec.full)
		return 0;
	if (stat("/", &st) == -1 || remember("/", st.st_dev, st.st_ino, 0) == -1)
		return -1;
	rec.full = 1;
	log_warnx("sandbox: more than %d writable roots recorded: every project "
	    "configuration layer below / is refused from now on", RECORD_MAX);
	return 0;
}

/* The file read so far is gone (removed to start afresh): so are its roots. */
static void
forget(void)
{
	size_t	i;

	log_info("sandbox: %s was removed or replaced: its writable roots are forgotten",
	    rec.file);
	for (i = 0; i < rec.n; i++)
		free(rec.v[i].path);
	free(rec.v);
	rec.v = NULL;
	rec.n = 0;
	rec.read_to = 0;
	rec.full = 0;
	rec.file_ino = 0;
}

/* Take in what the file has gained since last read (other instances' roots too). */
static void
refresh(void)
{
	char		 line[RECORD_LINE];
	uint64_t	 dev, ino;
	int64_t		 since;
	struct root_rec	*r;
	struct stat	 st;
	FILE		*f;
	int		 at, fd;

	if (rec.file[0] == '\0')
		return;
	if ((fd = open(rec.file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1) {
		/* only a file once read: roots it never held (not writable) stay */
		if (errno == ENOENT && rec.file_ino != 0)
			forget();
		return;
	}
	if (fstat(fd, &st) == -1) {
		log_warn("sandbox: %s", rec.file);
		close(fd);
		return;
	}
	if (st.st_ino != rec.file_ino || st.st_dev != rec.file_dev || st.st_size < rec.read_to) {
		if (rec.file_ino != 0)
			forget();
		rec.file_dev = st.st_dev;
		rec.file_ino = st.st_ino;
	}
	if (st.st_size <= rec.read_to || lseek(fd, rec.read_to, SEEK_SET) == -1 ||
	    (f = fdopen(fd, "r")) == NULL) {
		close(fd);
		return;
	}
	/* only whole lines: one being appended is read next time */
	while (fgets(line, sizeof(line), f) != NULL && strchr(line, '\n') != NULL) {
		rec.read_to += (off_t)strlen(line);
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%" SCNu64 " %" SCNu64 " %" SCNd64 " %n", &dev, &ino, &since,
		    &at) != 3)
			continue;
		if ((r = known(line[at] == '/' ? line + at : NULL, dev, ino)) != NULL) {
			if (since < r->since)
				r->since = since;
			continue;
		}
		/* past the limit (instances filling it at once): all of it */
		if (!rec.full && remember(line[at] == '/' ? line + at : NULL, dev, ino, since) == -1 &&
		    cover_all() == -1)
			log_warnx("sandbox: %s: cannot take in the recorded roots", rec.file);
	}
	fclose(f);
}

/*
 * A root kept in memory only would be forgotten at a restart, and what a
 * command planted there read again: no line on disk, no sandbox (-1).
 */
static int
append(const char *path, uint64_t dev, uint64_t ino, int64_t since)
{
	char		line[RECORD_LINE];
	struct stat	st;
	int		fd, len, rv = 0;

	if (rec.file[0] == '\0') {
		log_warnx("sandbox: no state directory to record the writable root %s in", path);
		return -1;
	}
	len = snprintf(line, sizeof(line), "%" PRIu64 " %" PRIu64 " %" PRId64 " %s\n", dev, ino,
	    since, strchr(path, '\n') == NULL ? path : "-");
	if (len < 0 || (size_t)len >= sizeof(line))
		len = snprintf(line, sizeof(line), "%" PRIu64 " %" PRIu64 " %" PRId64 " -\n", dev,
		    ino, since);	/* known by identity only */
	if ((fd = open(rec.file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
	    0600)) == -1) {
		log_warn("sandbox: cannot record the writable root %s: %s", path, rec.file);
		return -1;
	}
	if (write(fd, line, (size_t)len) != len) {
		log_warn("sandbox: cannot record the writable root %s: %s", path, rec.file);
		rv = -1;
	}
	/* the file this instance writes to is one it knows: its removal is seen */
	if (rv == 0 && rec.file_ino == 0 && fstat(fd, &st) == 0) {
		rec.file_dev = st.st_dev;
		rec.file_ino = st.st_ino;
	}
	if (close(fd) == -1 && rv == 0) {
		log_warn("sandbox: cannot record the writable root %s: %s", path, rec.file);
		rv = -1;
	}
	return rv;
}

int
sbx_record_root(const char *path, uint64_t dev, uint64_t ino)
{
	struct root_rec	*r;
	struct stat	 st;
	int64_t		 now = (int64_t)time(NULL);

	/*
	 * Another instance may have recorded it (the file grows by one line
	 * per root), or the file may have been removed since it was last read:
	 * then a root known here must be written again.
	 */
	refresh();
	if ((r = known(path, dev, ino)) != NULL) {
		/* the clock went back since: what is written now would look older */
		if (now < r->since) {
			if (append(path, dev, ino, now) == -1)
				return -1;
			r->since = now;
		}
		return 0;
	}
	if (rec.full)
		return 0;	/* "/" holds it */
	if (rec.n >= RECORD_MAX)
		return stat("/", &st) == -1 || append("/", st.st_dev, st.st_ino, 0) == -1 ||
		    cover_all() == -1 ? -1 : 0;
	/* on disk first: memory alone would hold it only until a restart */
	if (append(path, dev, ino, now) == -1)
		return -1;
	if (remember(path, dev, ino, now) == -1) {
		log_warnx("sandbox: out of memory recording the writable root %s", path);
		return -1;
	}
	return 0;
}

int
sandbox_record_policy(const struct fs_policy *pol)
{
	const struct fs_rule	*r;
	struct root_rec		*k;
	struct stat		 st;
	size_t			 i;

	refresh();	/* a removed file: what is known here is to be written again */
	for (i = 0; (r = fs_policy_rule(pol, i)) != NULL; i++) {
		if (r->access != FS_ACCESS_WRITE || r->is_glob)
			continue;
		/* known by name, and the clock has not gone back: nothing to look at */
		if ((k = known(r->path, 0, 0)) != NULL && k->since <= (int64_t)time(NULL))
			continue;
		if (lstat(r->path, &st) == 0 && sbx_record_root(r->path, st.st_dev, st.st_ino) == -1)
			return -1;
	}
	return 0;
}

void
sandbox_record_init(const char *state_dir)
{
	if (state_dir == NULL || snprintf(rec.file, sizeof(rec.file), "%s/" RECORD_FILE,
	    state_dir) >= (int)sizeof(rec.file)) {
		rec.file[0] = '\0';
		return;
	}
	(void)mkdir(state_dir, 0700);
	refresh();
}

/*
 * Is path under a configuration place strictly inside the root pre?  Then
 * every view giving pre writable bound the place read-only (plan_places).
 */
static int
under_place(const char *pre, const char *path)
{
	char	p[PATH_MAX];
	size_t	i;

	for (i = 0; sbx_config_place(i, p) != -1; i++)
		if (p[0] == '/' && strlen(p) > strlen(pre) && fs_path_covers(pre, p) &&
		    fs_path_covers(p, path))
			return 1;
	return 0;
}

/* Is rest ("/name/...", what follows a root) under a protected name of that root? */
static int
under_protected(const char *rest)
{
	size_t	i, n;

	if (*rest++ != '/')
		return 0;
	n = strcspn(rest, "/");
	for (i = 0; fs_protected_names[i] != NULL; i++)
		if (strlen(fs_protected_names[i]) == n && memcmp(rest, fs_protected_names[i],
		    n) == 0)
			return 1;
	return 0;
}

/*
 * The earliest `since` of the recorded roots holding path (by name; by
 * identity too with by_id), INT64_MAX for none, INT64_MIN when it cannot
 * be told.
 */
static int64_t
inside(const char *path, int by_id)
{
	char		 pre[PATH_MAX];
	struct stat	 st;
	size_t		 len = strlen(path), i;
	int64_t		 since = INT64_MAX;
	int		 have;

	if (len >= sizeof(pre) || path[0] != '/')
		return INT64_MIN;
	memcpy(pre, path, len + 1);
	for (;;) {
		pre[len] = '\0';
		have = by_id && stat(pre, &st) == 0;
		for (i = 0; i < rec.n; i++)
			if (((rec.v[i].path != NULL && strcmp(rec.v[i].path, pre) == 0) ||
			    (have && rec.v[i].dev == (uint64_t)st.st_dev &&
			    rec.v[i].ino == (uint64_t)st.st_ino)) &&
			    !under_protected(path + (len == 1 ? 0 : len)) && rec.v[i].since < since &&
			    !under_place(pre, path))
				since = rec.v[i].since;
		if (len == 1)
			return since;
		while (len > 1 && pre[len - 1] != '/')
			len--;
		if (len > 1)
			len--;
	}
}

/* Did the file (fd) or the directory holding it change since `since`? */
static int
changed_since(int fd, const char *real, int64_t since)
{
	char		dir[PATH_MAX], *slash;
	struct stat	st;

	if (fstat(fd, &st) == -1 || (int64_t)st.st_ctim.tv_sec >= since - SINCE_SLACK)
		return 1;
	snprintf(dir, sizeof(dir), "%s", real);
	if ((slash = strrchr(dir, '/')) == NULL || slash == dir)
		return 1;
	*slash = '\0';
	return stat(dir, &st) == -1 || (int64_t)st.st_ctim.tv_sec >= since - SINCE_SLACK;
}

/* A symlink inside a recorded root that changed since: the walk stops there. */
static int
made_link(void *arg, const char *cur, const struct stat *st)
{
	int64_t	since;

	(void)arg;
	if (st == NULL || !S_ISLNK(st->st_mode) || (since = inside(cur, 1)) == INT64_MAX)
		return 0;
	return since == INT64_MIN || (int64_t)st->st_ctim.tv_sec >= since - SINCE_SLACK;
}

/*
 * Does the way to path, as the kernel resolves it, lead through a
 * symlink a sandboxed command could have made?  It would move a host
 * layer, or a host marker, written for one place to another.
 */
static int
link_made(const char *path)
{
	return fs_path_walk(path, made_link, NULL) == 1;
}

/*
 * A file with other hard links may have one in a recorded root (a root
 * holding a mount of its file system included): where is not told, so
 * it counts as written when it changed since the first root was given.
 */
static int
linked_since(int fd)
{
	struct stat	st;
	int64_t		first = INT64_MAX;
	size_t		i;

	if (fstat(fd, &st) == -1)
		return 1;
	if (!S_ISREG(st.st_mode) || st.st_nlink < 2)
		return 0;
	for (i = 0; i < rec.n; i++)
		if (rec.v[i].since < first)
			first = rec.v[i].since;
	return (int64_t)st.st_ctim.tv_sec >= first - SINCE_SLACK;
}

int
sandbox_wrote(int fd, const char *path)
{
	char	link[32], real[PATH_MAX];
	ssize_t	n;
	int64_t	since;

	refresh();
	if (rec.n == 0)
		return 0;
	if (link_made(path))
		return 1;
	/* where the opened file is: no link swapped in since can move it */
	(void)snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	if ((n = readlink(link, real, sizeof(real) - 1)) <= 0)
		return 1;
	real[n] = '\0';
	if ((since = inside(real, 1)) != INT64_MAX)
		return since == INT64_MIN || changed_since(fd, real, since);
	/* asked for inside a root, but really elsewhere: a link there leads out */
	if (strcmp(real, path) != 0 && inside(path, 0) != INT64_MAX)
		return 1;
	return linked_since(fd);
}

int
sandbox_made(const char *path)
{
	struct statx	 stx;
	char		 dir[PATH_MAX], real[PATH_MAX], *slash;
	int64_t		 since, born;
	size_t		 len;

	refresh();
	if (rec.n == 0 || (slash = strrchr(path, '/')) == NULL)
		return 0;
	/* reached through a link made since: the marker is moved, made or not */
	if (link_made(path))
		return 1;
	if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_CTIME | STATX_BTIME,
	    &stx) == -1 || !(stx.stx_mask & STATX_TYPE))
		return 0;
	/*
	 * When its name came there: a file's ctime (a hard link or a rename
	 * of an old file of the host's changes it, as any write; its birth
	 * time stays old); a directory's birth time, which no one can set
	 * (ctime changes at every commit in a real .git).  Not kept here:
	 * not told.
	 */
	if (!S_ISDIR(stx.stx_mode) && (stx.stx_mask & STATX_CTIME))
		born = (int64_t)stx.stx_ctime.tv_sec;
	else if (stx.stx_mask & STATX_BTIME)
		born = (int64_t)stx.stx_btime.tv_sec;
	else
		return 0;
	/* where it really is: its directory resolved, its own name (a link) kept */
	if (snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path) >= (int)sizeof(dir) ||
	    fs_realpath(slash == path ? "/" : dir, real) == NULL)
		return 1;
	len = strlen(real);
	if (snprintf(real + len, sizeof(real) - len, "%s", strcmp(real, "/") == 0 ? slash + 1 :
	    slash) >= (int)(sizeof(real) - len))
		return 1;
	if ((since = inside(real, 1)) != INT64_MAX)
		return since == INT64_MIN || born >= since - SINCE_SLACK;
	/* asked for inside a root, but really elsewhere: a link there leads out */
	return strcmp(real, path) != 0 && inside(path, 0) != INT64_MAX;
}
