/*
 * The files environmentConfig/read answers from, found and read as the
 * reference finds them: the system file and the legacy managed one under
 * /etc/codex, the user's under the Codex home, and the project's
 * .codex/config.toml in each trusted directory from the project root down
 * to cwd.  Requirements come from /etc/codex/requirements.toml and from
 * the legacy managed file, turned into allowed_* lists.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "envconfig/envconfig_int.h"
#include "sandbox/sandbox.h"
#include "rpc/errno_text.h"

#define SYSTEM_DIR	"/etc/codex"

/* How the reference words a file's failure: it differs by layer. */
enum style { ST_CONFIG, ST_PROJECT, ST_REQUIREMENTS };

/* Keys a project layer may not set: the reference drops them. */
static const char *const project_dropped[] = {
	"profile", "profiles", "model_provider", "model_providers",
	"openai_base_url", "chatgpt_base_url", "notify", NULL
};

static const char *const approval_policies[] = {
	"untrusted", "on-failure", "on-request", "granular", "never", NULL
};

static const char *const sandbox_modes[] = {
	"read-only", "workspace-write", "danger-full-access", NULL
};

/*
 * Is fd (opened as path) a project layer a sandboxed command could have
 * written?  Then it is no such file (sandbox_wrote: execd(8) SECURITY),
 * whatever it holds: neither read nor, unreadable, a failure of the read.
 */
static int
planted(int project, int fd, const char *path)
{
	if (!project || !sandbox_wrote(fd, path))
		return 0;
	log_warnx("environmentConfig/read: %s left out: a sandboxed command could have "
	    "written it", path);
	close(fd);
	return 1;
}

/* 1 with *buf (malloc'd) and *len, 0 when there is no such file, -1 with err. */
static int
read_file(const char *path, int project, char **buf, size_t *len, char *err, size_t errlen)
{
	struct stat	st;
	char		text[128], self[64];
	ssize_t		r = 0;
	size_t		got = 0, at, seq;
	int		fd, pfd, e;

	*buf = NULL;
	/*
	 * Looked at before it is opened for reading: a layer may be a link a
	 * sandboxed command planted, and opening some devices acts (a watchdog
	 * arms, a tape rewinds).  Only a regular file is read, through the
	 * descriptor that was looked at.
	 */
	if ((pfd = open(path, O_PATH | O_CLOEXEC)) == -1) {
		if ((e = errno) == ENOENT || e == ENOTDIR)
			return 0;
		snprintf(err, errlen, "%s", errno_text(e, text, sizeof(text)));
		return -1;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	if (fstat(pfd, &st) == -1 || !S_ISREG(st.st_mode)) {
		if (planted(project, pfd, path))
			return 0;
		/* what opening it to read would have said first (a mode 000 directory) */
		if (faccessat(AT_FDCWD, self, R_OK, AT_EACCESS) == -1) {
			e = errno;
			snprintf(err, errlen, "%s", errno_text(e, text, sizeof(text)));
		} else
			snprintf(err, errlen, "path `%s` is not a file", path);
		close(pfd);
		return -1;
	}
	if ((fd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)) == -1) {
		e = errno;
		if (planted(project, pfd, path))
			return 0;
		close(pfd);
		snprintf(err, errlen, "%s", errno_text(e, text, sizeof(text)));
		return -1;
	}
	close(pfd);
	if ((*buf = malloc(TOML_MAX_INPUT + 1)) == NULL) {
		snprintf(err, errlen, "out of memory");
		close(fd);
		return -1;
	}
	while (got <= TOML_MAX_INPUT &&
	    (r = read(fd, *buf + got, TOML_MAX_INPUT + 1 - got)) != 0) {
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			snprintf(err, errlen, "%s", errno_text(errno, text, sizeof(text)));
			break;
		}
		got += (size_t)r;
	}
	/* after the read: a write that reached what was read has changed ctime first */
	if (planted(project, fd, path)) {
		free(*buf);
		*buf = NULL;
		return 0;
	}
	close(fd);
	if (r == -1 || got > TOML_MAX_INPUT || toml_utf8_check(*buf, got, &at, &seq) == -1) {
		if (got > TOML_MAX_INPUT)
			snprintf(err, errlen, "file larger than %u bytes", TOML_MAX_INPUT);
		else if (r != -1 && seq == 0)
			snprintf(err, errlen, "incomplete utf-8 byte sequence from index %zu", at);
		else if (r != -1)
			snprintf(err, errlen, "invalid utf-8 sequence of %zu bytes from index %zu",
			    seq, at);
		free(*buf);
		*buf = NULL;
		return -1;
	}
	*len = got;
	return 1;
}

