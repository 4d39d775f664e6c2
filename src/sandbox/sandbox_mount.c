/*
 * The mount view of a filesystem sandbox: planned in the parent as a list
 * of operations on existing, symlink-free paths, applied by the child in
 * its own mount namespace (propagation cut off first, so nothing reaches
 * the host).  In order, later ones shadowing earlier ones:
 *  1. every mount read-only, nosuid and nodev: a write no root allows
 *     fails with EROFS, chmod, chown, utime and xattrs included;
 *  2. each writable root bound writable on itself (a mount point: it
 *     cannot be renamed away from inside), read entries inside them bound
 *     read-only;
 *  3. a fresh /dev (sandbox_dev.c);
 *  4. the protected names (.git .codex .agents .aws) at the top of every
 *     writable root, read-only (placeholders for missing ones, which
 *     execd makes while the child gets here: sandbox_guard.c); a symlink
 *     there stops the command; so are execd's configuration places (the
 *     Codex home, ~/.agents, /etc/codex) inside a writable root, and the
 *     writable roots are recorded (sandbox_record.c);
 *  5. denied paths masked: a directory by an empty, mode 000, read-only
 *     tmpfs, a file by an empty mode 000 file (EACCES, as under the
 *     reference's bubblewrap); deny globs are expanded when the process
 *     starts, as the reference does;
 *  6. execd's own paths (sandbox_hide), masked the same way.
 * Landlock stays a second layer over this for reads and writes; without
 * Landlock a restricted-read profile cannot be enforced and is refused by
 * the caller.  The child's side is sandbox_mount_child.c.
 */
#include "config.h"

#include <sys/mount.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "sandbox/sandbox.h"
#include "sandbox/sandbox_int.h"

#define GLOB_WALK_MAX	200000	/* entries looked at to expand the deny globs */
#define GLOB_MASK_MAX	8192	/* masks they may produce */

static int
push(struct sandbox_plan *plan, enum sbx_mount_op op, const char *path)
{
	struct sbx_mount	*m;
	struct stat		 st;

	if ((m = reallocarray(plan->mounts, plan->nmounts + 1, sizeof(*m))) == NULL)
		return -1;
	plan->mounts = m;
	m = &plan->mounts[plan->nmounts];
	if ((m->path = strdup(path)) == NULL)
		return -1;
	m->op = op;
	/*
	 * What the child binds or covers must be what was looked at here: a
	 * command may swap a directory of a writable root for a symlink (or
	 * for another directory) in between.  The fresh /dev is the child's own.
	 */
	m->dev = m->ino = 0;
	if (op != SBX_MNT_RO_ALL && op != SBX_MNT_DEV && op != SBX_MNT_PROTECT &&
	    !fs_path_covers("/dev", path) && lstat(path, &st) == 0 && !S_ISLNK(st.st_mode)) {
		m->dev = st.st_dev;
		m->ino = st.st_ino;
	}
	plan->nmounts++;
	return 0;
}

/* A path a bind can be made on: it exists, is no symlink, is not per-process. */
static int
mountable(const char *path, struct stat *st)
{
	if (fs_path_covers("/proc", path) || lstat(path, st) == -1 || S_ISLNK(st->st_mode))
		return 0;
	return 1;
}

/* The grants that count for mounts, shallowest first (ties: write first). */
static int
grant_cmp(const void *a, const void *b)
{
	const struct fs_rule	*x = *(const struct fs_rule *const *)a;
	const struct fs_rule	*y = *(const struct fs_rule *const *)b;
	size_t			 dx = fs_path_depth(x->path), dy = fs_path_depth(y->path);
	int			 c;

	if (dx != dy)
		return dx < dy ? -1 : 1;
	if ((c = strcmp(x->path, y->path)) != 0)
		return c;
	return (x->access == FS_ACCESS_WRITE ? 0 : 1) - (y->access == FS_ACCESS_WRITE ? 0 : 1);
}

