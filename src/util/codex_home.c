/*
 * The Codex home directory: a CODEX_HOME that is missing, dangling or not
 * a directory is an error the reference reports, not an empty home.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/codex_home.h"

char *
codex_home_find(char *err, size_t errlen)
{
	const char	*env = getenv("CODEX_HOME"), *home = getenv("HOME");
	char		 path[PATH_MAX], *real;
	struct stat	 st;

	if (env != NULL && env[0] != '\0') {
		if ((real = realpath(env, NULL)) == NULL) {
			snprintf(err, errlen, errno == ENOENT ? "CODEX_HOME points to \"%s\", "
			    "but that path does not exist" : "CODEX_HOME points to \"%s\": %s",
			    env, strerror(errno));
			return NULL;
		}
		if (stat(real, &st) == -1 || !S_ISDIR(st.st_mode)) {
			snprintf(err, errlen, "CODEX_HOME points to \"%s\", but that path is not "
			    "a directory", env);
			free(real);
			return NULL;
		}
		return real;
	}
	if (home == NULL || home[0] == '\0') {
		snprintf(err, errlen, "could not find home directory");
		return NULL;
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/.codex", home) >= sizeof(path)) {
		snprintf(err, errlen, "%s", strerror(ENAMETOOLONG));
		return NULL;
	}
	if ((real = realpath(path, NULL)) == NULL && (real = strdup(path)) == NULL)
		snprintf(err, errlen, "out of memory");
	return real;
}