/* "TOML parse error at line 1, column 5" and the line with a caret under it. */
static void
long_form(const struct toml_error *te, char *out, size_t len)
{
	char	num[24], pad[24], caret[2 * sizeof(te->text)];
	size_t	i, n;

	snprintf(num, sizeof(num), "%zu", te->line);
	memset(pad, ' ', strlen(num));
	pad[strlen(num)] = '\0';
	for (i = 0; i + 1 < te->col && i < sizeof(te->text); i++)
		caret[i] = ' ';
	/* as the reference: the span's bytes, at most to the line's end, at least one */
	n = te->textlen > te->col - 1 ? te->textlen - (te->col - 1) : 0;
	n = te->span < n ? te->span : n;
	n = n < 1 ? 1 : n > sizeof(te->text) ? sizeof(te->text) : n;
	memset(caret + i, '^', n);
	caret[i + n] = '\0';
	snprintf(out, len, "TOML parse error at line %zu, column %zu\n%s |\n%s | %s\n%s | %s\n%s\n",
	    te->line, te->col, pad, num, te->text, pad, caret, te->msg);
}

/*
 * The document at path: 1 read, 0 absent, -1 with err in the layer's words.
 * doc NULL: only read it (an untrusted project's file must still be readable).
 */
static int
load(const char *path, enum style st, struct toml_node **doc, char *err, size_t errlen)
{
	struct toml_error	 te;
	char			*buf, why[PATH_MAX + 64], parse[8192];
	size_t			 len = 0;
	int			 rc;

	if (doc != NULL)
		*doc = NULL;
	if ((rc = read_file(path, st == ST_PROJECT, &buf, &len, why, sizeof(why))) <= 0) {
		if (rc == -1)
			snprintf(err, errlen, "Failed to read %s file %s: %s",
			    st == ST_REQUIREMENTS ? "requirements" : st == ST_PROJECT ?
			    "project config" : "config", path, why);
		return rc;
	}
	if (doc == NULL) {
		free(buf);
		return 1;
	}
	*doc = toml_parse(buf, len, &te);
	free(buf);
	if (*doc != NULL)
		return 1;
	if (st == ST_CONFIG) {
		snprintf(err, errlen, "%s:%zu:%zu: %s", path, te.line, te.col, te.msg);
		return -1;
	}
	long_form(&te, parse, sizeof(parse));
	snprintf(err, errlen, st == ST_PROJECT ? "Error parsing project config file %s: %s" :
	    "failed to parse requirements layer %s: %s", path, parse);
	return -1;
}

static int
add_layer(struct ec_layers *ls, const char *source, const char *base_dir,
    struct toml_node *doc, int system)
{
	struct ec_layer	*v;

	if ((v = reallocarray(ls->v, ls->n + 1, sizeof(*v))) == NULL) {
		toml_free(doc);
		return -1;
	}
	ls->v = v;
	v += ls->n;
	v->doc = doc;
	v->system = system;
	v->source = strdup(source);
	v->base_dir = strdup(base_dir);
	ls->n++;
	return v->source == NULL || v->base_dir == NULL ? -1 : 0;
}

void
ec_layers_free(struct ec_layers *ls)
{
	size_t	i;

	for (i = 0; i < ls->n; i++) {
		free(ls->v[i].source);
		free(ls->v[i].base_dir);
		toml_free(ls->v[i].doc);
	}
	free(ls->v);
	ls->v = NULL;
	ls->n = 0;
}

/* A string value at key of t, or NULL. */
static const char *
str_at(const struct toml_node *t, const char *key)
{
	const struct toml_node	*v = toml_table_get(t, key, strlen(key));

	return v != NULL && v->kind == TOML_STRING ? v->str : NULL;
}

