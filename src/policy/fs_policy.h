/*
 * The filesystem part of a request's `sandbox` (FileSystemSandboxContext):
 * parsed with the reference's error texts and reduced to a list of rules on
 * real (symlink-free) paths, which execd enforces itself for fs requests
 * and which can be turned into Landlock rules for processes.
 *
 * Model (checked against codex exec-server 0.169.0, whose helper runs the
 * operation inside bubblewrap):
 *  - `disabled`, `external`, `managed`+`unrestricted`, and a restricted
 *    profile granting write on `root` without narrowing entries: no policy.
 *  - A path is readable under the most specific read/write rule covering
 *    it (ties: write wins), writable only if that rule is a write rule.
 *  - `deny`/`none` entries (paths, and deny glob patterns) mask everything
 *    below them: reads and writes there fail with EACCES.
 *  - Writable roots keep their top-level .git, .codex, .agents and .aws
 *    read-only (.aws as the reference's 0.169.0 sandbox adds it, for its
 *    processes and its fs helper alike).
 *  - The platform's system directories (/usr, /etc, /bin, /lib, /proc,
 *    ...) are always readable and the usual /dev nodes writable, as the
 *    reference's helper (bubblewrap --dev) sees them.
 *  - Anything else does not exist (ENOENT) - except the directories leading
 *    to a readable root, which can be listed (showing only what leads on)
 *    but not written to (EROFS).
 *  - Read and write entries for paths that do not exist are dropped (the
 *    reference cannot mount them), deny entries are kept.  Read and write
 *    entries whose path leads through a symlink inside a writable root are
 *    dropped too (a sandboxed command may have made it; the reference
 *    follows it); a read entry so reached that narrows a writable root,
 *    or a deny entry (a deny glob's directory) so reached, makes the
 *    policy fail.
 *  - `current_working_directory` entries grant nothing (as the reference's
 *    0.169.0 fs helper), `project_roots` means `workspaceRoots` (+subpath),
 *    `tmpdir` means execd's own $TMPDIR, `slash_tmp` /tmp, `unknown` nothing.
 *  - Read/write glob patterns grant nothing; deny globs are matched with
 *    fnmatch(3) per path segment, `**` spanning segments.
 */
#ifndef EXECD_FS_POLICY_H
#define EXECD_FS_POLICY_H

#include <stddef.h>

#include <jansson.h>

#include "jsonx.h"

enum fs_access {
	FS_ACCESS_READ = 1,
	FS_ACCESS_WRITE,
	FS_ACCESS_DENY,
};

struct fs_rule {
	char		*path;		/* absolute, symlinks resolved; or a pattern */
	enum fs_access	 access;
	int		 is_glob;
	int		 implicit;	/* a platform default or protected subpath */
	char		*given;		/* as the entry named it, when symlinks led elsewhere */
};

struct fs_policy;

/* The names a writable root keeps read-only at its top, NULL-terminated. */
extern const char *const fs_protected_names[];

/*
 * Parse a `sandbox` value (NULL or JSON null: none). On success *out is
 * NULL when the request is unrestricted. On failure returns -1 with the
 * reference's message in e and its JSON-RPC code in *code: -32602 for a
 * malformed object, -32600 for an entry URI that names no local path.
 */
int	fs_policy_parse(json_t *sandbox, struct fs_policy **out, struct jx_err *e, int *code);
void	fs_policy_free(struct fs_policy *p);

#define FS_WANT_READ	0
#define FS_WANT_WRITE	1
#define FS_WANT_STAT	2	/* only look at it: a masked path itself can be stat'ed */

/*
 * May `path` (absolute, already resolved with realpath(3) as far as it
 * exists) be used as `want` says?  0, or the errno the operation fails
 * with: ENOENT, EACCES or EROFS.  A NULL policy allows all.
 */
/* realpath(3) into out (PATH_MAX bytes), cheaper; NULL with errno. */
char	*fs_realpath(const char *path, char *out);
/* Is path root itself or below it, by whole components? */
int	fs_path_covers(const char *root, const char *path);
struct stat;
/*
 * Walk path component by component as the kernel resolves it, following
 * symlinks; visit sees each component (st NULL: missing) and returns 1
 * (found: 1), -1 (stop: 0) or 0 (go on).  See fs_policy.c.
 */
int	fs_path_walk(const char *path,
	    int (*visit)(void *arg, const char *cur, const struct stat *st), void *arg);
/* How many components deep an absolute path is ("/" is 0). */
size_t	fs_path_depth(const char *p);
int	fs_policy_check(const struct fs_policy *p, const char *path, int want);
/* Does listing a directory show `path`, one of its entries? */
int	fs_policy_visible(const struct fs_policy *p, const char *path);

/*
 * One of execd's own paths, which sandboxed requests see as sandboxed
 * commands do (sandbox_hide): masked, or with readonly only not writable.
 * readonly FS_OWN_PLACE: a configuration place (the Codex home, ~/.agents,
 * /etc/codex), not writable where a writable root lies above it, as in a
 * command's view (sandbox_mount.c plan_places); a root at or inside it
 * writes it.
 */
#define FS_OWN_PLACE	2
void	fs_policy_own_path(const char *path, int readonly);

/* The policy could not be built for an operation (a glob it cannot expand); NULL if fine. */
const char *fs_policy_error(const struct fs_policy *p);

size_t	 fs_policy_nrules(const struct fs_policy *p);
const struct fs_rule *fs_policy_rule(const struct fs_policy *p, size_t i);

#endif
