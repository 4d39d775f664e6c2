/*
 * A managed process's network, as the client hears of it: each decision
 * of the proxy as a network/policyDecision notification, and each host
 * only its allowlist refuses as a network/policyRequest to the client
 * (serve.c hands these to netproxy_set_events()).
 */
#ifndef EXECD_PROC_NET_H
#define EXECD_PROC_NET_H

#include "netproxy/netproxy.h"

extern const struct netproxy_events proc_net_events;

#endif
