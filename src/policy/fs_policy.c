/* Sandbox policies: rules from a decoded context (fs_policy_check.c checks against them). */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/fs_policy_int.h"
#include "rpc/rpc.h"

/* execd's own paths as registered (sandbox_hide), resolved by each policy */
static struct own_path	own_paths[OWN_MAX];
static size_t		nown_paths;

/* What the reference's Linux sandbox always shows, read-only... */
static const char *const platform_roots[] = { "/bin", "/sbin", "/usr", "/etc", "/lib",
	"/lib64", "/nix/store", "/run/current-system/sw", "/proc", NULL };
/* ...and the device nodes of bubblewrap's --dev, writable. */
static const char *const platform_devices[] = { "/dev/null", "/dev/zero", "/dev/full",
	"/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts", "/dev/shm",
	"/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr", NULL };
/* read-only at the top of every writable root, processes and fs requests alike */
const char *const fs_protected_names[] = { ".git", ".codex", ".agents", ".aws", NULL };

/* ---- building the rules ---- */

static int
is_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/*
 * The path with symlinks resolved in its longest existing prefix, as the
 * reference normalises its roots; NULL if out of memory.  *exists tells
 * whether the whole path exists.
 */
static char *
effective_path(const char *path, int *exists)
{
	char	 buf[PATH_MAX], *copy, *cut, *out;
	size_t	 n;

	*exists = 0;
	if ((copy = strdup(path)) == NULL)
		return NULL;
	for (;;) {
		if (fs_realpath(copy, buf) != NULL) {
			*exists = strlen(copy) == strlen(path);
			n = strlen(buf) + strlen(path + strlen(copy)) + 2;
			if ((out = malloc(n)) != NULL)
				snprintf(out, n, "%s%s", strcmp(buf, "/") == 0 &&
				    path[strlen(copy)] == '/' ? "" : buf, path + strlen(copy));
			free(copy);
			return out;
		}
		if ((cut = strrchr(copy, '/')) == NULL || cut == copy) {
			free(copy);
			return strdup(path);
		}
		*cut = '\0';
	}
}

#define R_GLOB		0x1
#define R_IMPLICIT	0x2
#define R_KEEP_MISSING	0x4
#define R_LITERAL	0x8	/* the path as written, a symlink staying one */
#define R_REAL		0x10	/* with R_LITERAL: known to exist, its own real path */
#define R_DEVICE	0x20	/* resolved, it must stay a /dev node */

static int
add_rule(struct fs_policy *p, const char *path, enum fs_access a, int flags)
{
	struct fs_rule	*r;
	struct stat	 st;
	char		*eff, *given = NULL;
	int		 exists;

	if (flags & R_GLOB)
		eff = strdup(path);
	else if (flags & R_LITERAL) {
		if (!(flags & R_REAL) && lstat(path, &st) == -1 && a != FS_ACCESS_DENY &&
		    !(flags & R_KEEP_MISSING))
			return 0;
		eff = strdup(path);
	}
	else {
		eff = effective_path(path, &exists);
		/* the reference cannot mount what does not exist: it grants nothing */
		if (eff != NULL && !exists && a != FS_ACCESS_DENY && !(flags & R_KEEP_MISSING)) {
			free(eff);
			return 0;
		}
		/*
		 * /dev/stderr and the like resolve through execd's own
		 * /proc/self/fd: to its log, its pipes.  A sandbox's are its
		 * own: what they lead to here is granted nothing.
		 */
		if (eff != NULL && (flags & R_DEVICE) && !fs_path_covers("/dev", eff)) {
			free(eff);
			return 0;
		}
	}
	if (eff == NULL)
		return -1;
	if (!(flags & (R_GLOB | R_LITERAL)) && strcmp(eff, path) != 0 &&
	    (given = strdup(path)) == NULL) {
		free(eff);
		return -1;
	}
	if (p->nrules == p->cap) {
		size_t ncap = p->cap ? p->cap * 2 : 16;
		if ((r = reallocarray(p->rules, ncap, sizeof(*r))) == NULL) {
			free(eff);
			free(given);
			return -1;
		}
		p->rules = r;
		p->cap = ncap;
	}
	r = &p->rules[p->nrules++];
	r->path = eff;
	r->access = a;
	r->is_glob = (flags & R_GLOB) != 0;
	r->implicit = (flags & R_IMPLICIT) != 0;
	r->given = given;
	return 0;
}

