/*
 * The audit events: what a decision, a request inside an inspected tunnel
 * and a relay's end record, built as JSON and handed to the queue
 * (audit.c).  Denials pass the per-credential rate limit first.
 */
#include "config.h"

#include <string.h>

#include "jsonx.h"
#include "relay/relay.h"
#include "relay/audit_int.h"
#include "policy/policy.h"

static void	(*observer)(struct conn *, const struct verdict *);

const char *
proto_name(enum proxy_proto p)
{
	switch (p) {
	case PROTO_HTTP:
		return "http";
	case PROTO_HTTP_CONNECT:
		return "http-connect";
	case PROTO_SOCKS5:
		return "socks5";
	case PROTO_SOCKS5_UDP:
		return "socks5-udp";
	}
	return "unknown";
}

/* Bytes as a JSON string: valid UTF-8 as it is, any other byte as U+0000-U+00FF. */
static json_t *
json_bytes(const char *p, size_t n)
{
	json_t	*s;
	char	 out[4 * 256];
	size_t	 i, o = 0;

	if ((s = json_stringn(p, n)) != NULL)
		return s;
	for (i = 0; i < n && o + 2 < sizeof(out); i++) {
		unsigned char ch = (unsigned char)p[i];

		if (ch < 0x80) {
			out[o++] = (char)ch;
		} else {
			out[o++] = (char)(0xc0 | ch >> 6);
			out[o++] = (char)(0x80 | (ch & 0x3f));
		}
	}
	return json_stringn(out, o);
}

static json_t *
base_event(struct conn *c, const char *event)
{
	char	 ts[40];
	json_t	*ev;

	time_rfc3339(ts, sizeof(ts));
	ev = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i}",
	    "time", ts, "event", event, "client", c->client,
	    "protocol", proto_name(c->proto),
	    "method", c->method[0] ? c->method : "none", "port", (int)c->port);
	if (ev == NULL)
		return NULL;
	/* a host refused as invalid is recorded as it came, its bytes escaped */
	json_object_set_new(ev, "host", c->host[0] ? json_string(c->host) :
	    c->has_rawhost ? json_bytes(c->rawhost, c->rawhostlen) : json_null());
	json_object_set_new(ev, "credential", c->reg ? json_string(c->reg->id) : json_null());
	json_object_set_new(ev, "tags", c->reg ? json_incref(c->reg->tags) : json_object());
	json_object_set_new(ev, "address", c->addr[0] ? json_string(c->addr) : json_null());
	return ev;
}

void
audit_set_observer(void (*fn)(struct conn *, const struct verdict *))
{
	observer = fn;
}

void
audit_decision(struct conn *c, const struct verdict *v)
{
	json_t	*ev;

	/* the owner's stream is bounded on its own: not subject to our rate limit */
	if (observer != NULL && c->reg != NULL && c->reg->events)
		observer(c, v);
	if (!v->allow && !audit_admit_denial(c->reg ? c->reg->id : NULL))
		return;
	if ((ev = base_event(c, "decision")) == NULL) {
		audit_lose(1);
		return;
	}
	if (c->naddrs > 0) {
		json_t	*res = json_array();
		char	 a[64];
		size_t	 i;

		for (i = 0; i < c->naddrs; i++) {
			addr_ntop(&c->addrs[i], a, sizeof(a));
			json_array_append_new(res, json_string(a));
		}
		json_object_set_new(ev, "resolved", res);
	}
	json_object_set_new(ev, "decision", json_string(v->allow ? "allow" :
	    c->asked_ask ? "ask" : "deny"));
	json_object_set_new(ev, "reason", json_bytes(v->reason, strlen(v->reason)));
	json_object_set_new(ev, "source", json_string(v->source));
	if (c->override)
		json_object_set_new(ev, "override", json_true());
	audit_emit(ev);
}

/*
 * One request inside an inspected tunnel: its method, the length of its
 * path (never the path), the status answered and the plaintext bytes each
 * way; never a body.
 */
void
audit_request(struct conn *c, const struct inner_req *r, const struct verdict *v)
{
	json_t	*ev;

	if (!v->allow && !audit_admit_denial(c->reg ? c->reg->id : NULL))
		return;
	if ((ev = base_event(c, "request")) == NULL) {
		audit_lose(1);
		return;
	}
	json_object_set_new(ev, "protocol", json_string("https"));
	json_object_set_new(ev, "method", json_string(r->method[0] ? r->method : "none"));
	json_object_set_new(ev, "path_length", json_integer((json_int_t)r->pathlen));
	json_object_set_new(ev, "status", json_integer(r->status));
	json_object_set_new(ev, "bytes_up", json_integer((json_int_t)r->bytes_up));
	json_object_set_new(ev, "bytes_down", json_integer((json_int_t)r->bytes_down));
	json_object_set_new(ev, "decision", json_string(v->allow ? "allow" : "deny"));
	json_object_set_new(ev, "reason", json_string(v->reason));
	json_object_set_new(ev, "source", json_string(v->source));
	json_object_set_new(ev, "result", json_string(r->result ? r->result : "ok"));
	audit_emit(ev);
}

/* result: "ok", "upstream_failure", "dns_failure", "timeout", "idle_timeout", ... */
void
audit_tunnel_close(struct conn *c, const char *result)
{
	json_t	*ev;

	if ((ev = base_event(c, "close")) == NULL) {
		audit_lose(1);
		return;
	}
	json_object_set_new(ev, "result", json_string(result));
	json_object_set_new(ev, "bytes_up", json_integer((json_int_t)c->c2u.bytes));
	json_object_set_new(ev, "bytes_down", json_integer((json_int_t)c->u2c.bytes));
	json_object_set_new(ev, "duration_ms", json_integer((json_int_t)(ev_now() - c->started)));
	audit_emit(ev);
}
