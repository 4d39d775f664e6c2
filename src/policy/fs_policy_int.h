/* fs_policy internals: the policy itself, and what its files share. */
#ifndef EXECD_FS_POLICY_INT_H
#define EXECD_FS_POLICY_INT_H

#include <jansson.h>

#include "policy/fs_policy.h"
#include "policy/fs_policy_decode.h"

#define OWN_MAX	64	/* execd's own paths (state directory, keys, sockets, log), config places,
			   layers read (sandbox_layers.c) */

struct own_path {
	char	*path;
	int	 readonly;	/* seen, never written; else out of sight; FS_OWN_PLACE */
};

struct fs_policy {
	struct fs_rule	*rules;
	size_t		 nrules, cap;
	char		*error;		/* the operation must fail with this */
	struct own_path	 own[OWN_MAX];	/* resolved when the policy is made */
	size_t		 nown;
};

/*
 * Does path exist with no symlink on the way (fs_policy_path.c)?  Then,
 * written canonically, it is its own real path.
 */
int	fs_path_is_real(const char *path);

#endif