/* A deny pattern: absolute (joined to cwd), its literal directory prefix resolved. */
static int
add_glob(struct fs_policy *p, const char *cwd, const char *pattern)
{
	char	*abs, *eff, *lit_end, *slash, *full, *given;
	size_t	 n;
	int	 exists, r;

	n = strlen(pattern) + (cwd ? strlen(cwd) : 0) + 2;
	if ((abs = malloc(n)) == NULL)
		return -1;
	if (pattern[0] == '/')
		snprintf(abs, n, "%s", pattern);
	else if (pattern[0] == '\0')
		snprintf(abs, n, "%s", cwd);
	else
		snprintf(abs, n, "%s%s%s", cwd, strcmp(cwd, "/") == 0 ? "" : "/", pattern);
	if (!is_glob(abs)) {
		n = strlen(abs) + 128;
		if (p->error == NULL && (p->error = malloc(n)) != NULL)
			snprintf(p->error, n, "unreadable glob `%s` cannot be safely expanded; "
			    "use a pattern with a non-root directory prefix", abs);
		free(abs);
		return 0;
	}
	lit_end = abs + strcspn(abs, "*?[");
	for (slash = lit_end; slash > abs && *slash != '/'; slash--)
		;
	*slash = '\0';
	eff = effective_path(slash == abs ? "/" : abs, &exists);
	*slash = '/';
	if (eff == NULL) {
		free(abs);
		return -1;
	}
	n = strlen(eff) + strlen(slash) + 1;
	if ((full = malloc(n)) != NULL)
		snprintf(full, n, "%s%s", strcmp(eff, "/") == 0 ? "" : eff, slash);
	/* the literal directory as written, when links led elsewhere (drop_linked) */
	*slash = '\0';
	given = strcmp(eff, slash == abs ? "/" : abs) != 0 ? strdup(slash == abs ? "/" : abs) :
	    NULL;
	free(eff);
	free(abs);
	if (full == NULL || (r = add_rule(p, full, FS_ACCESS_DENY, R_GLOB)) == -1) {
		free(full);
		free(given);
		return -1;
	}
	free(full);
	p->rules[p->nrules - 1].given = given;
	return 0;
}

/* A relative subpath that stays inside its root, or NULL. */
static int
subpath_ok(const char *s)
{
	const char	*seg;

	if (s[0] == '/' || s[0] == '\0')
		return 0;
	for (seg = s; seg != NULL; seg = strchr(seg, '/') ? strchr(seg, '/') + 1 : NULL)
		if (strncmp(seg, "..", 2) == 0 && (seg[2] == '/' || seg[2] == '\0'))
			return 0;
	return 1;
}

