/*
 * Capturing login-shell snapshots (snapshot/snapshot.h keeps them): the
 * capture runs as a child of execd like any command, its output read by
 * the event loop, with a time limit.  A process/start that needs the
 * capture waits for it, and is resumed once it is over.
 */
#ifndef EXECD_PROC_SNAPSHOT_H
#define EXECD_PROC_SNAPSHOT_H

#include <sys/types.h>

#include <jansson.h>

#include "jsonx.h"
#include "spawn/spawn.h"

struct netproxy_reg;
struct sandbox_plan;
struct snapshot;
struct sbx_guard;

/*
 * Go on with a process/start that waited for a capture (arg is its own),
 * or, ended, have it answer that the session is over.  Called exactly
 * once.  The process table answers no request itself: it never includes
 * rpc.h (tests/layout.py).
 */
typedef void	proc_snapshot_resume(void *arg, int ended);

/*
 * Run rq (the capture command, in sandbox sbx or none) for the snapshot
 * of key, which must be capturing.  Once it runs, it holds sbx's guards
 * (its placeholders) and its managed network (reg, taken; may be NULL)
 * until it is over.  0, or -1 when it could not start (the entry is then
 * failed, reg unregistered).
 */
int	proc_snapshot_capture(const char *key, const struct spawn_req *rq,
	    struct sandbox_plan *sbx, struct netproxy_reg *reg);
/* Have resume(arg) called when the capture of key is over; -1: none runs. */
int	proc_snapshot_wait(const char *key, proc_snapshot_resume *resume, void *arg);
/*
 * The child pid was reaped with status: 1 when it was a capture (failed
 * unless it exited 0), 0 when it is none of theirs.
 */
int	proc_snapshot_reaped(pid_t pid, int status);
/* The session is over: kill the captures, forget the snapshots. */
void	proc_snapshot_end(void);

/* process/start's shellSnapshot, as the request side sees it (proc_snapshot_req.c). */
struct snap_req {
	int		 given;
	const char	*scope;
	size_t		 scope_len;
	const char	*name;		/* shell.name */
	const char	*path;		/* shell.path */
};

/* Decode params.shellSnapshot; -1 with e set as the reference words it. */
int	snap_req_parse(json_t *params, struct snap_req *r, struct jx_err *e);
/* 1 when argv is `<shell.path> -lc <command> [args]`: the snapshot is for it. */
int	snap_req_applies(const struct snap_req *r, json_t *argv);
/* The cache key of the snapshot argv needs; malloc'd, NULL when out of memory. */
char	*snap_req_key(const struct snap_req *r, const char *cwd_uri, json_t *policy,
	    json_t *sandbox);
/*
 * argv with its command run by the capture (snap NULL, as `-lc script`)
 * or restored from snap (as `<flag> prefix+command`, flag and prefix those
 * of snapshot_restore_flag and _prefix); one malloc'd block, NULL when out
 * of memory.
 */
char	**snap_req_argv(const struct snap_req *r, json_t *argv,
	    const struct snapshot *snap);

#endif
