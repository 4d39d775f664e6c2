/*
 * Capability discovery's method table: the legacy capabilityRoots/discoverV1
 * (discover.c) and capabilities/discoverV2 (discover_v2.c).  Both read the
 * client's skills and plugins through fs/'s pinned paths under the request's
 * sandbox, and answer themselves once the lifecycle gate lets them.
 */
#include "config.h"

#include "discovery/discovery.h"
#include "discovery/discovery_int.h"
#include "session/session.h"

const struct rpc_method discovery_methods[] = {
	{ "capabilityRoots/discoverV1", "capability discovery", fs_m_discover_v1,
	    RPC_SELF_GATED },
	{ "capabilities/discoverV2", "capability discovery", fs_m_discover_v2,
	    RPC_SELF_GATED },
	{ NULL, NULL, NULL, 0 },
};

void
discovery_init(void)
{
	session_set_capability("capabilityDiscoveryV2", 1);
	session_set_capability("capabilityDiscoverySandbox", 1);
}