static int
add_special(struct fs_policy *p, const struct fsp_ctx *c, const struct fsp_entry *en)
{
	const char	*tmp;
	char		 buf[PATH_MAX];
	size_t		 i;
	struct stat	 st;

	switch (en->special) {
	case S_ROOT:
		return en->access == FS_ACCESS_DENY ? 0 : add_rule(p, "/", en->access, 0);
	case S_PROJECT_ROOTS:
		for (i = 0; i < c->nroots; i++) {
			if (en->subpath == NULL) {
				if (add_rule(p, c->roots[i], en->access, 0) == -1)
					return -1;
			} else if (subpath_ok(en->subpath)) {
				snprintf(buf, sizeof(buf), "%s/%s", c->roots[i], en->subpath);
				if (add_rule(p, buf, en->access, 0) == -1)
					return -1;
			}
		}
		return 0;
	case S_TMPDIR:
		tmp = getenv("TMPDIR");
		if (tmp == NULL || tmp[0] != '/')
			return 0;
		return add_rule(p, tmp, en->access, 0);
	case S_SLASH_TMP:
		if (stat("/tmp", &st) == -1 || !S_ISDIR(st.st_mode))
			return 0;
		return add_rule(p, "/tmp", en->access, 0);
	case S_MINIMAL:		/* the platform roots are always there */
	case S_CWD:		/* grants nothing in the reference's 0.169.0 fs helper */
	case S_UNKNOWN:
		return 0;
	}
	return 0;
}

/* Full-disk write without narrowing entries needs no sandbox at all. */
static int
unrestricted(const struct fsp_ctx *c)
{
	size_t	i, j;
	int	root_write = 0;

	for (i = 0; i < c->nentries; i++)
		if (c->entries[i].kind == E_SPECIAL && c->entries[i].special == S_ROOT &&
		    c->entries[i].access == FS_ACCESS_WRITE)
			root_write = 1;
	if (!root_write)
		return 0;
	for (i = 0; i < c->nentries; i++) {
		const struct fsp_entry *en = &c->entries[i];
		int shadowed = 0;
		if (en->access == FS_ACCESS_WRITE)
			continue;
		if (en->kind == E_SPECIAL && (en->special == S_MINIMAL ||
		    en->special == S_UNKNOWN || (en->special == S_ROOT &&
		    en->access == FS_ACCESS_READ)))
			continue;
		for (j = 0; j < c->nentries; j++) {
			const struct fsp_entry *w = &c->entries[j];
			if (w->access != FS_ACCESS_WRITE || w->kind != en->kind)
				continue;
			if (en->kind == E_SPECIAL ? w->special == en->special :
			    (w->path != NULL && en->path != NULL &&
			    strcmp(w->path, en->path) == 0))
				shadowed = 1;
		}
		if (!shadowed)
			return 0;
	}
	return 1;
}

/*
 * A platform path, resolved and as written: where it is a symlink (merged
 * /usr), the link is shown too.  Without one on the way, the two are the
 * same rule, made once.
 */
static int
add_platform(struct fs_policy *p, const char *path, enum fs_access a, int flags)
{
	if (fs_path_is_real(path))
		return add_rule(p, path, a, R_IMPLICIT | R_LITERAL | R_REAL);
	if (add_rule(p, path, a, R_IMPLICIT | flags) == -1 ||
	    add_rule(p, path, a, R_IMPLICIT | R_LITERAL) == -1)
		return -1;
	return 0;
}

void
fs_policy_own_path(const char *path, int readonly)
{
	char	cwd[PATH_MAX];

	if (nown_paths == OWN_MAX || path == NULL || path[0] == '\0')
		return;
	/* as given now: a relative one from where execd starts */
	if (path[0] != '/' && (getcwd(cwd, sizeof(cwd)) == NULL ||
	    asprintf(&own_paths[nown_paths].path, "%s/%s", cwd, path) == -1))
		return;
	if (path[0] == '/' && (own_paths[nown_paths].path = strdup(path)) == NULL)
		return;
	own_paths[nown_paths++].readonly = readonly;
}

static int
own_add(struct fs_policy *p, const char *path, int readonly)
{
	int	exists;

	if (p->nown == OWN_MAX)
		return 0;
	if ((p->own[p->nown].path = effective_path(path, &exists)) == NULL)
		return -1;
	p->own[p->nown++].readonly = readonly;
	return 0;
}

/*
 * What sandboxed commands never see of execd's (sandbox_hide): its state
 * directory, the proxy's keys and control socket, its log when its stderr
 * is a file.  A request in the same sandbox sees no more.
 */