/* projects."<dir>".trust_level of the user configuration, or NULL. */
static const char *
trust_at(const struct toml_node *user, const char *dir)
{
	const struct toml_node	*projects = toml_table_get(user, "projects", 8);

	return str_at(toml_table_get(projects, dir, strlen(dir)), "trust_level");
}

/* The trust of dir as named, else of where its symlinks lead, or NULL. */
static const char *
trust_of(const struct toml_node *user, const char *dir)
{
	const char	*trust;
	char		 real[PATH_MAX];

	if ((trust = trust_at(user, dir)) != NULL || realpath(dir, real) == NULL)
		return trust;
	return trust_at(user, real);
}

static int
has_marker(const char *dir, const struct toml_node *markers)
{
	char		path[PATH_MAX], head[PATH_MAX];
	struct stat	st;
	size_t		i, n;
	const char	*m;

	for (i = 0; i < markers->n; i++) {
		if (markers->kid[i]->kind != TOML_STRING)
			continue;
		m = markers->kid[i]->str;
		/* the reference normalises the path: "ROOT/" names a file ROOT too */
		for (n = strlen(m); n > 1 && m[n - 1] == '/'; n--)
			;
		if ((size_t)snprintf(path, sizeof(path), "%s/%.*s", strcmp(dir, "/") == 0 ? "" :
		    dir, (int)n, m) >= sizeof(path) || stat(path, &st) == -1 || sandbox_made(path))
			continue;
		/* a .git directory marks a repository only with its HEAD */
		if (strcmp(m, ".git") == 0 && S_ISDIR(st.st_mode) &&
		    ((size_t)snprintf(head, sizeof(head), "%s/HEAD", path) >= sizeof(head) ||
		    access(head, F_OK) == -1))
			continue;
		return 1;
	}
	return 0;
}

/* The length of the prefix of cwd that the first of markers found marks. */
static size_t
root_by(const char *cwd, const struct toml_node *markers)
{
	char			 dir[PATH_MAX];
	size_t			 len = strlen(cwd);

	if (len >= sizeof(dir))
		return strlen(cwd);
	memcpy(dir, cwd, len + 1);
	for (;;) {
		if (has_marker(dir, markers))
			return len;
		if (len <= 1)
			return strlen(cwd);
		while (len > 1 && dir[len - 1] != '/')
			len--;
		if (len > 1)
			len--;
		dir[len] = '\0';
	}
}

static int
drop_keys(struct toml_node *doc)
{
	size_t	i, j;

	for (i = 0; project_dropped[i] != NULL; i++)
		for (j = doc->n; j-- > 0; )
			if (strcmp(doc->key[j].s, project_dropped[i]) == 0) {
				toml_free(doc->kid[j]);
				free(doc->key[j].s);
				memmove(doc->kid + j, doc->kid + j + 1, (doc->n - j - 1) *
				    sizeof(*doc->kid));
				memmove(doc->key + j, doc->key + j + 1, (doc->n - j - 1) *
				    sizeof(*doc->key));
				doc->n--;
			}
	return toml_table_reindex(doc);
}

/* The length of the prefix of cwd that is its project root. */
static size_t
project_root(const char *cwd, const struct toml_node *user)
{
	const struct toml_node	*markers = toml_table_get(user, "project_root_markers", 20);
	static struct toml_node	 dflt_kid = { .kind = TOML_STRING, .str = ".git", .len = 4 };
	static struct toml_node	*dflt_kids[] = { &dflt_kid };
	static struct toml_node	 dflt = { .kind = TOML_ARRAY, .kid = dflt_kids, .n = 1 };

	if (markers == NULL || markers->kind != TOML_ARRAY)
		markers = &dflt;
	return root_by(cwd, markers);
}

/*
 * The length of the prefix of cwd that is its git repository's root, for
 * the trust it lends: the reference finds it by a .git directory with its
 * HEAD only (a .git file, even one naming a real git directory, is no
 * repository there, though it is a root marker).
 */
static size_t
git_root(const char *cwd)
{
	static struct toml_node	 git_kid = { .kind = TOML_STRING, .str = ".git/HEAD", .len = 9 };
	static struct toml_node	*git_kids[] = { &git_kid };
	static struct toml_node	 git = { .kind = TOML_ARRAY, .kid = git_kids, .n = 1 };

	size_t			 len = root_by(cwd, &git);

	/* none found: root_by's answer is cwd itself, which lends nothing */
	return len == strlen(cwd) && !has_marker(cwd, &git) ? 0 : len;
}

