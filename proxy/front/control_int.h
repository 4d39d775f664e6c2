/* Shared by control.c (the socket, requests) and control_events.c (decisions, asks). */
#ifndef EXECD_PROXY_CONTROL_INT_H
#define EXECD_PROXY_CONTROL_INT_H

#include <sys/types.h>

#include <jansson.h>

#include "types.h"

#define CTL_OUT_MAX	(4 * 1024 * 1024)	/* replies: a client this far behind is gone */

struct ctl_client {
	TAILQ_ENTRY(ctl_client)	 entry;
	TAILQ_HEAD(, reg)	 regs;
	int			 fd;
	struct ev_io		 io;
	struct buf		 in, out;
	uid_t			 uid;
	pid_t			 pid;
	int			 authed;	/* sent the key, or adopted */
	int			 adopted;	/* the connection of whoever started us */
	int			 dead;
	uint64_t		 next_ask;
	uint64_t		 events_dropped;
};

/* control_events.c (control.c uses it; it calls nothing of control.c) */
int	 ctl_flush_out(struct ctl_client *);
int	 ctl_queue(struct ctl_client *, json_t *, size_t bound);	/* steals; -1: no room */
int	 ctl_reg_options(json_t *req, int *events, unsigned *ask_ms, char *err, size_t errlen);
json_t	*ctl_op_decide(struct ctl_client *, json_t *req, json_t *id);	/* the reply */
void	 ctl_events_init(void);

#endif
