/*
 * A sandbox plan as the spawn side sees it: made by the parent
 * (sandbox.h), sent to the spawn helper and read back there
 * (sandbox_wire.c), applied by the child between fork and exec
 * (sandbox_apply.c), freed by either side.  Nothing here plans.
 */
#ifndef EXECD_SANDBOX_PLAN_H
#define EXECD_SANDBOX_PLAN_H

struct sandbox_plan;
struct sbx_guard;
struct wire_in;
struct wire_out;

/* A plan sent to the spawn helper, and read back there (NULL: malformed). */
void	 sandbox_plan_put(const struct sandbox_plan *plan, struct wire_out *w);
struct sandbox_plan *sandbox_plan_get(struct wire_in *r);
/* In the child, between fork and exec: 0, or the errno that failed. */
int	 sandbox_apply(const struct sandbox_plan *plan);
/* With the placeholders it still owns. */
void	 sandbox_plan_free(struct sandbox_plan *plan);

/*
 * The placeholders a plan made for missing protected names, handed to the
 * process that needs them (the plan no longer removes them), and their
 * release when that process is closed (sandbox_guard.c).
 */
struct sbx_guard *sandbox_take_guards(struct sandbox_plan *plan);
void	 sandbox_guards_release(struct sbx_guard *guards);

#endif
