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

/* control.c */
int	 ctl_flush_out(struct ctl_client *);
void	 ctl_send_json(struct ctl_client *, json_t *);	/* steals; closes a stalled client */

/* control_events.c */
int	 ctl_reg_options(json_t *req, int *events, unsigned *ask_ms, char *err, size_t errlen);
void	 ctl_op_decide(struct ctl_client *, json_t *req, json_t *id);
void	 ctl_events_init(void);

#endif