static int
add_own(struct fs_policy *p)
{
	size_t	i;

	for (i = 0; i < nown_paths; i++)
		if (own_add(p, own_paths[i].path, own_paths[i].readonly) == -1)
			return -1;
	return 0;
}

/* Is path inside an entry's writable root (where a sandboxed command makes what it likes)? */
static int
in_write_root(const struct fs_policy *p, const char *path)
{
	size_t	i;

	for (i = 0; i < p->nrules; i++)
		if (p->rules[i].access == FS_ACCESS_WRITE && !p->rules[i].is_glob &&
		    !p->rules[i].implicit && fs_path_covers(p->rules[i].path, path))
			return 1;
	return 0;
}

struct link_find {
	const struct fs_policy	*p;
	char			*link;
};

/* A symlink in a writable root: found; /proc's links are descriptors, not paths. */
static int
writable_link_visit(void *arg, const char *cur, const struct stat *st)
{
	struct link_find	*f = arg;

	if (st == NULL || !S_ISLNK(st->st_mode))
		return 0;
	if (in_write_root(f->p, cur)) {
		memcpy(f->link, cur, strlen(cur) + 1);
		return 1;
	}
	return fs_path_covers("/proc", cur) ? -1 : 0;
}

/*
 * The first symlink on the way to given that lies in a writable root,
 * into link (PATH_MAX): 1; 0 if none.  Each link met is followed
 * component by component, so that one inside another's target counts too.
 */
static int
writable_link(const struct fs_policy *p, const char *given, char *link)
{
	struct link_find	f = { p, link };

	return fs_path_walk(given, writable_link_visit, &f);
}

/*
 * An entry named a place below a writable root and was led elsewhere: by a
 * link in that root.  Decided on the names the rules were made from, not
 * on a second look (writable_link), which a command flipping a directory
 * and a link there could answer with the directory: into link, 1; else 0.
 */
static int
named_in_write_root(const struct fs_policy *p, const struct fs_rule *r, char *link)
{
	const struct fs_rule	*w;
	size_t			 i;

	for (i = 0; i < p->nrules; i++) {
		w = &p->rules[i];
		if (w != r && w->access == FS_ACCESS_WRITE && !w->is_glob && !w->implicit &&
		    strcmp(w->path, r->given) != 0 && fs_path_covers(w->path, r->given) &&
		    strlen(r->given) < PATH_MAX) {
			memcpy(link, r->given, strlen(r->given) + 1);
			return 1;
		}
	}
	return 0;
}

/*
 * An entry whose path leads through a symlink in a writable root names
 * whatever the sandboxed command last pointed that link at: a command
 * that makes one where an entry names a missing path (or swaps one in)
 * would have the entry grant the link's target, to the fs requests and
 * the next command of the same sandbox.  Such a grant is dropped.  A read
 * entry that narrows a writable root cannot be dropped without widening
 * it, nor can a deny (or a deny glob's directory) be trusted to still
 * name what it meant: the policy is refused, in the reference's words for
 * the same case of its protected names.
 */
static int
drop_linked(struct fs_policy *p)
{
	char	 link[PATH_MAX];
	char	*drop;
	size_t	 i, j, n;

	/* decided on the rules as built, then compacted: a check reads every rule */
	if ((drop = calloc(p->nrules ? p->nrules : 1, 1)) == NULL)
		return -1;
	for (i = 0; i < p->nrules; i++) {
		struct fs_rule *r = &p->rules[i];

		if (r->given == NULL || r->implicit || (!named_in_write_root(p, r, link) &&
		    !writable_link(p, r->given, link)))
			continue;
		/* a deny (the place it meant may be elsewhere now) or a read-only carve-out */
		if ((r->access == FS_ACCESS_DENY || (r->access == FS_ACCESS_READ &&
		    in_write_root(p, r->path))) && p->error == NULL) {
			n = strlen(r->given) + strlen(link) + 96;
			if ((p->error = malloc(n)) == NULL) {
				free(drop);
				return -1;
			}
			snprintf(p->error, n, "cannot enforce sandbox %s path %s because it crosses "
			    "writable symlink %s", r->access == FS_ACCESS_DENY ? "denied" :
			    "read-only", r->given, link);
		}
		/* a deny stays, denied as far as it goes */
		drop[i] = r->access != FS_ACCESS_DENY;
	}
	for (i = j = 0; i < p->nrules; i++) {
		if (!drop[i]) {
			p->rules[j++] = p->rules[i];
			continue;
		}
		free(p->rules[i].path);
		free(p->rules[i].given);
	}
	p->nrules = j;
	free(drop);
	return 0;
}

