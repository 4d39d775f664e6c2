/*
 * Process sandboxing: a request's `sandbox` (FileSystemSandboxContext) and
 * managed-network fields become a plan in execd, which the child applies
 * after fork and before exec (the child comes from the spawn helper,
 * spawner.c, which the plan crosses to: execd's own allow-list is no
 * ancestor of it).  See sandbox.c for what is enforced by which mechanism.
 */
#ifndef EXECD_SANDBOX_H
#define EXECD_SANDBOX_H

#include <sys/types.h>

#include <stddef.h>

#include <jansson.h>

struct sandbox_plan;
struct out_ring;
struct wire_in;
struct wire_out;
struct sbx_guard;

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
/* In the child, between fork and exec: 0, or the errno that failed. */
int	 sandbox_apply(const struct sandbox_plan *plan);
/* In the parent once the child is running: start its proxy routes. */
void	 sandbox_started(struct sandbox_plan *plan, pid_t pid);
/* process/start's sandboxType: "linuxSeccomp", or "none" for NULL. */
const char *sandbox_type(const struct sandbox_plan *plan);
void	 sandbox_plan_free(struct sandbox_plan *plan);

/*
 * The placeholders a plan made for missing protected names, handed to the
 * process that needs them (the plan no longer removes them), and their
 * release when that process is closed.
 */
struct sbx_guard *sandbox_take_guards(struct sandbox_plan *plan);
void	 sandbox_guards_release(struct sbx_guard *guards);

/* A plan sent to the spawn helper, and read back there (NULL: malformed). */
void	 sandbox_plan_put(const struct sandbox_plan *plan, struct wire_out *w);
struct sandbox_plan *sandbox_plan_get(struct wire_in *r);
/*
 * Fork a child that tries to make mount and network namespaces (directly,
 * or inside a user namespace): 1 if it could, else 0.  The spawn helper
 * runs it for execd, whose own filter allows no fork.
 */
int	 sandbox_probe_ns(int direct);

/*
 * Did a sandboxed process probably fail because the sandbox denied it?
 * The reference's heuristic: a non-zero exit with denial wording in the
 * output, or death by SIGSYS.
 */
int	 sandbox_denied(int exit_code, const struct out_ring *output);

/*
 * What every process of execd's has, commands included, set in main():
 * not dumpable, and unless setuid programs must keep working, no new
 * privileges and a filter refusing calls that nothing run by execd has
 * business making (sandbox_self.c).
 */
int	 sandbox_self_floor(int no_new_privs);
/*
 * An execd instance narrows itself once it has started its spawn helper:
 * no new privileges and an allow-list of the calls it makes (listed and
 * explained in sandbox_self.c).
 */
int	 sandbox_self_narrow(void);

#endif
