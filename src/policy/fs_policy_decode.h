/*
 * A request's sandbox object decoded (fs_policy_decode.c): its entries and
 * context, before fs_policy.c makes them rules.  sandbox/ decodes the same
 * object for a process (sandbox_request.c); the rest of policy/ is
 * fs_policy_int.h's.
 */
#ifndef EXECD_FS_POLICY_DECODE_H
#define EXECD_FS_POLICY_DECODE_H

#include <stddef.h>

#include <jansson.h>

#include "jsonx.h"
#include "policy/fs_policy.h"

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

/* Decode a sandbox object; -1 with e and *code (-32602, or -32600 for an entry URI). */
int	fsp_decode(json_t *sandbox, struct fsp_ctx *c, struct jx_err *e, int *code);
void	fsp_ctx_free(struct fsp_ctx *c);

#endif
