/*
 * What the snapshot layer knows of the shells: the capture scripts, the
 * reading of their output, the restored command's environment.
 *
 * A capture writes, after whatever the login profile printed:
 *   NUL "EXECD-SNAPSHOT" NUL  [what the rc file prints]  "# Snapshot file"
 *   script  NUL  (NAME=value NUL)*  "EXECD-SNAPSHOT-END" NUL
 * and must exit 0.  As in the reference, the script is what follows the
 * first "# Snapshot file" after the start before the next NUL: an rc file
 * that prints a NUL fails the capture, one that prints the mark itself has
 * the rest sourced too (the rc file is the user's own code either way);
 * what the login profile printed before the start counts for nothing.  A
 * shell string holds no NUL, so the environment's entries cannot run into
 * each other; the end mark tells a whole capture from a cut one.
 */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/snapshot.h"
#include "snapshot/snapshot_int.h"

#define START_MARK	"EXECD-SNAPSHOT"
#define BEGIN_MARK	"# Snapshot file"
#define STATE_MARK	"EXECD-SNAPSHOT-STATE"
#define START		"printf '\\0" START_MARK "\\0'\n"
#define STATE		"printf '\\0" STATE_MARK "\\0'\n"
#define END_MARK	"EXECD-SNAPSHOT-END"

/*
 * The state the captures print is the reference's, line for line: the
 * restored shell runs it, whatever an rc file printed after its own
 * "# Snapshot file" runs with it, and an unclosed quote there pairs with
 * the same quote of the state as in the reference.  The helpers' names are
 * the reference's too: a profile that turns allexport on exports them.
 */
#define HELPER								\
	"__codex_snapshot_command() {\n"				\
	"  if command -v \"$1\" >/dev/null 2>&1; then\n"		\
	"    \"$@\"\n"							\
	"  else\n"							\
	"    command -p \"$@\"\n"					\
	"  fi\n"							\
	"}\n"
#define RUN		"__codex_snapshot_command "
#define COUNT		"| " RUN "sed '/^$/d' | " RUN "wc -l | " RUN "tr -d ' ')\n"
#define HEADER(say)							\
	STATE								\
	say " '" BEGIN_MARK "'\n"					\
	say " '# Unset all aliases to avoid conflicts with functions'\n"
#define ENDING(say)							\
	say " ''\n"							\
	say " \"case '' in '') ;; esac\"\n"				\
	say " '}'\n"							\
	"printf '\\0'\n"						\
	"env -0\n"							\
	"printf '" END_MARK "\\0'\n"

/* bash: ~/.bashrc too, as a login bash does not read it by itself */
static const char bash_capture[] =
	START
	"if [ -z \"${BASH_ENV-}\" ] && [ -n \"${HOME-}\" ] && [ -r \"$HOME/.bashrc\" ]; then\n"
	"  . \"$HOME/.bashrc\"\n"
	"fi\n"
	HEADER("echo")
	"echo 'unalias -a 2>/dev/null || true'\n"
	"shopt -p || true\n"
	"echo '# Functions'\n"
	"declare -f\n"
	"echo ''\n"
	"echo '{'\n"
	HELPER
	"bash_opts=$(set -o | " RUN "awk '$2==\"on\"{print $1}')\n"
	"bash_opt_count=$(printf '%s\\n' \"$bash_opts\" " COUNT
	"echo \"# setopts $bash_opt_count\"\n"
	"if [ -n \"$bash_opts\" ]; then\n"
	"  printf 'set -o %s\\n' $bash_opts\n"
	"fi\n"
	"echo ''\n"
	"alias_count=$(\\alias -p | " RUN "wc -l | " RUN "tr -d ' ')\n"
	"echo \"# aliases $alias_count\"\n"
	"\\alias -p\n"
	ENDING("echo");

