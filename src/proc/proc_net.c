/*
 * network/policyDecision and network/policyRequest (the reference's
 * exec-server, ../shared/protocol.md 6.7).  A question waits for the
 * client's answer for policyDecisionTimeoutMs plus the reference's 5 s
 * margin; no answer in time, an error response, a malformed decision or
 * a client that goes away is a deny, as the reference fails closed.
 * Notifications are best effort, as the reference's: while the client is
 * not reading (the transport is congested) they are counted and dropped.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "evloop.h"
#include "log.h"
#include "proc/proc_net.h"
#include "rpc/rpc.h"
#include "textx.h"

#define ASK_MARGIN_MS	5000
#define REASON_MAX	1024

struct pending_ask {
	struct netproxy_ask	*q;
	long long		 call;
	struct ev_timer		 timer;
};

static uint64_t	dropped;

static void
decision(const char *process_id, json_t *params)
{
	json_t	*o;

	if (rpc_congested()) {
		if (dropped++ % 1000 == 0)
			log_info("client not reading: %llu network/policyDecision dropped",
			    (unsigned long long)dropped);
		json_decref(params);
		return;
	}
	/* processId first, as the reference writes it */
	if ((o = json_pack("{s:s}", "processId", process_id)) == NULL ||
	    json_object_update(o, params) == -1) {
		json_decref(o);
		json_decref(params);
		return;
	}
	json_decref(params);
	rpc_notify("network/policyDecision", o);
}

/* {"decision":{"type":"allow"}|{"type":"deny"|"ask","reason":STR}}; else deny. */
static void
answered(void *arg, json_t *result)
{
	struct pending_ask	*pa = arg;
	json_t			*d = json_object_get(result, "decision");
	const char		*type = json_string_value(json_object_get(d, "type"));
	const char		*reason = json_string_value(json_object_get(d, "reason"));

	ev_timer_stop(&pa->timer);
	if (type == NULL || (strcmp(type, "allow") != 0 && strcmp(type, "deny") != 0 &&
	    strcmp(type, "ask") != 0) || (reason != NULL && !reason_fits(reason, REASON_MAX))) {
		if (result != NULL)
			log_info("network/policyRequest: unusable answer; denied");
		netproxy_decide(pa->q, "deny", NULL);
	} else
		netproxy_decide(pa->q, type, strcmp(type, "allow") == 0 ? NULL : reason);
	free(pa);
}

static void
timed_out(struct ev_timer *t, void *arg)
{
	struct pending_ask	*pa = arg;

	log_info("network/policyRequest %lld: no answer in time; denied", pa->call);
	rpc_call_cancel(pa->call);
	netproxy_decide(pa->q, "deny", NULL);
	free(pa);
}

static void
ask(struct netproxy_ask *q, const char *process_id, json_t *request, unsigned timeout_ms)
{
	struct pending_ask	*pa;
	json_t			*params;

	params = json_pack("{s:s, s:o}", "processId", process_id, "request", request);
	if (params == NULL || (pa = calloc(1, sizeof(*pa))) == NULL) {
		json_decref(params);
		netproxy_decide(q, "deny", NULL);
		return;
	}
	pa->q = q;
	ev_timer_init(&pa->timer, timed_out, pa);
	if ((pa->call = rpc_call("network/policyRequest", params, answered, pa)) == -1) {
		/* no client to ask */
		netproxy_decide(q, "deny", NULL);
		free(pa);
		return;
	}
	ev_timer_start(&pa->timer, (uint64_t)timeout_ms + ASK_MARGIN_MS);
}

const struct netproxy_events proc_net_events = {
	.decision = decision,
	.ask = ask,
};
