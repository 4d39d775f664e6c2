/* JSON-RPC over WebSocket (wslay), after the HTTP upgrade. */
#ifndef EXECD_WS_H
#define EXECD_WS_H

#include "transport/conn.h"

/* Once, before ws_start(): the longest message, and how often to ping (0: never). */
void	ws_init(size_t max_message, unsigned ping_ms);
/* Takes over c; bytes after the HTTP head are already in c->pre. */
int	ws_start(struct conn *c);
/*
 * The same, head (the 101 answer) the first bytes out: written with the
 * answers to the frames that came along with the request, in one send.
 */
int	ws_start_after(struct conn *c, const char *head, size_t len);

#endif
