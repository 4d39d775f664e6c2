/*
 * Login-shell snapshots: the state a login shell leaves (functions,
 * aliases, shell options, environment), captured once per scope and
 * restored into later commands.  This layer keeps the cache and knows
 * the shells' languages; the process layer runs the capture.
 *
 * Snapshots live only in execd's memory.  A command gets its own sealed
 * memfd copy as descriptor 15: nothing a command does can change what a
 * later command sources.
 */
#ifndef EXECD_SNAPSHOT_H
#define EXECD_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define SNAPSHOT_MAX_ENTRIES	64		/* cached scopes, least recently used go */
#define SNAPSHOT_MAX_BYTES	(1u << 20)	/* capture output kept */
#define SNAPSHOT_CAPTURE_MS	10000		/* the login shell's time to start */
#define SNAPSHOT_RETRY_MS	1000		/* a failed capture is not retried sooner */
#define SNAPSHOT_SCOPE_MAX	256

enum snapshot_state {
	SNAPSHOT_CAPTURING,
	SNAPSHOT_READY,
	SNAPSHOT_FAILED,
};

struct snapshot;

/* 1 when a snapshot of shell name (bash, zsh, sh) can be taken. */
int		 snapshot_shell_supported(const char *name);
/* The script run as `<shell> -lc script` to capture; NULL when unsupported. */
const char	*snapshot_capture_script(const char *name);
/* The restored shell's flag, in place of -lc: -pc (bash), -fc (zsh), -c (sh). */
const char	*snapshot_restore_flag(const char *name);
/*
 * The code run before the command in the restored shell of name: it
 * sources descriptor 15 (bash, zsh) or evaluates the variables
 * __CODEX_SHELL_SNAPSHOT_STATE_<n> that snapshot_env adds (sh).  malloc'd;
 * NULL when out of memory.
 */
char		*snapshot_restore_prefix(const struct snapshot *s, const char *name);
/* 1 when the restored shell of name reads its snapshot from descriptor 15. */
int		 snapshot_uses_fd(const char *name);

/*
 * The cache entry of key, NULL when there is none (a failure older than
 * SNAPSHOT_RETRY_MS counts as none).  now: monotonic milliseconds.
 */
struct snapshot	*snapshot_find(const char *key, uint64_t now);
/* A new entry, capturing; NULL when the cache is full of captures. */
struct snapshot	*snapshot_begin(const char *key, uint64_t now);
enum snapshot_state snapshot_state(const struct snapshot *s);
/*
 * The capture of key is over: out is what it wrote, NULL when it failed.
 * The entry is ready, or failed when out holds no snapshot; 0 when ready.
 * An entry forgotten meanwhile (snapshot_clear) stays forgotten.
 */
int		 snapshot_done(const char *key, const char *out, size_t len, uint64_t now);
/*
 * The restored command's environment: the login shell's, filtered by the
 * envPolicy as credentials are masked (its excludes, set and includeOnly;
 * not its inherit), with overlay on top; for a zsh, SHLVL one lower
 * unless overlay sets it (zsh -f counts itself); for a sh, the state's
 * variables.  NULL when out of memory.
 */
json_t		*snapshot_env(const struct snapshot *s, const char *shell, json_t *policy,
		    json_t *overlay);
/*
 * A sealed memfd holding the restore script of shell name (bash, zsh) at
 * offset 0; -1 on error.  The script closes descriptor 15 first of all.
 */
int		 snapshot_fd(const struct snapshot *s, const char *name);
/* Forget every snapshot (the session is over). */
void		 snapshot_clear(void);
size_t		 snapshot_count(void);

#endif
