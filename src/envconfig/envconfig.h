/* environmentConfig/read: the executor's Codex configuration layers. */
#ifndef EXECD_ENVCONFIG_H
#define EXECD_ENVCONFIG_H

#include "rpc/rpc.h"

extern const struct rpc_method envconfig_methods[];

/* Once at start-up, before the first connection: the capability flag. */
void	envconfig_init(void);

#endif