static int
under_grant(const struct fs_rule **g, size_t n, const char *path)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (fs_path_covers(g[i]->path, path))
			return 1;
	return 0;
}

/* Writable (1) or not (0) as the mounts planned so far leave path. */
static int
mount_state(const struct sandbox_plan *plan, const char *path, int base)
{
	const struct sbx_mount	*m, *best = NULL;
	size_t			 i;

	for (i = 0; i < plan->nmounts; i++) {
		m = &plan->mounts[i];
		if ((m->op == SBX_MNT_RW || m->op == SBX_MNT_RO) && fs_path_covers(m->path, path) &&
		    (best == NULL || fs_path_depth(m->path) >= fs_path_depth(best->path)))
			best = m;
	}
	return best == NULL ? base : best->op == SBX_MNT_RW;
}

static int
masked(const struct sandbox_plan *plan, const char *path)
{
	size_t	i;

	for (i = 0; i < plan->nmounts; i++)
		if ((plan->mounts[i].op == SBX_MNT_MASK_DIR ||
		    plan->mounts[i].op == SBX_MNT_MASK_FILE) &&
		    fs_path_covers(plan->mounts[i].path, path))
			return 1;
	return 0;
}

/* Is a mount planned at path itself?  The latest are looked at first. */
static int
planned_at(const struct sandbox_plan *plan, const char *path)
{
	size_t	i;

	for (i = plan->nmounts; i > 0; i--)
		if (strcmp(plan->mounts[i - 1].path, path) == 0)
			return 1;
	return 0;
}

/* Is path writable as every mount planned so far leaves it (a protected name's too)? */
static int
writable_now(const struct sandbox_plan *plan, const char *path, int base)
{
	const struct sbx_mount	*m, *best = NULL;
	size_t			 i;

	for (i = 0; i < plan->nmounts; i++) {
		m = &plan->mounts[i];
		if (m->op == SBX_MNT_RO_ALL || m->op == SBX_MNT_DEV || m->op == SBX_MNT_PIN ||
		    !fs_path_covers(m->path, path))
			continue;
		if (best == NULL || fs_path_depth(m->path) >= fs_path_depth(best->path))
			best = m;
	}
	return best == NULL ? base : best->op == SBX_MNT_RW;
}

/*
 * A mask or a read-only bind about to be made on path: the writable
 * directories above it, up to the nearest mount point, become mount points
 * themselves (bound on themselves as they are: clearing a read-only flag
 * the host's mount has, as a container's read-only root, fails with
 * EPERM, and a bind keeps what the view made writable so).  A command
 * may then not rename
 * them (EBUSY): a mount moves with its directory in the command's view,
 * but on the host the masked files would have a new name, which the
 * policy, made of names, does not deny to fs requests or to the next
 * command.
 */
static int
pin_parents(struct sandbox_plan *plan, const char *path)
{
	char		 dir[PATH_MAX], *cut;
	struct stat	 st;
	size_t		 i;
	int		 base = 1;

	for (i = 0; i < plan->nmounts; i++)
		if (plan->mounts[i].op == SBX_MNT_RO_ALL)
			base = 0;
	if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir))
		return -1;
	for (;;) {
		if ((cut = strrchr(dir, '/')) == NULL || cut == dir)
			return 0;	/* "/" cannot be renamed */
		*cut = '\0';
		if (planned_at(plan, dir) || !writable_now(plan, dir, base))
			return 0;
		if (lstat(dir, &st) == -1 || !S_ISDIR(st.st_mode))
			return 0;	/* gone, or no longer a directory: the mount fails */
		if (push(plan, SBX_MNT_PIN, dir) == -1)
			return -1;
	}
}

static int
add_mask(struct sandbox_plan *plan, const char *path)
{
	struct stat	st;

	if (masked(plan, path) || !mountable(path, &st))
		return 0;
	/* under /dev only what the fresh one holds is there to mask */
	if (fs_path_covers("/dev", path) && !sbx_dev_has(path))
		return 0;
	if (pin_parents(plan, path) == -1)
		return -1;
	return push(plan, S_ISDIR(st.st_mode) ? SBX_MNT_MASK_DIR : SBX_MNT_MASK_FILE, path);
}