static const char zsh_capture[] =
	START
	"if [[ -n \"${ZDOTDIR-}\" ]]; then\n"
	"  rc=\"$ZDOTDIR/.zshrc\"\n"
	"elif [[ -n \"${HOME-}\" ]]; then\n"
	"  rc=\"$HOME/.zshrc\"\n"
	"else\n"
	"  rc=\n"
	"fi\n"
	"[[ -r \"$rc\" ]] && . \"$rc\"\n"
	HEADER("print")
	"print 'unalias -a 2>/dev/null || true'\n"
	"print '# Functions'\n"
	"functions\n"
	"print ''\n"
	"print '{'\n"
	HELPER
	"setopt_count=$(setopt | " RUN "wc -l | " RUN "tr -d ' ')\n"
	"print \"# setopts $setopt_count\"\n"
	"setopt | " RUN "sed 's/^/setopt /'\n"
	"print ''\n"
	"alias_count=$(\\alias -L | " RUN "wc -l | " RUN "tr -d ' ')\n"
	"print \"# aliases $alias_count\"\n"
	"\\alias -L\n"
	ENDING("print");

/*
 * A POSIX sh lists no functions, and its aliases are not restored (the
 * reference's are not): its options and the environment, after the file
 * $ENV names (expanded, as an interactive sh would).
 */
static const char sh_capture[] =
	START
	"if [ -n \"${ENV-}\" ]; then\n"
	"  eval \"__execd_env=\\\"$ENV\\\"\"\n"
	"  if [ -r \"$__execd_env\" ] && [ ! -d \"$__execd_env\" ]; then\n"
	"    case $__execd_env in\n"
	"    /*) . \"$__execd_env\" ;;\n"
	"    *) . \"./$__execd_env\" ;;\n"
	"    esac\n"
	"  fi\n"
	"  unset __execd_env\n"
	"fi\n"
	STATE
	"echo '" BEGIN_MARK "'\n"
	"if [ -n \"${BASH_VERSINFO-}\" ]; then\n"
	"  echo '# Bash-backed sh'\n"
	"  shopt -p || true\n"
	"fi\n"
	"echo '# Unset all aliases to avoid conflicts with functions'\n"
	"unalias -a 2>/dev/null || true\n"
	"echo '# Functions'\n"
	"if command -v typeset >/dev/null 2>&1; then\n"
	"  typeset -f\n"
	"elif command -v declare >/dev/null 2>&1; then\n"
	"  declare -f\n"
	"fi\n"
	"echo ''\n"
	HELPER
	"if set -o >/dev/null 2>&1; then\n"
	"  sh_opts=$(set -o | " RUN "awk '$2==\"on\"{print $1}')\n"
	"  sh_opt_count=$(printf '%s\\n' \"$sh_opts\" " COUNT
	"  echo \"# setopts $sh_opt_count\"\n"
	"  if [ -n \"$sh_opts\" ]; then\n"
	"    printf 'set -o %s\\n' $sh_opts\n"
	"  fi\n"
	"else\n"
	"  echo '# setopts 0'\n"
	"fi\n"
	"echo ''\n"
	"if alias >/dev/null 2>&1; then\n"
	"  alias_count=$(alias | " RUN "wc -l | " RUN "tr -d ' ')\n"
	"  echo \"# aliases $alias_count\"\n"
	"  alias\n"
	"  echo ''\n"
	"else\n"
	"  echo '# aliases 0'\n"
	"fi\n"
	"printf '\\0'\n"
	"env -0\n"
	"printf '" END_MARK "\\0'\n";

/*
 * How a restored shell starts, as the reference starts it: no startup
 * file runs again (bash -p, zsh -f, a non-login sh), then the snapshot.
 */
static const char restore_source[] =
	"if ! . /dev/fd/15 >/dev/null; then printf 'failed to restore shell snapshot\\n' >&2; fi\n";
static const char bash_restore[] = "set +o privileged\n";
static const char zsh_restore[] = "setopt RCS\n";

int
snapshot_shell_supported(const char *name)
{
	return snapshot_capture_script(name) != NULL;
}

const char *
snapshot_capture_script(const char *name)
{
	if (strcmp(name, "bash") == 0)
		return bash_capture;
	if (strcmp(name, "zsh") == 0)
		return zsh_capture;
	if (strcmp(name, "sh") == 0)
		return sh_capture;
	return NULL;
}

const char *
snapshot_restore_flag(const char *name)
{
	if (strcmp(name, "bash") == 0)
		return "-pc";
	if (strcmp(name, "zsh") == 0)
		return "-fc";
	return "-c";
}

#define STATE_VAR	"__CODEX_SHELL_SNAPSHOT_STATE_"
#define STATE_CHUNK	(60 * 1024)	/* the reference's bound on one variable */

int
snapshot_uses_fd(const char *name)
{
	return strcmp(name, "sh") != 0;
}

