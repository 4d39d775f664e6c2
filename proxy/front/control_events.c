/*
 * The owner in the loop: a registration made with "events" gets one line
 * on its control connection per decision about its connections, and one
 * made with "ask_timeout_ms" is asked about the hosts only its allowlist
 * refuses ("ask" lines, answered by "decide" requests).  Both go on the
 * owner's connection, after the replies, and neither may hold the proxy
 * up: a decision line that does not fit under CTL_EVENT_MAX of unsent
 * output is dropped and counted (as the reference's try_notify), and a
 * question that does not fit is a deny.  The waiting connection keeps its
 * own timer (relay/dial.c).  The client's output queue is kept here,
 * for control.c's replies too.  See execd-proxy(8).
 */
#include "config.h"

#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "log.h"
#include "textx.h"
#include "front/front.h"
#include "front/control_int.h"
#include "relay/relay.h"
#include "policy/policy.h"

#define CTL_EVENT_MAX		(1024 * 1024)	/* unsent bytes before events drop */
#define CTL_ASK_MS_MAX		(24u * 3600 * 1000)
#define CTL_REASON_MAX		1024

/* The reference's protocol names (NetworkProtocol, snake_case). */
static const char *
wire_proto(enum proxy_proto p)
{
	switch (p) {
	case PROTO_HTTP:
		return "http";
	case PROTO_HTTP_CONNECT:
		return "https_connect";
	case PROTO_SOCKS5:
		return "socks5_tcp";
	case PROTO_SOCKS5_UDP:
		return "socks5_udp";
	}
	return "http";
}

/* Write what the client's queue holds, as far as the socket takes it; -1: broken. */
int
ctl_flush_out(struct ctl_client *cl)
{
	ssize_t	n;

	while (buf_avail(&cl->out) > 0) {
		n = send(cl->fd, buf_head(&cl->out), buf_avail(&cl->out), MSG_NOSIGNAL);
		if (n > 0) {
			buf_consume(&cl->out, (size_t)n);
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			break;
		return -1;
	}
	ev_io_set(&cl->io, EPOLLIN | (buf_avail(&cl->out) ? EPOLLOUT : 0));
	return 0;
}

/* One line (o is stolen) onto the client's queue if it stays under bound; else -1. */
int
ctl_queue(struct ctl_client *cl, json_t *o, size_t bound)
{
	char	*s;
	size_t	 len;

	if (cl == NULL || cl->dead || o == NULL) {
		json_decref(o);
		return -1;
	}
	s = jx_dump(o, &len);
	json_decref(o);
	if (s == NULL || buf_avail(&cl->out) + len + 1 > bound ||
	    buf_append(&cl->out, s, len) == -1 || buf_append(&cl->out, "\n", 1) == -1) {
		free(s);
		return -1;
	}
	free(s);
	return 0;
}

/* An event line, written out now; a write error shows up on the connection's own event. */
static int
push(struct ctl_client *cl, json_t *o)
{
	if (ctl_queue(cl, o, CTL_EVENT_MAX) == -1)
		return -1;
	(void)ctl_flush_out(cl);
	return 0;
}

/*
 * The reference's sources (baseline_policy, mode_guard, proxy_state,
 * decider): a client may read them as a closed set.  Ours that it does not
 * know are the baseline policy for it (the process's own policy is what the
 * reference's per-process proxy calls its baseline).
 */
static const char *
wire_source(const char *src)
{
	if (strcmp(src, "mode_guard") == 0 || strcmp(src, "proxy_state") == 0 ||
	    strcmp(src, "decider") == 0)
		return src;
	return "baseline_policy";
}

static void
observe(struct conn *c, const struct verdict *v)
{
	struct ctl_client	*cl = c->reg->owner;
	char			 ts[40];
	json_t			*o;
	int			 non_domain;

	time_rfc3339(ts, sizeof(ts));
	non_domain = strcmp(v->source, "mode_guard") == 0 ||
	    strcmp(v->source, "proxy_state") == 0 || strcmp(v->source, "request") == 0;
	/* the reference's order; a host refused as unparsable is not repeated to the owner */
	o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:i}",
	    "event", "decision", "credential", c->reg->id, "timestamp", ts,
	    "scope", non_domain ? "non_domain" : "domain",
	    "decision", v->allow ? "allow" : c->asked_ask ? "ask" : "deny",
	    "source", wire_source(v->source), "reason", v->reason,
	    "protocol", wire_proto(c->proto), "host", c->host, "port", (int)c->port);
	if (o == NULL)
		return;
	if (c->method[0] != '\0')
		json_object_set_new(o, "method", json_string(c->method));
	json_object_set_new(o, "client", json_string(c->client));
	json_object_set_new(o, "policyOverride", json_boolean(c->override));
	if (push(cl, o) == -1 && cl != NULL && cl->events_dropped++ % 1000 == 0)
		log_warnx("control: pid %d is behind; %llu decision events dropped",
		    (int)cl->pid, (unsigned long long)cl->events_dropped);
}