static int
build(struct fs_policy *p, const struct fsp_ctx *c)
{
	const struct fsp_entry	*en;
	char			 buf[PATH_MAX];
	size_t			 i, j, n;

	for (i = 0; platform_roots[i] != NULL; i++)
		if (add_platform(p, platform_roots[i], FS_ACCESS_READ, 0) == -1)
			return -1;
	for (i = 0; platform_devices[i] != NULL; i++)
		if (add_platform(p, platform_devices[i], FS_ACCESS_WRITE, R_DEVICE) == -1)
			return -1;
	if (add_own(p) == -1)
		return -1;
	for (i = 0; i < c->nentries; i++) {
		en = &c->entries[i];
		if (en->kind == E_PATH && en->path != NULL) {
			if (add_rule(p, en->path, en->access, 0) == -1)
				return -1;
		} else if (en->kind == E_GLOB && en->access == FS_ACCESS_DENY) {
			if (add_glob(p, c->cwd, en->path) == -1)
				return -1;
		} else if (en->kind == E_SPECIAL && add_special(p, c, en) == -1)
			return -1;
	}
	if (drop_linked(p) == -1)
		return -1;
	/* a writable root keeps its repository and agent metadata read-only */
	n = p->nrules;
	for (i = 0; i < n; i++) {
		if (p->rules[i].access != FS_ACCESS_WRITE || p->rules[i].is_glob ||
		    p->rules[i].implicit)
			continue;
		for (j = 0; fs_protected_names[j] != NULL; j++) {
			snprintf(buf, sizeof(buf), "%s/%s", strcmp(p->rules[i].path, "/") == 0 ?
			    "" : p->rules[i].path, fs_protected_names[j]);
			if (add_rule(p, buf, FS_ACCESS_READ, R_IMPLICIT | R_KEEP_MISSING) == -1)
				return -1;
		}
	}
	return 0;
}

int
fs_policy_parse(json_t *sandbox, struct fs_policy **out, struct jx_err *e, int *code)
{
	struct fsp_ctx	c;
	int		r = 0;

	*out = NULL;
	*code = RPC_INVALID_PARAMS;
	if (sandbox == NULL || json_is_null(sandbox))
		return 0;
	if (fsp_decode(sandbox, &c, e, code) == -1)
		r = -1;
	else if (c.restricted && !unrestricted(&c) &&
	    ((*out = calloc(1, sizeof(**out))) == NULL || build(*out, &c) == -1)) {
		fs_policy_free(*out);
		*out = NULL;
		snprintf(e->msg, sizeof(e->msg), "out of memory");
		*code = RPC_INTERNAL_ERROR;
		r = -1;
	}
	fsp_ctx_free(&c);
	return r;
}

void
fs_policy_free(struct fs_policy *p)
{
	size_t	i;

	if (p == NULL)
		return;
	for (i = 0; i < p->nrules; i++) {
		free(p->rules[i].path);
		free(p->rules[i].given);
	}
	for (i = 0; i < p->nown; i++)
		free(p->own[i].path);
	free(p->rules);
	free(p->error);
	free(p);
}