struct glob_walk {
	struct sandbox_plan	*plan;
	const struct fs_policy	*pol;
	const struct fs_rule	**grants;
	size_t			 ngrants;
	int			 fallback;
	size_t			 seen, masks;
};

/* Mask what the policy denies below dir (whose own access is allowed). */
static int
walk(struct glob_walk *w, const char *dir, int left, char *why, size_t whylen)
{
	DIR		*d;
	struct dirent	*de;
	struct stat	 st;
	char		 path[PATH_MAX];
	int		 r = 0;

	if ((d = opendir(dir)) == NULL)
		return 0;	/* unreadable or gone: nothing to mask there */
	while (r == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (++w->seen > GLOB_WALK_MAX) {
			snprintf(why, whylen, "deny globs under %s match too many paths", dir);
			r = -1;
			break;
		}
		if (snprintf(path, sizeof(path), "%s/%s", strcmp(dir, "/") == 0 ? "" : dir,
		    de->d_name) >= (int)sizeof(path) || lstat(path, &st) == -1 ||
		    S_ISLNK(st.st_mode))
			continue;
		if (masked(w->plan, path))
			continue;
		if (fs_policy_check(w->pol, path, FS_WANT_READ) == EACCES) {
			/* with Landlock, what no grant covers is unreachable anyway */
			if (!w->fallback && !under_grant(w->grants, w->ngrants, path))
				continue;
			if (++w->masks > GLOB_MASK_MAX) {
				snprintf(why, whylen, "deny globs match more than %d paths",
				    GLOB_MASK_MAX);
				r = -1;
			} else
				r = add_mask(w->plan, path);
		} else if (S_ISDIR(st.st_mode) && left != 0)
			r = walk(w, path, left - 1, why, whylen);
	}
	closedir(d);
	return r;
}

/* The directory a pattern's literal part names: "/a/b/[*].x" -> "/a/b". */
static void
glob_base(const char *pattern, char *out, size_t outlen)
{
	size_t	n = strcspn(pattern, "*?[");

	while (n > 0 && pattern[n] != '/')
		n--;
	if (n == 0)
		snprintf(out, outlen, "/");
	else
		snprintf(out, outlen, "%.*s", (int)n, pattern);
}

static int
depth_cmp(const void *a, const void *b)
{
	size_t	x = fs_path_depth(*(const char *const *)a);
	size_t	y = fs_path_depth(*(const char *const *)b);

	return x < y ? -1 : x > y;
}

static int
plan_masks(struct sandbox_plan *plan, const struct fs_policy *pol, const struct fs_rule **g,
    size_t ng, int fallback, int glob_depth, char *why, size_t whylen)
{
	struct glob_walk	 w = { plan, pol, g, ng, fallback, 0, 0 };
	const struct fs_rule	*r;
	const char		**deny;
	char			 base[PATH_MAX];
	size_t			 i, n = 0;

	/* denied paths, shallowest first so that nested ones are skipped */
	if ((deny = calloc(fs_policy_nrules(pol) + 1, sizeof(*deny))) == NULL)
		goto oom;
	for (i = 0; (r = fs_policy_rule(pol, i)) != NULL; i++)
		if (r->access == FS_ACCESS_DENY && !r->is_glob &&
		    (fallback || under_grant(g, ng, r->path)))
			deny[n++] = r->path;
	qsort(deny, n, sizeof(*deny), depth_cmp);
	for (i = 0; i < n; i++)
		if (add_mask(plan, deny[i]) == -1) {
			free(deny);
			goto oom;
		}
	free(deny);
	for (i = 0; (r = fs_policy_rule(pol, i)) != NULL; i++) {
		if (!r->is_glob || r->access != FS_ACCESS_DENY)
			continue;
		glob_base(r->path, base, sizeof(base));
		if (fs_policy_check(pol, base, FS_WANT_READ) == EACCES)
			continue;	/* all of it is denied already */
		if (walk(&w, base, glob_depth, why, whylen) == -1)
			return -1;
	}
	return 0;
oom:
	snprintf(why, whylen, "out of memory");
	return -1;
}

