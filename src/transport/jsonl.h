/* Newline-delimited JSON-RPC framing, as `codex exec-server --listen stdio`. */
#ifndef EXECD_JSONL_H
#define EXECD_JSONL_H

#include "transport/conn.h"

/* Takes over c (and any bytes already in c->pre). */
int	jsonl_start(struct conn *c);

#endif