/* The state's chunks for a sh, as the reference cuts them: at most 60 KiB, whole characters. */
static size_t
state_chunk(const char *p, size_t left)
{
	size_t	n = left < STATE_CHUNK ? left : STATE_CHUNK;

	while (n > 0 && n < left && ((unsigned char)p[n] & 0xc0) == 0x80)
		n--;
	return n == 0 ? (left < STATE_CHUNK ? left : STATE_CHUNK) : n;
}

static size_t
state_vars(const struct snapshot *s)
{
	size_t	off = 0, n = 0;

	while (off < s->script_len) {
		off += state_chunk(s->script + off, s->script_len - off);
		n++;
	}
	return n;
}

/*
 * sh keeps no descriptor past 9: as in the reference, its state comes in
 * variables the restore unsets before it evaluates them, in two lines.
 */
static char *
sh_prefix(const struct snapshot *s)
{
	size_t	 n = state_vars(s), i, len = 128 + n * 2 * (sizeof(STATE_VAR) + 24);
	char	*out, *p;

	if ((out = malloc(len)) == NULL)
		return NULL;
	p = out + snprintf(out, len, "if ! eval \"unset");
	for (i = 0; i < n; i++)
		p += snprintf(p, len - (size_t)(p - out), " " STATE_VAR "%zu", i);
	p += snprintf(p, len - (size_t)(p - out), "\n");
	for (i = 0; i < n; i++)
		p += snprintf(p, len - (size_t)(p - out), "${" STATE_VAR "%zu}", i);
	snprintf(p, len - (size_t)(p - out), "\" >/dev/null; then printf 'failed to restore "
	    "shell snapshot\\n' >&2; fi\n");
	return out;
}

/* The code before the command's own, in a malloc'd string; NULL when out of memory. */
char *
snapshot_restore_prefix(const struct snapshot *s, const char *name)
{
	const char	*pre;
	char		*out;
	size_t		 a, b;

	if (strcmp(name, "sh") == 0)
		return sh_prefix(s);
	pre = strcmp(name, "zsh") == 0 ? zsh_restore : bash_restore;
	a = strlen(pre);
	b = strlen(restore_source);
	if ((out = malloc(a + b + 1)) == NULL)
		return NULL;
	memcpy(out, pre, a);
	memcpy(out + a, restore_source, b + 1);
	return out;
}

/* A sh's state, in the variables its restore evaluates. */
static int
add_state_vars(const struct snapshot *s, json_t *env)
{
	size_t	off = 0, n, i = 0;
	char	name[sizeof(STATE_VAR) + 24], *chunk;
	int	rc;

	while (off < s->script_len) {
		n = state_chunk(s->script + off, s->script_len - off);
		snprintf(name, sizeof(name), STATE_VAR "%zu", i++);
		if ((chunk = strndup(s->script + off, n)) == NULL)
			return -1;
		rc = json_object_set_new(env, name, json_string(chunk));
		free(chunk);
		if (rc == -1)
			return -1;
		off += n;
	}
	return 0;
}

/*
 * The restore script, as the reference reads it: from the first
 * BEGIN_MARK after the start, what the rc file printed and the state the
 * capture printed (without its own mark); -1 when there is none, or when
 * the rc file printed a NUL (the reference's sections no longer parse).
 * *nul: the NUL that ends the state.
 */
static int
find_script(struct snapshot *s, const char *out, size_t len, const char **nul)
{
	static const char	start[] = "\0" START_MARK "\0", state[] = "\0" STATE_MARK "\0";
	const char		*p, *q, *st, *m, *end = out + len;
	size_t			 rl, sl;

	if ((p = memmem(out, len, start, sizeof(start) - 1)) == NULL)
		return -1;
	p += sizeof(start) - 1;
	if ((q = memmem(p, (size_t)(end - p), state, sizeof(state) - 1)) == NULL ||
	    memchr(p, '\0', (size_t)(q - p)) != NULL)
		return -1;
	st = q + sizeof(state) - 1;
	if ((*nul = memchr(st, '\0', (size_t)(end - st))) == NULL)
		return -1;
	m = memmem(p, (size_t)(q - p), BEGIN_MARK, sizeof(BEGIN_MARK) - 1);
	rl = m == NULL ? 0 : (size_t)(q - m);
	sl = (size_t)(*nul - st);
	if ((s->script = malloc(rl + sl + 1)) == NULL)
		return -1;
	if (rl > 0)
		memcpy(s->script, m, rl);
	memcpy(s->script + rl, st, sl);
	s->script[rl + sl] = '\0';
	s->script_len = rl + sl;
	return 0;
}

