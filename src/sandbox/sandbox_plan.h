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
/*
 * In the child, between fork and exec: confine, then call exec(arg),
 * which execs the command (or writes the errno to errfd and exits 127)
 * and never returns.  With namespaces exec runs in another process, the
 * command's (sandbox_pidns.c), and this one stays outside and ends as the
 * command does.  Returns only on failure in the calling process, with the
 * errno; a failure in the command's process is written to errfd.
 */
int	 sandbox_apply(const struct sandbox_plan *plan, int errfd,
	    void (*exec)(void *), void *arg);
/* With the placeholders it still owns. */
void	 sandbox_plan_free(struct sandbox_plan *plan);
/* The plan's descriptors moved to min or above (in the child, before it numbers its own). */
int	 sandbox_plan_lift_fds(struct sandbox_plan *plan, int min);

/*
 * In the spawn helper, around a start: a managed network's namespaces
 * made ahead are given to the plan if there are (take, before the child
 * is forked), and the next ones made after a start that needed them
 * (make, once it is forked).  See sandbox_spare.c.
 */
void	 sandbox_spare_take(struct sandbox_plan *plan);
void	 sandbox_spare_make(const struct sandbox_plan *plan);

/*
 * Once the child exists (it waits for this before it binds a protected
 * name): the placeholders planned for missing protected names are made
 * now, while the child builds its namespaces, and it is told whether they
 * are there.  -1 (logged) when one cannot be made: the command does not
 * run.  Takes a struct sandbox_plan *, as a spawn_req's callback.
 */
int	 sandbox_spawned(void *plan);

/*
 * The placeholders a plan holds for missing protected names, handed to the
 * process that needs them (the plan no longer removes them), and their
 * release when that process is closed (sandbox_guard.c).
 */
struct sbx_guard *sandbox_take_guards(struct sandbox_plan *plan);
void	 sandbox_guards_release(struct sbx_guard *guards);
/*
 * Who closes a removed placeholder's last descriptor (the spawn helper),
 * so that freeing its blocks keeps no one waiting; NULL: closed at once.
 */
void	 sandbox_set_closer(void (*closer)(const int *fds, size_t n));
/*
 * Where the placeholders' lock files live: dir/placeholders/ (execd's state
 * directory, kept for the life of the process); NULL: no placeholders.
 */
void	 sandbox_set_state_dir(const char *dir);

#endif
