/* Newline-delimited JSON-RPC framing, as `codex exec-server --listen stdio`. */
#ifndef EXECD_JSONL_H
#define EXECD_JSONL_H

#include "transport/conn.h"

/* Once, before jsonl_start(): a longer line closes the connection. */
void	jsonl_init(size_t max_message);
/* Takes over c (and any bytes already in c->pre). */
int	jsonl_start(struct conn *c);

#endif
