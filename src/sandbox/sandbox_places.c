/*
 * The executor's own configuration places: the Codex home, ~/.agents and
 * /etc/codex, and the layer files in them, as environmentConfig/read and
 * capabilities/discoverV2 find them.  Each is kept out of a sandbox's
 * reach: bound read-only in a command's view wherever a writable root
 * holds it (sandbox_mount.c plan_places), not writable to sandboxed fs
 * requests (FS_OWN_PLACE), and a sandbox in which a name on the way to
 * one could be pointed elsewhere is refused (sandbox_place_link).
 */
#include "config.h"

#include <sys/stat.h>

#include <limits.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "sandbox/sandbox.h"
#include "sandbox/sandbox_int.h"

/*
 * The directories, then the layer files in them, which the readers
 * follow wherever a symlink leads (dotfiles kept in a repository): the
 * Codex home's config.toml, /etc/codex's config.toml, managed_config.toml
 * and requirements.toml.  A file is protected where it really is, only
 * when it exists (its directory, protected itself, keeps it from being made).
 */
#define PLACE_DIRS	3
#define PLACES		7

static char	places[PLACES][PATH_MAX];

/*
 * The place as named, made absolute as the readers resolve it (a relative
 * CODEX_HOME or HOME from execd's working directory, which it never
 * leaves); sandboxed fs requests keep it read-only too.
 */
static void
place_set(int i, const char *path, const char *tail)
{
	char	cwd[PATH_MAX];
	int	n;

	if (path[0] == '/')
		n = snprintf(places[i], PATH_MAX, "%s%s", path, tail);
	else if (getcwd(cwd, sizeof(cwd)) != NULL)
		n = snprintf(places[i], PATH_MAX, "%s/%s%s", strcmp(cwd, "/") == 0 ? "" : cwd,
		    path, tail);
	else
		n = PATH_MAX;
	if (n < 0 || n >= PATH_MAX) {
		log_warnx("sandbox: cannot keep the configuration place %s%s from sandboxed "
		    "commands: its absolute name is too long", path, tail);
		places[i][0] = '\0';
		return;
	}
	fs_policy_own_path(places[i], FS_OWN_PLACE);
}

void
sandbox_config_places(void)
{
	const char	*env = getenv("CODEX_HOME"), *home = getenv("HOME");
	struct passwd	*pw;

	/* as environmentConfig/read and discoverV2 find them */
	if ((home == NULL || home[0] == '\0') && (pw = getpwuid(getuid())) != NULL)
		home = pw->pw_dir;
	if (env != NULL && env[0] != '\0')
		place_set(0, env, "");
	else if (home != NULL && home[0] != '\0')
		place_set(0, home, "/.codex");
	if (home != NULL && home[0] != '\0')
		place_set(1, home, "/.agents");
	place_set(2, "/etc/codex", "");
	if (places[0][0] == '/')
		place_set(3, places[0], "/config.toml");
	place_set(4, "/etc/codex/config.toml", "");
	place_set(5, "/etc/codex/managed_config.toml", "");
	place_set(6, "/etc/codex/requirements.toml", "");
}

int
sbx_config_place(size_t i, char *out)
{
	char	dir[PATH_MAX], *slash;
	size_t	len;

	if (i >= PLACES)
		return -1;
	if (places[i][0] != '/')
		return 0;
	/* as it is now, symlinks resolved: made or moved since start-up, too */
	if (fs_realpath(places[i], out) != NULL)
		return 1;
	if (i >= PLACE_DIRS)
		return 0;	/* a missing file: no placeholder */
	snprintf(dir, sizeof(dir), "%s", places[i]);
	slash = strrchr(dir, '/');
	*slash = '\0';
	if (slash == dir || fs_realpath(dir, out) == NULL)
		return 0;	/* no parent: nothing a placeholder could go in */
	len = strlen(out);
	return snprintf(out + len, PATH_MAX - len, "%s", strcmp(out, "/") == 0 ?
	    strrchr(places[i], '/') + 1 : strrchr(places[i], '/')) < (int)(PATH_MAX - len);
}

struct link_find {
	const struct fs_policy	*pol;
	char			*link;
	int			 linked;	/* a link was met on the way */
};

/*
 * A link the sandbox may write, or a missing place a link on the way
 * leads to where the sandbox may make it (no placeholder goes there).
 */
static int
writable_link(void *arg, const char *cur, const struct stat *st)
{
	struct link_find	*f = arg;

	if (st == NULL ? !f->linked : !S_ISLNK(st->st_mode))
		return 0;
	if (st != NULL)
		f->linked = 1;
	if (fs_policy_check(f->pol, cur, FS_WANT_WRITE) != 0)
		return 0;
	snprintf(f->link, PATH_MAX, "%s", cur);
	return 1;
}

/*
 * The readers follow a place's name anew at each request: a symlink on
 * the way that pol lets be written would let a sandboxed request (or the
 * command) point the name at a directory of its own, the read-only bind
 * of the old target notwithstanding.  Such a sandbox is refused, in the
 * reference's words for its protected paths.
 */
/* Does pol let something be written on the file system dev? */
static int
writes_on(const struct fs_policy *pol, dev_t dev)
{
	const struct fs_rule	*r;
	struct stat		 st;
	size_t			 i;

	for (i = 0; (r = fs_policy_rule(pol, i)) != NULL; i++)
		if (r->access == FS_ACCESS_WRITE && !r->is_glob && !r->implicit &&
		    stat(r->path, &st) == 0 && st.st_dev == dev)
			return 1;
	return 0;
}

int
sandbox_place_link(const struct fs_policy *pol, char *msg, size_t msglen)
{
	char			link[PATH_MAX];
	struct link_find	f = { pol, link, 0 };
	struct stat		st;
	size_t			i;

	for (i = 0; i < PLACES; i++, f.linked = 0) {
		if (places[i][0] != '/')
			continue;
		if (fs_path_walk(places[i], writable_link, &f) == 1) {
			snprintf(msg, msglen, "cannot enforce sandbox read-only path %s because "
			    "it crosses writable symlink %s", places[i], link);
			return 1;
		}
		/*
		 * A layer file with another name (a hard link, as some dotfile
		 * managers make) may have it in a writable root, where no bind
		 * of this name reaches: not told where, so refused.
		 */
		if (i >= PLACE_DIRS && stat(places[i], &st) == 0 && S_ISREG(st.st_mode) &&
		    st.st_nlink > 1 && writes_on(pol, st.st_dev)) {
			snprintf(msg, msglen, "cannot enforce sandbox read-only path %s because "
			    "it has %ju hard links on a writable file system", places[i],
			    (uintmax_t)st.st_nlink);
			return 1;
		}
	}
	return 0;
}
