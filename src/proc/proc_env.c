#include "config.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc/proc_env.h"
#include "rpc/rpc_serde.h"

extern char **environ;

/* What the reference keeps with inherit "core". */
static const char *const core_vars[] = {
	"HOME", "LOGNAME", "PATH", "SHELL", "USER", "USERNAME", "TMPDIR", "TEMP",
	"TMP", "LANG", NULL,
};

static int
match_any(json_t *globs, const char *name, int flags)
{
	json_t	*g;
	size_t	 i;

	json_array_foreach(globs, i, g)
		if (fnmatch(json_string_value(g), name, flags) == 0)
			return 1;
	return 0;
}

static int
is_core(const char *name)
{
	const char *const *c;

	for (c = core_vars; *c != NULL; c++)
		if (strcmp(*c, name) == 0)
			return 1;
	return 0;
}

static int
default_excluded(const char *name)
{
	return fnmatch("*KEY*", name, FNM_CASEFOLD) == 0 ||
	    fnmatch("*SECRET*", name, FNM_CASEFOLD) == 0 ||
	    fnmatch("*TOKEN*", name, FNM_CASEFOLD) == 0;
}

static json_t *
env_from_server(const char *inherit, int ignore_defaults, json_t *exclude)
{
	json_t	*out = json_object();
	char	**e, *eq, name[1024];
	size_t	 n;

	if (strcmp(inherit, "none") == 0)
		return out;
	for (e = environ; *e != NULL; e++) {
		if ((eq = strchr(*e, '=')) == NULL || (n = (size_t)(eq - *e)) >= sizeof(name))
			continue;
		memcpy(name, *e, n);
		name[n] = '\0';
		if (strcmp(inherit, "core") == 0 && !is_core(name))
			continue;
		if (!ignore_defaults && default_excluded(name))
			continue;
		if (match_any(exclude, name, FNM_CASEFOLD))
			continue;
		json_object_set_new(out, name, json_string(eq + 1));
	}
	return out;
}

json_t *
proc_env_build(json_t *env, json_t *policy, struct jx_err *e)
{
	static const char *const inherits[] = { "core", "all", "none", NULL };
	const char	*k;
	json_t		*inherit, *exclude, *set, *only, *out, *v;
	int		 ignore, which;
	void		*tmp;

	if (policy == NULL || json_is_null(policy))
		return json_deep_copy(env);
	if (jx_struct(policy, "ShellEnvironmentPolicy", e) == -1 ||
	    jx_any(policy, "inherit", JX_REQ, &inherit, e) == -1 ||
	    serde_unit_variant(inherit, inherits, &which, e) == -1 ||
	    jx_bool(policy, "ignoreDefaultExcludes", JX_REQ, &ignore, e) == -1 ||
	    jx_strarray(policy, "exclude", JX_REQ, &exclude, e) == -1 ||
	    jx_strmap(policy, "set", JX_REQ, &set, e) == -1 ||
	    jx_strarray(policy, "includeOnly", JX_REQ, &only, e) == -1)
		return NULL;
	out = env_from_server(inherits[which], ignore, exclude);
	json_object_update(out, set);
	if (json_array_size(only) > 0)
		json_object_foreach_safe(out, tmp, k, v)
			if (!match_any(only, k, FNM_CASEFOLD))
				json_object_del(out, k);
	json_object_update(out, env);
	return out;
}

char **
proc_env_array(json_t *env)
{
	const char	*k;
	json_t		*v;
	size_t		 n = json_object_size(env), bytes = 0;
	char		**arr, *p;
	size_t		 i = 0;

	json_object_foreach(env, k, v)
		bytes += strlen(k) + 1 + json_string_length(v) + 1;
	if ((arr = malloc((n + 1) * sizeof(*arr) + bytes)) == NULL)
		return NULL;
	p = (char *)(arr + n + 1);
	json_object_foreach(env, k, v) {
		arr[i++] = p;
		p += sprintf(p, "%s=%s", k, json_string_value(v)) + 1;
	}
	arr[i] = NULL;
	return arr;
}
