/*
 * What another folder may use of fs/ (discovery/ does): a request's
 * `sandbox` field decoded into a policy, the failures decoding deferred,
 * and paths read as the fs methods read them, pinned and checked under
 * that policy.  The rest of fs/ is fs/fs_int.h's.
 */
#ifndef EXECD_FS_ACCESS_H
#define EXECD_FS_ACCESS_H

#include <stddef.h>

#include "fs/fs_param.h"
#include "policy/fs_policy.h"
#include "rpc/rpc.h"

/* The `sandbox` field of every fs method: decoded into a struct fs_policy *. */
extern const struct fp_decoder fs_sandbox_field;
/*
 * Answer req and return 1 if the request cannot go on: a URI or sandbox
 * entry that names no local path, or a policy the reference could not
 * build for the operation.
 */
int	fs_deferred(struct rpc_req *req, const struct fp_deferred *d,
	    const struct fs_policy *pol);
/* snprintf for paths: 0, or ENAMETOOLONG when it does not fit. */
int	fs_pathf(char *buf, size_t len, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
/* 0, or the errno the policy makes the access fail with. */
int	fs_allowed(const struct fs_policy *pol, const char *path, int follow_last, int want);
/* Open path itself, symlinks followed, with oflags; real gets its real path. */
int	fs_pin_open(const struct fs_policy *pol, const char *path, int want, int oflags,
	    int *fdp, char *real, size_t reallen);

#endif
