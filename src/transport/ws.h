/* JSON-RPC over WebSocket (wslay), after the HTTP upgrade. */
#ifndef EXECD_WS_H
#define EXECD_WS_H

#include "transport/conn.h"

/* Takes over c; bytes after the HTTP head are already in c->pre. */
int	ws_start(struct conn *c);

#endif
