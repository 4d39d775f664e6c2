/* The connection lifecycle: initialize, initialized, environment info and status. */
#ifndef EXECD_SESSION_H
#define EXECD_SESSION_H

#include "rpc/rpc.h"

extern const struct rpc_method session_methods[];

/* Gates the other groups until initialize and initialized (rpc_set_gate). */
extern const struct rpc_gate session_lifecycle;
/* Capability flags execd really implements; modules may set theirs. */
void		 session_set_capability(const char *name, int on);
json_t		*session_environment_info(void);

#endif
