/*
 * From a parsed request to a connected upstream socket: the host policy
 * (global, then the process's own), name resolution, the address check,
 * and a non-blocking connect to exactly the addresses that were checked.
 * Through an upstream proxy the last step is a CONNECT to it instead.
 * A host that only the process's allowlist refuses, when its owner asked
 * to decide such hosts, waits (DP_ASK) for the owner's answer, which
 * front/ delivers through dial_decided(); the proxy's own timer denies.
 */
#include "config.h"

#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "sockx.h"
#include "relay/relay.h"
#include "relay/dial_int.h"
#include "policy/policy.h"

#define DNS_GRACE_MS	500	/* our own cap above c-ares's retries */
/*
 * The owner gives its client the timeout plus the reference's 5 s margin;
 * we wait 2 s more for the answer's way back, then deny on our own.
 */
#define ASK_MARGIN_MS	7000
#define ASK_MAX		256	/* waiting connections per registration */

enum dial_phase {
	DP_NONE,
	DP_RESOLVE,		/* the target's name */
	DP_UP_RESOLVE,		/* the upstream proxy's name */
	DP_CONNECT,
	DP_UP_HANDSHAKE,	/* CONNECT sent to the upstream proxy */
	DP_ASK,			/* waiting for the owner's decision */
};

static int	(*asker)(struct conn *);

static void	connect_next(struct conn *);
static void	up_resolve(struct conn *);
static void	up_connect(struct conn *);
static void	dial_io(struct conn *, int, uint32_t);
static void	dial_timeout(struct conn *);
static void	dial_cancel(struct conn *);

static const struct conn_stage dial_stage = {
	.io = dial_io,
	.timeout = dial_timeout,
	.cancel = dial_cancel,
};

static void
finish(struct conn *c, enum dial_fail f)
{
	c->fail = f;
	c->dial_phase = DP_NONE;
	ev_timer_stop(&c->timer);
	c->uwant = 0;
	c->pp->dial_done(c);
}

static void
deny(struct conn *c, const struct verdict *v)
{
	c->verdict = *v;
	audit_decision(c, v);
	finish(c, DIAL_DENIED);
}

/* Both policies look at the addresses; the first refusal stands. */
static int
addrs_allowed(struct conn *c, struct verdict *v)
{
	policy_check_addrs(&c->conf->policy, "baseline_policy", c->host, c->addrs,
	    c->naddrs, v);
	if (v->allow && c->reg != NULL && c->reg->policy != NULL)
		policy_check_addrs(c->reg->policy, "process_policy", c->host, c->addrs,
		    c->naddrs, v);
	return v->allow;
}

/* Every name of the CNAME chain against both deny lists. */
static int
names_allowed(struct conn *c, const struct resolve_names *nm, struct verdict *v)
{
	size_t	i;

	for (i = 0; i < nm->n; i++) {
		v->allow = 0;
		v->reason = "denied";
		v->source = "baseline_policy";
		if (policy_denies_name(&c->conf->policy, nm->name[i]))
			break;
		v->source = "process_policy";
		if (c->reg != NULL && c->reg->policy != NULL &&
		    policy_denies_name(c->reg->policy, nm->name[i]))
			break;
	}
	if (i == nm->n)
		return 1;
	log_info("%s: %s: CNAME to denied %s", c->client, c->host, nm->name[i]);
	return 0;
}

static int
needs_addr_check(struct conn *c)
{
	const struct sockaddr_storage *lit = c->is_literal ? &c->lit : NULL;

	return policy_wants_addr_check(&c->conf->policy, c->host, lit) ||
	    (c->reg != NULL && c->reg->policy != NULL &&
	    policy_wants_addr_check(c->reg->policy, c->host, lit));
}

/* Who asks a registration's owner (front/ sets it); NULL: nobody is asked. */
void
dial_set_asker(int (*fn)(struct conn *))
{
	asker = fn;
}

static void
ask_done(struct conn *c)
{
	if (c->dial_phase != DP_ASK)
		return;
	c->dial_phase = DP_NONE;
	ev_timer_stop(&c->timer);
	if (c->reg != NULL && c->reg->asking > 0)
		c->reg->asking--;
}

/* 0: the owner was asked and the connection waits; -1: nobody to ask. */
static int
ask_owner(struct conn *c)
{
	if (asker == NULL || c->reg == NULL || c->reg->ask_ms == 0 ||
	    c->reg->asking >= ASK_MAX)
		return -1;
	c->dial_phase = DP_ASK;
	c->reg->asking++;
	conn_timer(c, c->reg->ask_ms + ASK_MARGIN_MS);
	if (asker(c) == -1) {
		ask_done(c);
		return -1;
	}
	return 0;
}