/* One project directory's layer, when it is trusted and has one. */
static int
project_dir(const char *dir, const char *root, const char *git,
    const struct toml_node *user, struct ec_layers *config, char *err, size_t errlen)
{
	char			 base[PATH_MAX], path[PATH_MAX + 16], src[PATH_MAX + 32];
	const char		*trust = trust_of(user, dir);
	struct toml_node	*doc;
	struct stat		 st;
	int			 rc;

	if (trust == NULL)
		trust = trust_of(user, root);
	if (trust == NULL && git != NULL)
		trust = trust_of(user, git);
	if ((size_t)snprintf(base, sizeof(base), "%s/.codex", strcmp(dir, "/") == 0 ? "" : dir)
	    >= sizeof(base))
		return 0;
	/* a .codex the reference cannot see is none: it looks before it reads */
	if (stat(base, &st) == -1 || !S_ISDIR(st.st_mode))
		return 0;
	snprintf(path, sizeof(path), "%s/config.toml", base);
	/* it reads the file whatever the trust; only a trusted one is parsed */
	if (trust == NULL || strcmp(trust, "trusted") != 0)
		return load(path, ST_PROJECT, NULL, err, errlen) == -1 ? -1 : 0;
	if ((rc = load(path, ST_PROJECT, &doc, err, errlen)) <= 0)
		return rc;
	if (drop_keys(doc) == -1) {
		toml_free(doc);
		return -1;
	}
	snprintf(src, sizeof(src), "project (%s)", path);
	/* a command may not take it away from later reads either */
	sandbox_layer_read(base);
	return add_layer(config, src, base, doc, 0);
}

static int
projects(const char *cwd, const struct toml_node *user, struct ec_layers *config,
    char *err, size_t errlen)
{
	char	root[PATH_MAX], git[PATH_MAX], dir[PATH_MAX];
	size_t	rlen = project_root(cwd, user), glen = git_root(cwd), len;

	if (strlen(cwd) >= sizeof(dir))
		return 0;
	memcpy(root, cwd, rlen);
	root[rlen] = '\0';
	/* the repository's root (by .git, whatever the markers) lends its trust too */
	memcpy(git, cwd, glen);
	git[glen] = '\0';
	for (len = rlen; ; ) {
		memcpy(dir, cwd, len);
		dir[len] = '\0';
		if (project_dir(dir, root, glen > 0 ? git : NULL, user, config, err, errlen) == -1)
			return -1;
		if (cwd[len] == '\0')
			return 0;
		for (len++; cwd[len] != '\0' && cwd[len] != '/'; len++)
			;
	}
}

/* A one-string array under key in t. */
static struct toml_node *
list_at(struct toml_node *t, const char *key)
{
	struct toml_node	*a;

	if ((a = toml_table_new()) == NULL)
		return NULL;
	a->kind = TOML_ARRAY;
	return toml_table_add(t, key, strlen(key), a) == -1 ? NULL : a;
}

static int
list_add(struct toml_node *a, const char *s)
{
	struct toml_node	*v;

	if ((v = calloc(1, sizeof(*v))) == NULL || (v->str = strdup(s)) == NULL) {
		free(v);
		return -1;
	}
	v->kind = TOML_STRING;
	v->len = strlen(s);
	return toml_array_add(a, v);
}

