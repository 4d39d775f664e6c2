/*
 * The commands' process groups, held by the spawn helper.  A command
 * leads its own session and group (spawn_child); what it forks stays in
 * the group unless it leaves (setsid, setpgid: a daemon).  When execd ends
 * its socket's end of file reaches the helper whatever the way execd
 * ended (SIGKILL, the OOM killer, a crash), and the helper kills every
 * group it still knows before it goes: without a listener above execd
 * (--stdio, so ssh; --inetd; socket activation) nothing else would, the
 * commands would be left to init.  A group id is the leader's pid, free
 * for reuse once the group is empty: execd, which reaps the leader and,
 * as their subreaper, the orphans of the group, says when it is
 * (OP_FORGET), so a number that may name someone else's group by then is
 * never killed.
 */
#include "config.h"

#include <sys/types.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>

#include "spawn/spawn_groups.h"

#define GROUPS_MAX	(1U << 20)	/* commands alive at once, far above any pid_max use */

static struct {
	pid_t	*v;
	size_t	 n, cap;
} groups;

int
groups_reserve(void)
{
	pid_t	*v;
	size_t	 cap;

	if (groups.n < groups.cap)
		return 0;
	if (groups.cap >= GROUPS_MAX) {
		errno = EAGAIN;
		return -1;
	}
	cap = groups.cap ? groups.cap * 2 : 64;
	if ((v = reallocarray(groups.v, cap, sizeof(*v))) == NULL)
		return -1;
	groups.v = v;
	groups.cap = cap;
	return 0;
}

void
groups_add(pid_t pgid)
{
	if (groups.n < groups.cap && pgid > 1)
		groups.v[groups.n++] = pgid;
}

void
groups_forget(pid_t pgid)
{
	size_t	i;

	for (i = 0; i < groups.n; i++)
		if (groups.v[i] == pgid) {
			groups.v[i] = groups.v[--groups.n];
			return;
		}
}

void
groups_kill_all(void)
{
	size_t	i;

	/* a group not made yet (the command before its setsid) dies of its death signal */
	for (i = 0; i < groups.n; i++)
		(void)kill(-groups.v[i], SIGKILL);
	groups.n = 0;
}
