/* fs_policy internals: the decoded sandbox context, before it becomes rules. */
#ifndef EXECD_FS_POLICY_INT_H
#define EXECD_FS_POLICY_INT_H

#include <jansson.h>

#include "policy/fs_policy.h"

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

enum fsp_kind { E_PATH, E_GLOB, E_SPECIAL };
enum fsp_special { S_ROOT, S_MINIMAL, S_CWD, S_PROJECT_ROOTS, S_TMPDIR, S_SLASH_TMP, S_UNKNOWN };

struct fsp_entry {
	enum fsp_kind	 kind;
	enum fsp_special	 special;
	char		*path;		/* E_PATH: decoded; E_GLOB: the pattern */
	char		*subpath;	/* S_PROJECT_ROOTS */
	enum fs_access	 access;
};

struct fsp_ctx {
	struct fsp_entry	*entries;
	size_t		 nentries;
	int		 restricted;	/* managed + restricted file system */
	char		*cwd;
	char		**roots;	/* workspaceRoots */
	size_t		 nroots;
	int		 bad_entry_uri;	/* -32600 pending */
	struct jx_err	 bad_uri;
};

/*
 * Does path exist with no symlink on the way (fs_policy_path.c)?  Then,
 * written canonically, it is its own real path.
 */
int	fs_path_is_real(const char *path);

/* Decode a sandbox object; -1 with e and *code (-32602, or -32600 for an entry URI). */
int	fsp_decode(json_t *sandbox, struct fsp_ctx *c, struct jx_err *e, int *code);
void	fsp_ctx_free(struct fsp_ctx *c);

#endif