/* The legacy managed file's requirements: allowed_approval_policies, allowed_sandbox_modes. */
static int
managed_requirements(const struct toml_node *managed, struct toml_node **out, char *err,
    size_t errlen)
{
	const char		*approval = str_at(managed, "approval_policy");
	const char		*mode = str_at(managed, "sandbox_mode");
	struct toml_node	*a;
	size_t			 i, j;

	for (i = 0; mode != NULL && sandbox_modes[i] != NULL; i++)
		if (strcmp(mode, sandbox_modes[i]) == 0)
			break;
	if (mode != NULL && sandbox_modes[i] == NULL) {
		snprintf(err, errlen, "Failed to parse config requirements as TOML: unknown "
		    "variant `%s`, expected one of `read-only`, `workspace-write`, "
		    "`danger-full-access`\nin `sandbox_mode`\n", mode);
		return -1;
	}
	for (j = 0; approval != NULL && approval_policies[j] != NULL; j++)
		if (strcmp(approval, approval_policies[j]) == 0)
			break;
	if (approval != NULL && approval_policies[j] == NULL) {
		snprintf(err, errlen, "Failed to parse config requirements as TOML: unknown "
		    "variant `%s`, expected one of `untrusted`, `on-failure`, `on-request`, "
		    "`granular`, `never`\nin `approval_policy`\n", approval);
		return -1;
	}
	if ((*out = toml_table_new()) == NULL)
		return -1;
	if (approval != NULL && ((a = list_at(*out, "allowed_approval_policies")) == NULL ||
	    list_add(a, approval) == -1))
		return -1;
	if (mode != NULL && ((a = list_at(*out, "allowed_sandbox_modes")) == NULL ||
	    (strcmp(mode, "read-only") != 0 && list_add(a, "read-only") == -1) ||
	    list_add(a, mode) == -1))
		return -1;
	return 0;
}

static int
system_layers(struct ec_layers *config, struct toml_node **managed, char *err, size_t errlen)
{
	struct toml_node	*doc;
	int			 rc;

	if ((rc = load(SYSTEM_DIR "/config.toml", ST_CONFIG, &doc, err, errlen)) == -1)
		return -1;
	if (rc == 1 && add_layer(config, "system (" SYSTEM_DIR "/config.toml)", SYSTEM_DIR,
	    doc, 1) == -1)
		return -1;
	return load(SYSTEM_DIR "/managed_config.toml", ST_CONFIG, managed, err, errlen) == -1 ?
	    -1 : 0;
}

int
ec_load(const char *cwd, const char *codex_home, struct ec_layers *config,
    struct ec_layers *reqs, char *err, size_t errlen)
{
	struct toml_node	*user = NULL, *managed = NULL, *converted = NULL, *doc;
	char			 path[PATH_MAX + 16], src[PATH_MAX + 32];
	int			 rc = -1;

	snprintf(err, errlen, "out of memory");
	if (system_layers(config, &managed, err, errlen) == -1)
		goto done;
	snprintf(path, sizeof(path), "%s/config.toml", codex_home);
	if (load(path, ST_CONFIG, &user, err, errlen) == -1)
		goto done;
	snprintf(src, sizeof(src), "user (%s)", path);
	if (user != NULL && add_layer(config, src, codex_home, toml_clone(user), 0) == -1)
		goto done;
	/*
	 * The reference's order: the legacy file's requirements and
	 * requirements.toml's text, then the projects of the system's and the
	 * user's files merged and typed, requirements.toml's typed fields, then
	 * the projects' files.
	 */
	if (managed != NULL && managed_requirements(managed, &converted, err, errlen) == -1)
		goto done;
	if ((rc = load(SYSTEM_DIR "/requirements.toml", ST_REQUIREMENTS, &doc, err, errlen))
	    == -1 || (rc == 1 && add_layer(reqs, SYSTEM_DIR "/requirements.toml",
	    SYSTEM_DIR, doc, 1) == -1)) {
		rc = -1;
		goto done;
	}
	rc = -1;
	/* typed: the projects, then requirements.toml's fields */
	if (ec_projects_ok(config->n > 0 && config->v[0].system ? config->v[0].doc : NULL, user,
	    err, errlen) == -1 || (reqs->n > 0 && ec_requirements_ok(reqs->v[0].doc, err,
	    errlen) == -1))
		goto done;
	if (projects(cwd, user, config, err, errlen) == -1)
		goto done;
	if (managed != NULL) {
		if (add_layer(reqs, SYSTEM_DIR "/managed_config.toml", SYSTEM_DIR, converted, 0)
		    == -1)
			goto done;
		converted = NULL;
		rc = add_layer(config, "legacy managed_config.toml (" SYSTEM_DIR
		    "/managed_config.toml)", SYSTEM_DIR, managed, 0);
		managed = NULL;
		if (rc == -1)
			goto done;
	}
	rc = 0;
done:
	toml_free(user);
	toml_free(managed);
	toml_free(converted);
	return rc;
}