static int
ask(struct conn *c)
{
	struct ctl_client	*cl = c->reg->owner;

	if (cl == NULL || cl->dead)
		return -1;
	c->ask_id = ++cl->next_ask;
	return push(cl, json_pack("{s:s, s:s, s:I, s:s, s:s, s:i}", "event", "ask",
	    "credential", c->reg->id, "ask", (json_int_t)c->ask_id,
	    "protocol", wire_proto(c->proto), "host", c->host, "port", (int)c->port));
}

void
ctl_events_init(void)
{
	audit_set_observer(observe);
	dial_set_asker(ask);
}

/* "events": bool, "ask_timeout_ms": 1..24 h, both optional. */
int
ctl_reg_options(json_t *req, int *events, unsigned *ask_ms, char *err, size_t errlen)
{
	json_t		*ev = json_object_get(req, "events");
	json_t		*ms = json_object_get(req, "ask_timeout_ms");
	json_int_t	 v;

	*events = 0;
	*ask_ms = 0;
	if (ev != NULL && !json_is_boolean(ev) && !json_is_null(ev)) {
		snprintf(err, errlen, "events must be a boolean");
		return -1;
	}
	*events = json_is_true(ev);
	if (ms == NULL || json_is_null(ms))
		return 0;
	if (!json_is_integer(ms) || (v = json_integer_value(ms)) < 1 || v > CTL_ASK_MS_MAX) {
		snprintf(err, errlen, "ask_timeout_ms must be an integer from 1 to %u",
		    CTL_ASK_MS_MAX);
		return -1;
	}
	*ask_ms = (unsigned)v;
	return 0;
}

/*
 * {"op":"decide","credential":ID,"ask":N,"decision":"allow"|"deny"|"ask",
 * "reason":STR}: the answer to an ask line.  Only the owner may answer;
 * an answer nobody waits for (late, or its connection gone) is ignored.
 */
json_t *
ctl_op_decide(struct ctl_client *cl, json_t *req, json_t *id)
{
	const char	*cred = json_string_value(json_object_get(req, "credential"));
	const char	*dec = json_string_value(json_object_get(req, "decision"));
	const char	*reason = json_string_value(json_object_get(req, "reason"));
	json_t		*askj = json_object_get(req, "ask");
	struct reg	*r;
	struct conn	*c;
	int		 allow, found = 0;

	if (cred == NULL || dec == NULL || !json_is_integer(askj) ||
	    (strcmp(dec, "allow") != 0 && strcmp(dec, "deny") != 0 &&
	    strcmp(dec, "ask") != 0)) {
		return json_pack("{s:O?, s:b, s:s}", "id", id, "ok", 0, "error",
		    "decide needs credential, ask and decision (allow, deny or ask)");
	}
	if ((r = reg_find(cred)) == NULL || r->owner != cl) {
		return json_pack("{s:O?, s:b, s:s}", "id", id, "ok", 0, "error",
		    "unknown credential");
	}
	allow = strcmp(dec, "allow") == 0;
	if (reason != NULL && !reason_fits(reason, CTL_REASON_MAX)) {
		/* as the reference: an unusable reason makes a deny */
		allow = 0;
		reason = NULL;
	}
	TAILQ_FOREACH(c, &r->conns, reg_entry)
		if (c->ask_id == (uint64_t)json_integer_value(askj)) {
			found = 1;
			break;
		}
	if (found)
		dial_decided(c, allow, strcmp(dec, "ask") == 0, reason);
	return json_pack("{s:O?, s:b, s:b}", "id", id, "ok", 1, "pending", found);
}
