/*
 * The trusted project layers environmentConfig/read has read.  A
 * sandboxed command cannot write one that counts (sandbox_record.c), but
 * it could remove one, rename it away, or move its directory: a host
 * layer narrowing the sandbox for its directory would be gone for every
 * later thread start, and nothing would be left to check.  So the .codex
 * directory of each layer read is kept like a protected name wherever a
 * writable root holds it: bound read-only (its parents pinned) in a
 * command's view (sandbox_mount.c), not writable to sandboxed fs requests
 * (FS_OWN_PLACE).  The host still edits and removes its layers.  Only
 * what has been read since start-up is known: an app-server reads the
 * layers of a thread's cwd before its first command.
 */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sandbox/sandbox.h"
#include "sandbox/sandbox_int.h"

#define LAYERS_MAX	32	/* each costs a realpath per sandboxed fs request */

static struct {
	char	*dir[LAYERS_MAX];
	size_t	 n;
	int	 full_logged;
} layers;

void
sandbox_layer_read(const char *codex_dir)
{
	char	real[PATH_MAX];
	size_t	i;

	if (fs_realpath(codex_dir, real) == NULL)
		return;
	for (i = 0; i < layers.n; i++)
		if (strcmp(layers.dir[i], real) == 0)
			return;
	if (layers.n == LAYERS_MAX || (layers.dir[layers.n] = strdup(real)) == NULL) {
		if (!layers.full_logged++)
			log_warnx("sandbox: more than %d project layers read: %s and later ones "
			    "are not kept from sandboxed commands", LAYERS_MAX, real);
		return;
	}
	layers.n++;
	fs_policy_own_path(real, FS_OWN_PLACE);
}

const char *
sbx_layer_dir(size_t i)
{
	return i < layers.n ? layers.dir[i] : NULL;
}
