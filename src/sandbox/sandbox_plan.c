/*
 * A plan's life: made empty by the parent's planning (sandbox.c) or by the
 * spawn helper reading one off the wire (sandbox_wire.c), freed by either.
 * The placeholders a parent's plan still owns go with it.
 */
#include "config.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "sandbox/sandbox_int.h"

struct sandbox_plan *
sbx_plan_new(void)
{
	struct sandbox_plan	*plan;

	if ((plan = calloc(1, sizeof(*plan))) == NULL)
		return NULL;
	plan->ruleset_fd = plan->route_sv[0] = plan->route_sv[1] = -1;
	plan->ready[0] = plan->ready[1] = -1;
	plan->spare_userns = plan->spare_netns = -1;
	return plan;
}

void
sandbox_plan_free(struct sandbox_plan *plan)
{
	size_t	i;

	if (plan == NULL)
		return;
	sandbox_guards_release(plan->guards);
	for (i = 0; i < plan->nmounts; i++)
		free(plan->mounts[i].path);
	free(plan->mounts);
	if (plan->ruleset_fd != -1)
		close(plan->ruleset_fd);
	if (plan->spare_userns != -1)
		close(plan->spare_userns);
	if (plan->spare_netns != -1)
		close(plan->spare_netns);
	for (i = 0; i < 2; i++) {
		if (plan->route_sv[i] != -1)
			close(plan->route_sv[i]);
		if (plan->ready[i] != -1)
			close(plan->ready[i]);
	}
	free(plan->cwd);
	free(plan->fatal);
	free(plan);
}

/* One descriptor moved to min or above (close-on-exec); 0, or -1 with errno. */
static int
lift(int *fd, int min)
{
	int	nfd;

	if (*fd == -1 || *fd >= min)
		return 0;
	if ((nfd = fcntl(*fd, F_DUPFD_CLOEXEC, min)) == -1)
		return -1;
	close(*fd);
	*fd = nfd;
	return 0;
}

/*
 * The plan's descriptors at min or above, in the child before it puts a
 * command's own descriptors (stdio, a shell snapshot's restore descriptor)
 * below min by number: one must not land on a descriptor the plan still
 * needs (a Landlock ruleset or a spare namespace taken for another file
 * makes the start fail).
 */
int
sandbox_plan_lift_fds(struct sandbox_plan *plan, int min)
{
	int	i;

	if (plan == NULL)
		return 0;
	if (lift(&plan->ruleset_fd, min) == -1 || lift(&plan->spare_userns, min) == -1 ||
	    lift(&plan->spare_netns, min) == -1)
		return -1;
	for (i = 0; i < 2; i++)
		if (lift(&plan->route_sv[i], min) == -1 || lift(&plan->ready[i], min) == -1)
			return -1;
	return 0;
}
