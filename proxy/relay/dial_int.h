/*
 * Inside relay/: dial.c's talk with an upstream proxy (dial_up.c), which
 * upstream a dial takes, and its CONNECT handshake.
 */
#ifndef EXECD_PROXY_DIAL_INT_H
#define EXECD_PROXY_DIAL_INT_H

#include "types.h"

/* c->up and c->tcp_route for this dial */
void	 dial_pick_upstream(struct conn *);
/* 1: a process's TCP upstream may not take this allowed flow (logged) */
int	 dial_up_refuses(struct conn *);
/* our CONNECT to the upstream proxy; -1 on a short write */
int	 dial_up_send(struct conn *);
/* its answer: 0 a 200 (what follows is the tunnel's), 1 more needed, -1 refused */
int	 dial_up_reply(struct conn *);

#endif