static void	dial_allowed(struct conn *);

/* The owner answered (allow), or not in time, or not at all: the reference's fail-closed deny. */
void
dial_decided(struct conn *c, int allow, int ask, const char *reason)
{
	struct verdict	v = { 0, "not_allowed", "decider" };

	if (c->dial_phase != DP_ASK)
		return;		/* a late answer */
	ask_done(c);
	if (allow) {
		c->override = 1;
		dial_allowed(c);
		return;
	}
	c->asked_ask = ask;
	if (reason != NULL && *reason != '\0') {
		snprintf(c->decider_reason, sizeof(c->decider_reason), "%s", reason);
		v.reason = c->decider_reason;
	}
	deny(c, &v);
}

/* The addresses are settled and vetted: record the decision, start dialling. */
static void
dial_allowed(struct conn *c)
{
	struct verdict	v = { 1, "allow", "baseline_policy" };
	struct verdict	fail = { 0, "not_allowed", "decider" };
	size_t		i;

	if (c->undecided) {
		c->undecided = 0;
		if (ask_owner(c) == -1)
			deny(c, &fail);
		return;
	}
	for (i = 0; i < c->naddrs; i++)
		sockaddr_set_port(&c->addrs[i], c->port);
	if (c->naddrs > 0)
		addr_ntop(&c->addrs[0], c->addr, sizeof(c->addr));
	if (c->reg != NULL && c->reg->policy != NULL)
		v.source = "process_policy";
	if (c->override) {
		/* as the reference records a decider's allow of an allowlist miss */
		v.reason = "not_allowed";
		v.source = "decider";
	}
	c->verdict = v;
	c->allowed = 1;
	audit_decision(c, &v);
	c->addr_i = 0;
	if (c->tcp_route && dial_up_refuses(c)) {
		finish(c, DIAL_UPSTREAM);
		return;
	}
	if (c->up != NULL) {
		c->via_upstream = 1;
		up_resolve(c);
		return;
	}
	connect_next(c);
}

static void
resolved(void *arg, int status, const struct sockaddr_storage *addrs, size_t n,
    const struct resolve_names *names)
{
	struct conn	*c = arg;
	struct verdict	 v;

	c->rq = NULL;
	if (c->dial_phase == DP_UP_RESOLVE) {
		if (status != 0) {
			log_warnx("upstream proxy %s: %s", c->up->host,
			    resolve_strerror(status));
			finish(c, resolve_is_timeout(status) ? DIAL_TIMEOUT : DIAL_UPSTREAM);
			return;
		}
		c->nup = n < PROXY_ADDRS_MAX ? n : PROXY_ADDRS_MAX;
		memcpy(c->upaddrs, addrs, c->nup * sizeof(addrs[0]));
		up_connect(c);
		return;
	}
	if (status != 0) {
		v.allow = 0;
		v.reason = resolve_is_timeout(status) ? "dns_timeout" : "dns_failure";
		v.source = "resolver";
		log_info("%s: %s: %s", c->client, c->host, resolve_strerror(status));
		c->verdict = v;
		audit_decision(c, &v);
		finish(c, resolve_is_timeout(status) ? DIAL_TIMEOUT : DIAL_DNS);
		return;
	}
	c->naddrs = n;
	memcpy(c->addrs, addrs, n * sizeof(addrs[0]));
	if (!names_allowed(c, names, &v) || !addrs_allowed(c, &v)) {
		addr_ntop(&c->addrs[0], c->addr, sizeof(c->addr));
		deny(c, &v);
		return;
	}
	dial_allowed(c);
}

static void
resolve(struct conn *c, const char *name, enum dial_phase phase)
{
	c->dial_phase = phase;
	conn_timer(c, c->conf->dns_ms + DNS_GRACE_MS);
	if ((c->rq = resolve_start(name, resolved, c)) == NULL) {
		log_warn("resolver: %s", name);
		finish(c, phase == DP_RESOLVE ? DIAL_DNS : DIAL_UPSTREAM);
	}
}

