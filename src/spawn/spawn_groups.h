/*
 * In the spawn helper: the process groups of the commands it started
 * that may still have members, killed when execd ends however it ends.
 */
#ifndef EXECD_SPAWN_GROUPS_H
#define EXECD_SPAWN_GROUPS_H

#include <sys/types.h>

/* Room for one more group: 0, or -1 with errno (before the command is made). */
int	groups_reserve(void);
/* The command pgid leads its group (spawn_child's setsid); after a reserve. */
void	groups_add(pid_t pgid);
/* execd found the group empty: its id is a pid free for reuse, never to kill. */
void	groups_forget(pid_t pgid);
/* execd is gone: SIGKILL to every group still known. */
void	groups_kill_all(void);

#endif
