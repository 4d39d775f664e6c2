/*
 * Process sandboxing: a request's `sandbox` (FileSystemSandboxContext) and
 * managed-network fields become a plan in execd, which the child applies
 * after fork and before exec (the child comes from the spawn helper,
 * spawner.c, which the plan crosses to: execd's own allow-list is no
 * ancestor of it).  See sandbox.c for what is enforced by which mechanism.
 *
 * This is the parent's side, and the face of the whole: the request read
 * (sandbox_request.h), execd's filters on itself (sandbox_self.h); what
 * the spawn side needs (a plan on the wire, applied, freed) is
 * sandbox_plan.h, the kernel probes sandbox_kernel.h.
 */
#ifndef EXECD_SANDBOX_H
#define EXECD_SANDBOX_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "sandbox/sandbox_kernel.h"
#include "sandbox/sandbox_plan.h"
#include "sandbox/sandbox_request.h"
#include "sandbox/sandbox_self.h"

struct fs_policy;

/*
 * Decide, in the parent, on the context sandbox_check() built (NULL: no
 * sandbox asked; not kept).  Returns 0 with *out NULL when the process runs
 * unsandboxed, 0 with a plan, or -1 with the reference's code and message:
 * -32602 "failed to prepare process sandbox: ..." for a context path that
 * names no local path, -32600 "sandbox intent cannot be enforced on this
 * executor" when this kernel cannot enforce what was asked (never run a
 * sandboxed request unsandboxed).
 */
int	 sandbox_prepare(json_t *ctx, json_t *params, struct sandbox_plan **out,
	    int *code, char *msg, size_t msglen);
/*
 * Transparent TCP (sandbox_tcp.c): can this kernel give it (probed once),
 * and is every managed start transparent (--linux-sandbox-transparent-tcp)?
 */
int	 sandbox_transparent_supported(void);
void	 sandbox_set_transparent_all(int on);
/* In the parent once the child is running: start its proxy routes. */
void	 sandbox_started(struct sandbox_plan *plan, pid_t pid);
/*
 * A path of execd's own (its state directory, the proxy's control socket
 * and key) that no sandboxed command may see or reach: masked last in
 * every sandbox's view, even inside a writable root.  A directory
 * (is_dir) is made, mode 0700, when missing.  Called once per path at
 * start-up; the first call also hides execd's log when stderr is a file.
 */
void	 sandbox_hide(const char *path, int is_dir);
/*
 * A path of execd's own a sandboxed command may read but never change
 * (the embedded proxy's CA bundle): bound read-only last in every view,
 * even inside a writable root; a directory is made, mode 0755, when missing.
 */
void	 sandbox_keep_readonly(const char *path, int is_dir);
/*
 * Once at start-up: where the writable roots given to sandboxed commands
 * are recorded (a file in state_dir, shared by the instances using it),
 * and the configuration places every view keeps read-only
 * (sandbox_config_places, from CODEX_HOME and HOME).
 */
void	 sandbox_record_init(const char *state_dir);
/*
 * A sandboxed fs request: its writable roots are recorded as a command's
 * (apply_patch writes through fs/writeFile as the model asks).  -1 when
 * one could not be recorded (logged): the request must not act.
 */
int	 sandbox_record_policy(const struct fs_policy *pol);
void	 sandbox_config_places(void);
/*
 * Does a configuration place's name lead through a symlink pol lets be
 * written?  1 with msg (the reason, in the reference's words): such a
 * sandbox is refused, command or fs request.
 */
int	 sandbox_place_link(const struct fs_policy *pol, char *msg, size_t msglen);
/*
 * Could a sandboxed command have written the configuration file fd, opened
 * as path?  1 when it lies inside a writable root some sandboxed command
 * was given (below the root's protected names) and it or its directory
 * changed since, or when path leads there through a link out of one, or
 * through a link inside one that changed since (a host layer moved), or
 * when it has other hard links and changed since the first root was given.
 * environmentConfig/read does not read such a project layer.
 */
int	 sandbox_wrote(int fd, const char *path);
/*
 * Did a sandboxed command probably make path (not followed: a link is
 * judged as one)?  1 when it lies inside such a writable root (below its
 * protected names) and came there since (a file's ctime, linked or
 * renamed; a directory's birth time, 0 where the file system keeps
 * none), or leads out of one by a link.  A project root
 * marker so made marks nothing: it would cut off the layers above it.
 */
int	 sandbox_made(const char *path);
/*
 * environmentConfig/read took a trusted project layer from codex_dir: a
 * sandboxed command or request may not remove or change it from now on
 * (sandbox_layers.c).
 */
void	 sandbox_layer_read(const char *codex_dir);
/*
 * The capability flags whose promise this sandbox keeps, NULL-terminated:
 * with "/" writable, the view's fresh /dev keeps the standard devices
 * usable, and the protected names of writable roots (.git, .codex,
 * .agents) and deny entries stay as restricted as without it.
 */
extern const char *const sandbox_capabilities[];

/* process/start's sandboxType: "linuxSeccomp", or "none" for NULL. */
const char *sandbox_type(const struct sandbox_plan *plan);

/*
 * Did a sandboxed process probably fail because the sandbox denied it?
 * The reference's heuristic (sandbox_denied.c): a non-zero exit with
 * denial wording in the output (words: sandbox_words_feed found some in
 * one of its streams), or death by SIGSYS.
 */
#define SANDBOX_WORD_MAX	24	/* longer than any denial word */
struct sandbox_words {
	char	carry[SANDBOX_WORD_MAX];	/* the end of the last chunk */
	size_t	ncarry;
	int	found;
};
/* One stream's output, chunk after chunk, from a zeroed struct. */
void	 sandbox_words_feed(struct sandbox_words *w, const uint8_t *data, size_t len);
int	 sandbox_denied(int exit_code, int words);

#endif