static int
add_var(json_t *env, const char *entry)
{
	const char	*eq = strchr(entry, '=');
	char		*name;
	int		 rc;

	if (eq == NULL || eq == entry)
		return 0;
	if ((name = strndup(entry, (size_t)(eq - entry))) == NULL)
		return -1;
	/* the restored shell is where it is started, not where the capture was */
	if (strcmp(name, "PWD") == 0 || strcmp(name, "OLDPWD") == 0)
		rc = 0;
	else
		rc = json_object_set_new(env, name, json_string(eq + 1));
	free(name);
	return rc;
}

int
snapshot_parse(struct snapshot *s, const char *out, size_t len)
{
	const char	*p, *end = out + len, *nul;
	json_t		*env;

	if (find_script(s, out, len, &nul) == -1)
		return -1;
	if ((env = json_object()) == NULL)
		return -1;
	for (p = nul + 1; p < end; p = nul + 1) {
		if ((nul = memchr(p, '\0', (size_t)(end - p))) == NULL)
			break;
		if (strcmp(p, END_MARK) == 0 && nul + 1 == end) {
			s->env = env;
			return 0;
		}
		/* a mark of ours in the rc file's output: it is not ours to read */
		if (strcmp(p, STATE_MARK) == 0 || strcmp(p, START_MARK) == 0 ||
		    add_var(env, p) == -1)
			break;
	}
	json_decref(env);
	return -1;
}

static int
match_any(json_t *globs, const char *name)
{
	json_t	*g;
	size_t	 i;

	json_array_foreach(globs, i, g)
		if (json_is_string(g) && fnmatch(json_string_value(g), name, FNM_CASEFOLD) == 0)
			return 1;
	return 0;
}

static int
masked_by_default(const char *name)
{
	return fnmatch("*KEY*", name, FNM_CASEFOLD) == 0 ||
	    fnmatch("*SECRET*", name, FNM_CASEFOLD) == 0 ||
	    fnmatch("*TOKEN*", name, FNM_CASEFOLD) == 0;
}

/*
 * A zsh started with -f counts itself in SHLVL; the reference's restored
 * zsh keeps the level the snapshot holds (one the request gives is
 * counted): the level is passed one lower, when it is a decimal number.
 */
static int
zsh_level(json_t *env, json_t *overlay)
{
	const char	*v = json_string_value(json_object_get(env, "SHLVL"));
	char		*end, buf[32];
	long		 n;

	if (v == NULL || json_object_get(overlay, "SHLVL") != NULL || *v == '\0')
		return 0;
	errno = 0;
	n = strtol(v, &end, 10);
	if (*end != '\0' || errno != 0 || n <= LONG_MIN + 1)
		return 0;
	snprintf(buf, sizeof(buf), "%ld", n - 1);
	return json_object_set_new(env, "SHLVL", json_string(buf));
}

json_t *
snapshot_env(const struct snapshot *s, const char *shell, json_t *policy, json_t *overlay)
{
	json_t		*out, *v, *only;
	const char	*k;
	void		*tmp;

	if ((out = json_deep_copy(s->env)) == NULL)
		return NULL;
	if (json_is_object(policy)) {
		json_object_foreach_safe(out, tmp, k, v)
			if ((!json_is_true(json_object_get(policy, "ignoreDefaultExcludes")) &&
			    masked_by_default(k)) ||
			    match_any(json_object_get(policy, "exclude"), k))
				json_object_del(out, k);
		json_object_update(out, json_object_get(policy, "set"));
		only = json_object_get(policy, "includeOnly");
		if (json_array_size(only) > 0)
			json_object_foreach_safe(out, tmp, k, v)
				if (!match_any(only, k))
					json_object_del(out, k);
	}
	if ((strcmp(shell, "zsh") == 0 && zsh_level(out, overlay) == -1) ||
	    json_object_update(out, overlay) == -1 ||
	    (!snapshot_uses_fd(shell) && add_state_vars(s, out) == -1)) {
		json_decref(out);
		return NULL;
	}
	return out;
}
