/* The connection lifecycle: initialize, initialized, environment info and status. */
#ifndef EXECD_SESSION_H
#define EXECD_SESSION_H

#include "rpc.h"

extern const struct rpc_method session_methods[];

/* NULL when m may run now, else the reference's gating message. */
const char	*session_gate(const struct rpc_method *m);
/* A new connection is attached: it must initialize again. */
void		 session_connection_reset(void);
/* -1 when initialize has not succeeded yet: the peer broke the protocol */
int		 session_initialized(void);
/* Capability flags execd really implements; modules may set theirs. */
void		 session_set_capability(const char *name, int on);
json_t		*session_environment_info(void);

#endif