/* Is path itself a writable root (an explicit grant, which a protected name yields to)? */
static int
is_write_root(const struct fs_rule **g, size_t n, const char *path)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (g[i]->access == FS_ACCESS_WRITE && strcmp(g[i]->path, path) == 0)
			return 1;
	return 0;
}

/* The command does not run: why, in the reference's words (clients see the same failure). */
static int
set_fatal(struct sandbox_plan *plan, const char *why)
{
	if (plan->fatal != NULL)
		return 0;
	if (asprintf(&plan->fatal, "error building bubblewrap command: Fatal error: %s\n",
	    why) == -1) {
		plan->fatal = NULL;
		return -1;
	}
	return 0;
}

/*
 * A protected path: read-only whether it exists or not (a missing one
 * gets a placeholder to be bound on: sandbox_guard.c).  A symlink there
 * cannot be made read-only (its target is the writable root's to change):
 * the command does not run.
 */
static int
protect_one(struct sandbox_plan *plan, const char *path, char *why, size_t whylen)
{
	struct stat	 st;
	char		 msg[PATH_MAX * 2 + 96];
	int		 found, held;

	if ((found = lstat(path, &st) == 0) && S_ISLNK(st.st_mode)) {
		(void)snprintf(msg, sizeof(msg), "cannot enforce sandbox read-only path %s because "
		    "it crosses writable symlink %s", path, path);
		return set_fatal(plan, msg) == -1 ? -2 : 0;
	}
	if (!found && errno != ENOENT)
		return 0;
	/* a placeholder held (joined, or made once the child runs) */
	held = 0;
	if ((!found || S_ISDIR(st.st_mode)) &&
	    (held = sbx_guard_protected(plan, path, why, whylen)) == -1)
		return -1;
	if ((held || found) && (pin_parents(plan, path) == -1 ||
	    push(plan, SBX_MNT_PROTECT, path) == -1))
		return -2;
	return 0;
}

/*
 * The executor's configuration places (the Codex home, ~/.agents,
 * /etc/codex) inside a writable root, protected as a protected name is:
 * environmentConfig/read's user and system layers and the trust they
 * give, and every root capabilities/discoverV2 searches, are there.  Only
 * where the view leaves them writable (a writable root's own protected
 * names cover the usual ~/.codex already), not where a root is the place
 * itself (asked for explicitly), nor when the parent a placeholder would
 * go in is missing.
 */
static int
plan_places(struct sandbox_plan *plan, const struct fs_rule **g, size_t ng, int base,
    char *why, size_t whylen)
{
	char		 p[PATH_MAX], parent[PATH_MAX], *cut;
	struct stat	 st;
	size_t		 i;
	int		 rc, r;

	for (i = 0; (r = sbx_config_place(i, p)) != -1; i++) {
		if (r == 0 || strcmp(p, "/") == 0 || is_write_root(g, ng, p) ||
		    !writable_now(plan, p, base))
			continue;
		/* a missing one the command could not make either (not ours to write) */
		snprintf(parent, sizeof(parent), "%s", p);
		cut = strrchr(parent, '/');
		*(cut == parent ? cut + 1 : cut) = '\0';
		if (lstat(p, &st) == -1 && access(parent, W_OK) == -1)
			continue;
		if ((rc = protect_one(plan, p, why, whylen)) != 0)
			return rc;
	}
	return 0;
}