/* The protocol parsed the host once (host_parse()): a literal is c->lit. */
static int
host_checks(struct conn *c)
{
	const struct sockaddr_storage	*lit = c->is_literal ? &c->lit : NULL;
	struct verdict			 v;

	policy_check_host(&c->conf->policy, "baseline_policy", c->host, lit, c->port,
	    c->method, c->req_shape, c->proto, &v);
	c->undecided = 0;
	if (v.allow && c->reg != NULL && c->reg->policy != NULL && c->reg->ask_ms > 0 &&
	    asker != NULL)
		policy_check_host_undecided(c->reg->policy, "process_policy", c->host, lit,
		    c->port, c->method, c->req_shape, c->proto, &c->undecided, &v);
	else if (v.allow && c->reg != NULL && c->reg->policy != NULL)
		policy_check_host(c->reg->policy, "process_policy", c->host, lit, c->port,
		    c->method, c->req_shape, c->proto, &v);
	if (!v.allow) {
		deny(c, &v);
		return -1;
	}
	return 0;
}

void
dial_start(struct conn *c)
{
	struct sockaddr_in	*sin;
	struct sockaddr_in6	*sin6;
	struct verdict		 v;

	c->stage = &dial_stage;
	c->state = CS_DIALING;
	c->uwant = 0;
	/* every dial is decided afresh */
	c->override = 0;
	c->asked_ask = 0;
	dial_pick_upstream(c);
	conn_want(c);
	if (host_checks(c) == -1)
		return;
	if (c->is_literal) {
		c->addrs[0] = c->lit;
		c->naddrs = 1;
		dial_allowed(c);
		return;
	}
	if (strcmp(c->host, "localhost") == 0) {
		/* fixed, as the reference maps it; never asked of DNS */
		memset(c->addrs, 0, 2 * sizeof(c->addrs[0]));
		sin = (struct sockaddr_in *)&c->addrs[0];
		sin->sin_family = AF_INET;
		sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sin6 = (struct sockaddr_in6 *)&c->addrs[1];
		sin6->sin6_family = AF_INET6;
		sin6->sin6_addr = in6addr_loopback;
		c->naddrs = 2;
		/* as resolved: deny entries for 127.0.0.0/8 or ::1 hold for it */
		if (!addrs_allowed(c, &v)) {
			addr_ntop(&c->addrs[0], c->addr, sizeof(c->addr));
			deny(c, &v);
			return;
		}
		dial_allowed(c);
		return;
	}
	/* an upstream proxy resolves for itself unless we must vet the answer */
	if (c->up != NULL && !needs_addr_check(c)) {
		c->naddrs = 0;
		dial_allowed(c);
		return;
	}
	resolve(c, c->host, DP_RESOLVE);
}

static enum dial_fail
errno_fail(int e)
{
	switch (e) {
	case ECONNREFUSED:
		return DIAL_REFUSED;
	case ENETUNREACH:
	case EHOSTUNREACH:
		return DIAL_UNREACH;
	case ETIMEDOUT:
		return DIAL_TIMEOUT;
	default:
		return DIAL_UPSTREAM;
	}
}

