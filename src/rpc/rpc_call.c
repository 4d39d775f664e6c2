/*
 * Requests from execd to the client (the reference sends one kind:
 * network/policyRequest).  Each waits for the response with its id; the
 * client's answer (result or error) goes to the caller's callback, as
 * does the end of the connection (NULL: no answer will come).  A late
 * response (its call timed out) is ignored, as the reference ignores it;
 * a response with an id we never sent is the protocol violation rpc.c
 * closes on.
 */
#include "config.h"

#include <stdlib.h>

#include "jsonx.h"
#include "log.h"
#include "rpc/rpc.h"
#include "rpc/rpc_int.h"

struct call {
	struct call	*next;
	long long	 id;
	rpc_call_cb	*cb;
	void		*arg;
};

static struct call	*calls;
static long long	 next_id;

long long
rpc_call(const char *method, json_t *params, rpc_call_cb *cb, void *arg)
{
	struct call	*c;
	json_t		*msg;

	if (!rpc_attached() || (c = calloc(1, sizeof(*c))) == NULL) {
		json_decref(params);
		return -1;
	}
	c->id = ++next_id;
	c->cb = cb;
	c->arg = arg;
	msg = json_pack("{s:I, s:s, s:o}", "id", (json_int_t)c->id, "method", method,
	    "params", params);
	if (msg == NULL) {
		log_warnx("cannot build a %s request", method);
		free(c);
		return -1;
	}
	c->next = calls;
	calls = c;
	rpc_send(msg);
	return c->id;
}

static struct call *
take(long long id)
{
	struct call	**pp, *c;

	for (pp = &calls; (c = *pp) != NULL; pp = &c->next)
		if (c->id == id) {
			*pp = c->next;
			return c;
		}
	return NULL;
}

/* The callback is not called. */
void
rpc_call_cancel(long long id)
{
	free(take(id));
}

/* 0: it answered a call of ours (or too late); -1: we never sent this id. */
int
rpc_call_answer(json_t *id, json_t *response)
{
	struct call	*c;
	json_t		*result;
	json_int_t	 n;

	if (!json_is_integer(id) || (n = json_integer_value(id)) < 1 || n > next_id)
		return -1;
	if ((c = take(n)) == NULL) {
		log_info("late answer to request %lld ignored", (long long)n);
		return 0;
	}
	result = json_object_get(response, "result");
	/* a NUL in any string makes the answer malformed: "allow\0deny" is no "allow" */
	if (result != NULL && jx_has_nul_deep(result)) {
		log_info("answer to request %lld holds a NUL byte: malformed", (long long)n);
		result = NULL;
	}
	c->cb(c->arg, result);
	free(c);
	return 0;
}

/* The connection went: no call will be answered. */
void
rpc_call_fail_all(void)
{
	struct call	*c;

	while ((c = calls) != NULL) {
		calls = c->next;
		c->cb(c->arg, NULL);
		free(c);
	}
}