/* The .codex directories of the project layers read so far (sandbox_layers.c). */
static int
plan_layers(struct sandbox_plan *plan, const struct fs_rule **g, size_t ng, int base,
    char *why, size_t whylen)
{
	const char	*p;
	struct stat	 st;
	size_t		 i;
	int		 rc;

	for (i = 0; (p = sbx_layer_dir(i)) != NULL; i++) {
		/* gone (the host removed it), or not the command's to change */
		if (lstat(p, &st) == -1 || !S_ISDIR(st.st_mode) || is_write_root(g, ng, p) ||
		    !writable_now(plan, p, base))
			continue;
		if ((rc = protect_one(plan, p, why, whylen)) != 0)
			return rc;
	}
	return 0;
}

/* The protected names at the top of a writable root, also below a parent repository. */
static int
plan_protected(struct sandbox_plan *plan, const struct fs_rule **g, size_t ng, int base,
    char *why, size_t whylen)
{
	struct stat	 st;
	char		 path[PATH_MAX];
	size_t		 i, j;
	int		 rc;

	for (i = 0; i < ng; i++) {
		if (g[i]->access != FS_ACCESS_WRITE || (i > 0 && strcmp(g[i]->path,
		    g[i - 1]->path) == 0) || lstat(g[i]->path, &st) == -1)
			continue;
		/* what it could write: the configuration readers refuse layers there */
		if (sbx_record_root(g[i]->path, st.st_dev, st.st_ino) == -1) {
			snprintf(why, whylen, "cannot record the writable root %s "
			    "(STATE-DIR/sandbox-roots)", g[i]->path);
			return -1;
		}
		if (!S_ISDIR(st.st_mode))
			continue;
		for (j = 0; fs_protected_names[j] != NULL; j++) {
			if (snprintf(path, sizeof(path), "%s/%s", strcmp(g[i]->path, "/") == 0 ? "" :
			    g[i]->path, fs_protected_names[j]) >= (int)sizeof(path) ||
			    is_write_root(g, ng, path))
				continue;
			if ((rc = protect_one(plan, path, why, whylen)) != 0)
				goto fail;
		}
	}
	if ((rc = plan_places(plan, g, ng, base, why, whylen)) == 0 &&
	    (rc = plan_layers(plan, g, ng, base, why, whylen)) == 0)
		return 0;
fail:
	if (rc == -2)
		snprintf(why, whylen, "out of memory");
	return -1;
}

int
sbx_mount_plan(struct sandbox_plan *plan, const struct fs_policy *pol, int platform,
    int landlock, int glob_depth, char *why, size_t whylen)
{
	const struct fs_rule	**g = NULL, *r;
	struct stat		  st;
	size_t			  i, n = 0, total = fs_policy_nrules(pol);
	int			  want, base, rv = -1;

	if ((g = calloc(total + 1, sizeof(*g))) == NULL)
		goto oom;
	for (i = 0; (r = fs_policy_rule(pol, i)) != NULL; i++) {
		/* platform roots only ever grant reads: they never narrow a write */
		/* the fresh /dev replaces the host's: no grant brings it back */
		if (r->is_glob || r->access == FS_ACCESS_DENY || !sbx_rule_used(r, platform) ||
		    sbx_rule_kind(r) == SBX_RULE_PLATFORM ||
		    sbx_rule_kind(r) == SBX_RULE_PROTECTED || fs_path_covers("/dev", r->path) ||
		    !mountable(r->path, &st))
			continue;
		g[n++] = r;
	}
	qsort(g, n, sizeof(*g), grant_cmp);
	/*
	 * A read-only base: a write where no root allows it is EROFS,
	 * metadata included.  Not when / itself is writable (a bind on / would
	 * not change the root the process already has): then the host's.
	 */
	base = n > 0 && strcmp(g[0]->path, "/") == 0 && g[0]->access == FS_ACCESS_WRITE;
	if (!base && push(plan, SBX_MNT_RO_ALL, "/") == -1)
		goto oom;
	for (i = base; i < n; i++) {
		if (i > 0 && strcmp(g[i]->path, g[i - 1]->path) == 0)
			continue;	/* the same path: write came first and wins */
		want = g[i]->access == FS_ACCESS_WRITE;
		if (mount_state(plan, g[i]->path, base) != want && ((!want &&
		    pin_parents(plan, g[i]->path) == -1) ||
		    push(plan, want ? SBX_MNT_RW : SBX_MNT_RO, g[i]->path) == -1))
			goto oom;
	}
	/*
	 * /dev before the protected names (they never lie under it: no grant
	 * reaches into /dev): the child builds it while execd still makes
	 * their placeholders.
	 */
	if (push(plan, SBX_MNT_DEV, "/dev") == -1)
		goto oom;
	/* a configuration place named through a link the command could swap */
	if (sandbox_place_link(pol, why, whylen) && set_fatal(plan, why) == -1)
		goto oom;
	if (plan_protected(plan, g, n, base, why, whylen) == -1) {
		free(g);
		return -1;
	}
	rv = plan_masks(plan, pol, g, n, !landlock, glob_depth, why, whylen);
	free(g);
	return rv;
oom:
	free(g);
	snprintf(why, whylen, "out of memory");
	return -1;
}

