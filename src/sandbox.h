/*
 * Process sandboxing: a request's `sandbox` (FileSystemSandboxContext) and
 * managed-network fields become a plan in the parent, which the child
 * applies after fork and before exec, so that execd itself stays
 * unrestricted.  See sandbox.c for what is enforced by which mechanism.
 */
#ifndef EXECD_SANDBOX_H
#define EXECD_SANDBOX_H

#include <sys/types.h>

#include <stddef.h>

#include <jansson.h>

struct sandbox_plan;
struct out_ring;

/*
 * Decoding, before lifecycle gating as the reference decodes params:
 * -1 with -32602 and the reference's message for a malformed `sandbox` or
 * managedNetwork.  params are the whole process/start params.
 */
int	 sandbox_check(json_t *sandbox, json_t *params, int *code, char *msg, size_t msglen);
/*
 * Decide, in the parent.  Returns 0 with *out NULL when the process runs
 * unsandboxed, 0 with a plan, or -1 with the reference's code and message:
 * -32602 "failed to prepare process sandbox: ..." for a context path that
 * names no local path, -32600 "sandbox intent cannot be enforced on this
 * executor" when this kernel cannot enforce what was asked (never run a
 * sandboxed request unsandboxed).
 */
int	 sandbox_prepare(json_t *sandbox, json_t *params, struct sandbox_plan **out,
	    int *code, char *msg, size_t msglen);
/*
 * The command's working directory (as a path) and final environment (an
 * object of strings): loopback proxy endpoints named by its proxy
 * variables are routed out of a managed network namespace, as the
 * managedNetwork loopbackPorts are.  -1 when that cannot be done.
 */
int	 sandbox_finish(struct sandbox_plan *plan, const char *cwd, json_t *env);
/* The child hook (spawn_req.child_hook): 0, or the errno that failed. */
int	 sandbox_apply(void *plan);
/* In the parent once the child is running: start its proxy routes. */
void	 sandbox_started(struct sandbox_plan *plan, pid_t pid);
/* process/start's sandboxType: "linuxSeccomp", or "none" for NULL. */
const char *sandbox_type(const struct sandbox_plan *plan);
void	 sandbox_plan_free(struct sandbox_plan *plan);

/*
 * Did a sandboxed process probably fail because the sandbox denied it?
 * The reference's heuristic: a non-zero exit with denial wording in the
 * output, or death by SIGSYS.
 */
int	 sandbox_denied(int exit_code, const struct out_ring *output);

/*
 * execd narrows itself after start-up: no new privileges, and a seccomp
 * filter refusing what neither execd nor the commands it runs need (see
 * sandbox_seccomp.c for the list and why it is not an allow-list).
 */
int	 sandbox_self_narrow(void);

#endif
