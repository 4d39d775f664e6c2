/*
 * The lines execd-proxy sends on its own about managed processes: a
 * decision on one of their connections, and a question about a host only
 * their allowlist refuses (asked when process/start set
 * policyDecisionTimeoutMs).  Both go up through struct netproxy_events;
 * a question nobody above can take is denied here at once, as the
 * reference fails closed.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "log.h"
#include "netproxy/netproxy.h"
#include "netproxy/netproxy_int.h"

struct netproxy_ask {
	char		cred[32];
	json_int_t	ask;
	unsigned	gen;		/* of the control connection it came on */
};

static const struct netproxy_events	*events;

static void	on_line(json_t *);

void
netproxy_set_events(const struct netproxy_events *ev)
{
	events = ev;
	npc.on_event = on_line;
	netproxy_want(ev != NULL && ev->decision != NULL, ev != NULL && ev->ask != NULL);
}

void
netproxy_decide(struct netproxy_ask *q, const char *decision, const char *reason)
{
	json_t	*req;

	if (q == NULL)
		return;
	/* a restarted proxy numbers its questions anew: an old answer is not for it */
	if (q->gen == npc.gen) {
		req = json_pack("{s:s, s:s, s:I, s:s}", "op", "decide", "credential", q->cred,
		    "ask", q->ask, "decision", decision);
		if (req != NULL && reason != NULL)
			json_object_set_new(req, "reason", json_string(reason));
		if (req == NULL || netproxy_send_oneway(req) == -1)
			log_info("execd-proxy: decision for %s not delivered; it denies at its "
			    "own timeout", q->cred);
	}
	free(q);
}

static void
on_decision(struct netproxy_reg *r, json_t *line)
{
	json_t	*params;

	if (events == NULL || events->decision == NULL || (params = json_copy(line)) == NULL)
		return;
	json_object_del(params, "event");
	json_object_del(params, "credential");
	events->decision(r->process_id, params);
}

static void
on_ask(struct netproxy_reg *r, const char *cred, json_t *line)
{
	struct netproxy_ask	*q;
	json_t			*ask = json_object_get(line, "ask"), *request;

	if (!json_is_integer(ask) || (q = calloc(1, sizeof(*q))) == NULL)
		return;		/* the proxy denies at its own timeout */
	snprintf(q->cred, sizeof(q->cred), "%s", cred);
	q->ask = json_integer_value(ask);
	q->gen = npc.gen;
	if (r == NULL || r->ask_ms == 0 || events == NULL || events->ask == NULL) {
		netproxy_decide(q, "deny", NULL);
		return;
	}
	request = json_pack("{s:O, s:O, s:O}", "protocol", json_object_get(line, "protocol"),
	    "host", json_object_get(line, "host"), "port", json_object_get(line, "port"));
	if (request == NULL) {
		netproxy_decide(q, "deny", NULL);
		return;
	}
	events->ask(q, r->process_id, request, r->ask_ms);
}

/* A line from the proxy that is not a reply (stolen). */
static void
on_line(json_t *line)
{
	const char		*ev = json_string_value(json_object_get(line, "event"));
	const char		*cred = json_string_value(json_object_get(line, "credential"));
	struct netproxy_reg	*r;

	if (ev == NULL || cred == NULL) {
		json_decref(line);
		return;
	}
	r = netproxy_find_credential(cred);
	if (strcmp(ev, "ask") == 0)
		on_ask(r, cred, line);
	else if (strcmp(ev, "decision") == 0 && r != NULL)
		on_decision(r, line);
	json_decref(line);
}