/* ---- execd's own paths, masked in every view ---- */

#define HIDE_MAX	16

static struct {
	char	*path[HIDE_MAX];
	int	 is_dir[HIDE_MAX];
	int	 readonly[HIDE_MAX];	/* seen, never written: bound read-only */
	size_t	 n;
	int	 log_checked;
} hidden;

static void
hide_add(const char *path, int is_dir, int readonly)
{
	if (hidden.n == HIDE_MAX || (hidden.path[hidden.n] = strdup(path)) == NULL) {
		log_warnx("sandbox: cannot keep %s from sandboxed commands", path);
		return;
	}
	hidden.readonly[hidden.n] = readonly;
	hidden.is_dir[hidden.n++] = is_dir;
	/* and a sandboxed fs request sees it as a command does */
	fs_policy_own_path(path, readonly);
}

void
sandbox_keep_readonly(const char *path, int is_dir)
{
	hide_add(path, is_dir, 1);
}

void
sandbox_hide(const char *path, int is_dir)
{
	struct stat	st;
	char		log[PATH_MAX], link[32];
	ssize_t		n;
	int		fd;

	/*
	 * execd's log, when its stderr is a file, and its stdout when that is
	 * one: a listener prints its URL there, the token included.
	 */
	if (!hidden.log_checked) {
		hidden.log_checked = 1;
		for (fd = STDOUT_FILENO; fd <= STDERR_FILENO; fd++) {
			(void)snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
			if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
			    (n = readlink(link, log, sizeof(log) - 1)) > 0 && log[0] == '/') {
				log[n] = '\0';
				hide_add(log, 0, 0);
			}
		}
	}
	if (path != NULL)
		hide_add(path, is_dir, 0);
}

/* Last in the view: covered even inside a writable root, so never reachable. */
int
sbx_mount_hide(struct sandbox_plan *plan, char *why, size_t whylen)
{
	char		real[PATH_MAX];
	struct stat	st;
	size_t		i;

	for (i = 0; i < hidden.n; i++) {
		/* made now if missing: a command must not make it first */
		if (hidden.is_dir[i])
			(void)mkdir(hidden.path[i], hidden.readonly[i] ? 0755 : 0700);
		/* under a denied path it is out of sight already (and no mount point) */
		if (fs_realpath(hidden.path[i], real) == NULL || lstat(real, &st) == -1 ||
		    fs_path_covers("/proc", real) || fs_path_covers("/dev", real) ||
		    masked(plan, real))
			continue;
		if (pin_parents(plan, real) == -1 ||
		    push(plan, hidden.readonly[i] ? SBX_MNT_RO : S_ISDIR(st.st_mode) ?
		    SBX_MNT_MASK_DIR : SBX_MNT_MASK_FILE, real) == -1) {
			snprintf(why, whylen, "out of memory");
			return -1;
		}
	}
	return 0;
}
