/* Capability discovery: capabilityRoots/discoverV1 and capabilities/discoverV2. */
#ifndef EXECD_DISCOVERY_H
#define EXECD_DISCOVERY_H

#include "rpc/rpc.h"

extern const struct rpc_method discovery_methods[];

/* Once at start-up, before the first connection: the capability flags. */
void	discovery_init(void);

#endif
