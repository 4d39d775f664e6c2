/*
 * What the snapshot layer knows of the shells: the capture scripts, the
 * reading of their output, the restored command's environment.
 *
 * A capture writes, after whatever the login profile printed:
 *   NUL "EXECD-SNAPSHOT" NUL  script  NUL  (NAME=value NUL)*  "EXECD-SNAPSHOT-END" NUL
 * A shell string holds no NUL, so the parts cannot run into each other;
 * the end mark tells a whole capture from a cut one.
 */
#include "config.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/snapshot.h"
#include "snapshot/snapshot_int.h"

#define BEGIN_MARK	"EXECD-SNAPSHOT"
#define END_MARK	"EXECD-SNAPSHOT-END"

/* bash: ~/.bashrc too, as a login bash does not read it by itself */
static const char bash_capture[] =
	"if [ -z \"${BASH_ENV-}\" ] && [ -n \"${HOME-}\" ] && [ -r \"$HOME/.bashrc\" ]; then\n"
	"  . \"$HOME/.bashrc\"\n"
	"fi\n"
	"printf '\\0" BEGIN_MARK "\\0'\n"
	"printf '%s\\n' '# login shell state, captured by execd' 'unalias -a 2>/dev/null || true'\n"
	"shopt -p\n"
	"declare -f\n"
	"set -o | while read -r __execd_o __execd_v; do\n"
	"  [ \"$__execd_v\" = on ] && printf 'set -o %s\\n' \"$__execd_o\"\n"
	"done\n"
	"alias -p\n"
	"printf '\\0'\n"
	"env -0 2>/dev/null || for __execd_n in $(compgen -e); do\n"
	"  printf '%s=%s\\0' \"$__execd_n\" \"${!__execd_n}\"\n"
	"done\n"
	"printf '" END_MARK "\\0'\n";

static const char zsh_capture[] =
	"if [ -n \"${HOME-}\" ] && [ -r \"${ZDOTDIR:-$HOME}/.zshrc\" ]; then\n"
	"  . \"${ZDOTDIR:-$HOME}/.zshrc\"\n"
	"fi\n"
	"printf '\\0" BEGIN_MARK "\\0'\n"
	"printf '%s\\n' '# login shell state, captured by execd' 'unalias -a 2>/dev/null || true'\n"
	"typeset -f\n"
	"setopt | while read -r __execd_o; do printf 'setopt %s\\n' \"$__execd_o\"; done\n"
	"alias -L\n"
	"printf '\\0'\n"
	"env -0\n"
	"printf '" END_MARK "\\0'\n";

/* a POSIX sh lists no functions: options, aliases and the environment */
static const char sh_capture[] =
	"printf '\\0" BEGIN_MARK "\\0'\n"
	"printf '%s\\n' '# login shell state, captured by execd' 'unalias -a 2>/dev/null || true'\n"
	"set -o | while read -r __execd_o __execd_v; do\n"
	"  [ \"$__execd_v\" = on ] && printf 'set -o %s\\n' \"$__execd_o\"\n"
	"done\n"
	"alias | while IFS= read -r __execd_l; do\n"
	"  case $__execd_l in\n"
	"  'alias '*) printf '%s\\n' \"$__execd_l\" ;;\n"
	"  *) printf 'alias %s\\n' \"$__execd_l\" ;;\n"
	"  esac\n"
	"done\n"
	"printf '\\0'\n"
	"env -0\n"
	"printf '" END_MARK "\\0'\n";

static const char restore_prefix[] =
	"set +o privileged\n"
	"if ! . /dev/fd/15 >/dev/null; then printf 'failed to restore shell snapshot\\n' >&2; fi\n";

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
snapshot_restore_prefix(void)
{
	return restore_prefix;
}

/* The bytes after the first NUL BEGIN_MARK NUL, or NULL. */
static const char *
find_begin(const char *out, size_t len)
{
	static const char	mark[] = "\0" BEGIN_MARK "\0";
	size_t			mlen = sizeof(mark) - 1;

	if (len < mlen)
		return NULL;
	return (const char *)memmem(out, len, mark, mlen);
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

	if ((p = find_begin(out, len)) == NULL)
		return -1;
	p += sizeof(BEGIN_MARK) + 1;
	if ((nul = memchr(p, '\0', (size_t)(end - p))) == NULL)
		return -1;
	if ((s->script = strndup(p, (size_t)(nul - p))) == NULL)
		return -1;
	s->script_len = (size_t)(nul - p);
	if ((env = json_object()) == NULL)
		return -1;
	for (p = nul + 1; p < end; p = nul + 1) {
		if ((nul = memchr(p, '\0', (size_t)(end - p))) == NULL)
			break;
		if (strcmp(p, END_MARK) == 0 && nul + 1 == end) {
			s->env = env;
			return 0;
		}
		if (add_var(env, p) == -1)
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

json_t *
snapshot_env(const struct snapshot *s, json_t *policy, json_t *overlay)
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
	if (json_object_update(out, overlay) == -1) {
		json_decref(out);
		return NULL;
	}
	return out;
}