/* A non-blocking connect to one vetted address; 0 started, -1 failed (errno). */
static int
start_connect(struct conn *c, const struct sockaddr_storage *ss)
{
	socklen_t	len = ss->ss_family == AF_INET ? sizeof(struct sockaddr_in) :
			    sizeof(struct sockaddr_in6);
	int		one = 1, fd;

	if ((fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	conn_local_cc(c->conf, fd, ss);
	if (connect(fd, (const struct sockaddr *)ss, len) == -1 && errno != EINPROGRESS) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	c->ufd = fd;
	c->uwant = EPOLLOUT;
	c->dial_phase = DP_CONNECT;
	conn_timer(c, c->conf->connect_ms);
	conn_want(c);
	return 0;
}

static void
drop_upstream_fd(struct conn *c)
{
	if (c->ufd == -1)
		return;
	if (c->uio.active)
		ev_io_del(&c->uio);
	close(c->ufd);
	c->ufd = -1;
}

/* Is a local address out of bounds for this target (either policy)? */
static int
needs_local_check(struct conn *c)
{
	const struct sockaddr_storage *lit = c->is_literal ? &c->lit : NULL;

	return policy_wants_local_check(&c->conf->policy, c->host, lit) ||
	    (c->reg != NULL && c->reg->policy != NULL &&
	    policy_wants_local_check(c->reg->policy, c->host, lit));
}

static void
connect_next(struct conn *c)
{
	enum dial_fail	f = c->fail != DIAL_OK ? c->fail : DIAL_UNREACH;
	int		local_vetted = needs_local_check(c);

	while (c->addr_i < c->naddrs) {
		struct sockaddr_storage *ss = &c->addrs[c->addr_i++];

		/* defence in depth: never dial a local address that was not cleared */
		if (local_vetted && !addr_is_public((struct sockaddr *)ss)) {
			log_warnx("%s: %s: refusing unvetted local address", c->client, c->host);
			continue;
		}
		addr_ntop(ss, c->addr, sizeof(c->addr));
		if (start_connect(c, ss) == 0)
			return;
		f = errno_fail(errno);
		log_info("%s: connect %s (%s): %s", c->client, c->host, c->addr, strerror(errno));
	}
	finish(c, f);
}

/* ------------------------------------------------------- upstream proxy */

static void
up_resolve(struct conn *c)
{
	struct sockaddr_storage	lit;
	char			text[PROXY_HOST_MAX + 1];

	if (host_parse(c->up->host, strlen(c->up->host), text,
	    sizeof(text), &lit) == HOST_ADDR) {
		c->upaddrs[0] = lit;
		c->nup = 1;
		up_connect(c);
		return;
	}
	resolve(c, c->up->host, DP_UP_RESOLVE);
}

static void
up_connect(struct conn *c)
{
	size_t	i;

	/* the upstream proxy is trusted configuration: no local check on it */
	for (i = c->up_i; i < c->nup; i++) {
		sockaddr_set_port(&c->upaddrs[i], c->up->port);
		c->up_i = i + 1;
		if (start_connect(c, &c->upaddrs[i]) == 0)
			return;
		log_warn("upstream proxy %s", c->up->host);
	}
	finish(c, DIAL_UPSTREAM);
}

static void
connected(struct conn *c)
{
	/* plain HTTP through an upstream proxy needs no handshake */
	if (c->via_upstream && !c->forwarded) {
		if (dial_up_send(c) == -1) {
			finish(c, DIAL_UPSTREAM);
			return;
		}
		c->dial_phase = DP_UP_HANDSHAKE;
		c->uwant = EPOLLIN;
		conn_want(c);
		return;
	}
	finish(c, DIAL_OK);
}

static void
dial_io(struct conn *c, int fd, uint32_t events)
{
	int		err = 0, r;
	socklen_t	len = sizeof(err);

	if (c->dial_phase == DP_UP_HANDSHAKE) {
		if ((r = dial_up_reply(c)) == 1)
			return;
		finish(c, r == 0 ? DIAL_OK : DIAL_UPSTREAM);
		return;
	}
	if (c->dial_phase != DP_CONNECT)
		return;
	if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
		err = errno;
	if (err == 0 && !(events & EPOLLOUT))
		return;
	if (err == 0) {
		connected(c);
		return;
	}
	log_info("%s: connect %s (%s): %s", c->client, c->host,
	    c->via_upstream ? c->up->host : c->addr, strerror(err));
	drop_upstream_fd(c);
	c->fail = errno_fail(err);
	if (c->via_upstream)
		up_connect(c);
	else
		connect_next(c);
}

static void
dial_timeout(struct conn *c)
{
	struct verdict	v = { 0, "dns_timeout", "resolver" };

	switch (c->dial_phase) {
	case DP_RESOLVE:
		resolve_cancel(c->rq);
		c->rq = NULL;
		c->verdict = v;
		audit_decision(c, &v);
		finish(c, DIAL_TIMEOUT);
		break;
	case DP_UP_RESOLVE:
		resolve_cancel(c->rq);
		c->rq = NULL;
		finish(c, DIAL_TIMEOUT);
		break;
	case DP_CONNECT:
		log_info("%s: connect %s (%s): timed out", c->client, c->host, c->addr);
		drop_upstream_fd(c);
		/* one timeout is the whole budget: no further addresses */
		finish(c, DIAL_TIMEOUT);
		break;
	case DP_UP_HANDSHAKE:
		drop_upstream_fd(c);
		finish(c, DIAL_TIMEOUT);
		break;
	case DP_ASK:
		log_info("%s: %s: no decision from the owner in time", c->client, c->host);
		dial_decided(c, 0, 0, NULL);
		break;
	case DP_NONE:
		break;
	}
}

static void
dial_cancel(struct conn *c)
{
	ask_done(c);
	if (c->rq != NULL) {
		resolve_cancel(c->rq);
		c->rq = NULL;
	}
	c->dial_phase = DP_NONE;
}
