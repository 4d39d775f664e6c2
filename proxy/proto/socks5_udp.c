/*
 * SOCKS5 UDP ASSOCIATE (RFC 1928 section 7), when the policy allows UDP.
 * The client's datagrams arrive on a loopback socket of the association;
 * each destination is decided once, as a TCP target would be (host
 * policy, then the resolved addresses), and datagrams go out only to the
 * vetted address.  Only replies from destinations the client has written
 * to are passed back.  The association ends with its TCP connection.
 */
#include "config.h"

#include <arpa/inet.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "sockx.h"
#include "proto/proto.h"
#include "relay/relay.h"
#include "policy/policy.h"

#define UDP_DEST_MAX	64
#define UDP_DGRAM_MAX	65535
#define UDP_HDR_MAX	262		/* RSV FRAG ATYP len name[255] port */

enum dest_state {
	DS_RESOLVING,
	DS_ALLOWED,
	DS_DENIED,
};

struct udp_dest {
	LIST_ENTRY(udp_dest)	 entry;
	struct udp_assoc	*a;
	char			 host[PROXY_HOST_MAX + 1];
	uint16_t		 port;
	enum dest_state		 state;
	struct sockaddr_storage	 addr;
	struct resolve_req	*rq;
	struct buf		 pending;	/* the latest datagram during the lookup */
};

struct udp_assoc {
	struct conn		*c;
	int			 cfd, ofd4, ofd6;
	struct ev_io		 cio, oio4, oio6;
	struct sockaddr_storage	 client;	/* the one source served */
	int			 have_client;	/* its port is known */
	LIST_HEAD(, udp_dest)	 dests;
	unsigned		 ndests;
	int			 capped;	/* the bound's refusal was audited */
};

static uint8_t	dgram[UDP_DGRAM_MAX + UDP_HDR_MAX];

static socklen_t
sa_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET ? sizeof(struct sockaddr_in) :
	    sizeof(struct sockaddr_in6);
}

static int
same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return 0;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		    ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
	    &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
}

static uint16_t
port_of(const struct sockaddr_storage *ss)
{
	return ntohs(ss->ss_family == AF_INET ? ((const struct sockaddr_in *)ss)->sin_port :
	    ((const struct sockaddr_in6 *)ss)->sin6_port);
}

static void
send_out(struct udp_dest *d, const void *p, size_t n)
{
	struct udp_assoc *a = d->a;
	int		  fd = d->addr.ss_family == AF_INET ? a->ofd4 : a->ofd6;

	if (fd == -1 || sendto(fd, p, n, 0, (struct sockaddr *)&d->addr, sa_len(&d->addr)) == -1)
		return;		/* UDP: a lost datagram is the client's to retry */
	a->c->c2u.bytes += n;
	a->c->last_io = ev_now();
}

/* The decision for one destination, audited once: the connection's fields are borrowed. */
static void
decide(struct udp_dest *d, const struct verdict *v)
{
	struct conn	*c = d->a->c;
	char		 host[sizeof(c->host)];
	uint16_t	 port = c->port;

	memcpy(host, c->host, sizeof(host));
	snprintf(c->host, sizeof(c->host), "%s", d->host);
	c->port = d->port;
	c->naddrs = v->allow || d->addr.ss_family != 0 ? 1 : 0;
	c->addrs[0] = d->addr;
	if (c->naddrs)
		addr_ntop(&d->addr, c->addr, sizeof(c->addr));
	else
		c->addr[0] = '\0';
	audit_decision(c, v);
	memcpy(c->host, host, sizeof(host));
	c->port = port;
	d->state = v->allow ? DS_ALLOWED : DS_DENIED;
	if (d->state == DS_ALLOWED && buf_avail(&d->pending) > 0)
		send_out(d, buf_head(&d->pending), buf_avail(&d->pending));
	buf_free(&d->pending);
}

static int
addrs_ok(struct conn *c, const char *host, struct sockaddr_storage *ss, struct verdict *v)
{
	policy_check_addrs(&c->conf->policy, "baseline_policy", host, ss, 1, v);
	if (v->allow && c->reg->policy != NULL)
		policy_check_addrs(c->reg->policy, "process_policy", host, ss, 1, v);
	return v->allow;
}

static void
resolved(void *arg, int status, const struct sockaddr_storage *addrs, size_t n,
    const struct resolve_names *names)
{
	struct udp_dest	*d = arg;
	struct conn	*c = d->a->c;
	struct verdict	 v = { 0, "dns_failure", "resolver" };
	size_t		 i;

	d->rq = NULL;
	if (status != 0 || n == 0) {
		decide(d, &v);
		return;
	}
	/* a CNAME to a denied name is that name */
	v.reason = "denied";
	for (i = 0; i < names->n; i++) {
		v.source = "baseline_policy";
		if (policy_denies_name(&c->conf->policy, names->name[i]))
			break;
		v.source = "process_policy";
		if (c->reg->policy != NULL && policy_denies_name(c->reg->policy, names->name[i]))
			break;
	}
	if (i < names->n) {
		decide(d, &v);
		return;
	}
	/* every answer is vetted, the first one is used */
	for (i = 0; i < n; i++) {
		struct sockaddr_storage a = addrs[i];

		if (!addrs_ok(d->a->c, d->host, &a, &v)) {
			d->addr = addrs[i];
			decide(d, &v);
			return;
		}
	}
	d->addr = addrs[0];
	if (d->addr.ss_family == AF_INET)
		((struct sockaddr_in *)&d->addr)->sin_port = htons(d->port);
	else
		((struct sockaddr_in6 *)&d->addr)->sin6_port = htons(d->port);
	decide(d, &v);
}

/*
 * A destination beyond UDP_DEST_MAX is refused without a lookup; the first
 * such refusal of an association is audited, so that a client spraying
 * destinations leaves one record, not one per datagram.
 */
static void
over_bound(struct udp_assoc *a, const char *host, const struct sockaddr_storage *lit,
    uint16_t port)
{
	struct udp_dest		 d;
	struct verdict		 v = { 0, "udp_destination_limit", "proxy" };

	if (a->capped)
		return;
	a->capped = 1;
	log_warnx("socks5 udp: association of %s over %d destinations, %s:%u refused",
	    a->c->reg->id, UDP_DEST_MAX, host, port);
	memset(&d, 0, sizeof(d));
	d.a = a;
	snprintf(d.host, sizeof(d.host), "%s", host);
	d.port = port;
	if (lit != NULL)
		d.addr = *lit;
	decide(&d, &v);
}

static struct udp_dest *
dest_get(struct udp_assoc *a, const char *host, const struct sockaddr_storage *lit,
    uint16_t port)
{
	struct conn		*c = a->c;
	struct udp_dest		*d;
	struct verdict		 v;

	LIST_FOREACH(d, &a->dests, entry)
		if (d->port == port && strcmp(d->host, host) == 0)
			return d;
	if (a->ndests >= UDP_DEST_MAX) {
		over_bound(a, host, lit, port);
		return NULL;
	}
	if ((d = calloc(1, sizeof(*d))) == NULL)
		return NULL;
	d->a = a;
	snprintf(d->host, sizeof(d->host), "%s", host);
	d->port = port;
	d->state = DS_RESOLVING;
	LIST_INSERT_HEAD(&a->dests, d, entry);
	a->ndests++;
	policy_check_host(&c->conf->policy, "baseline_policy", host, lit, port,
	    "UDP", 0, PROTO_SOCKS5_UDP, &v);
	if (v.allow && c->reg->policy != NULL)
		policy_check_host(c->reg->policy, "process_policy", host, lit, port,
		    "UDP", 0, PROTO_SOCKS5_UDP, &v);
	if (!v.allow || lit != NULL) {
		if (lit != NULL)
			d->addr = *lit;
		if (d->addr.ss_family == AF_INET)
			((struct sockaddr_in *)&d->addr)->sin_port = htons(port);
		else if (d->addr.ss_family == AF_INET6)
			((struct sockaddr_in6 *)&d->addr)->sin6_port = htons(port);
		decide(d, &v);
		return d;
	}
	if ((d->rq = resolve_start(host, resolved, d)) == NULL) {
		v.allow = 0;
		v.reason = "dns_failure";
		v.source = "resolver";
		decide(d, &v);
	}
	return d;
}

/*
 * RSV RSV FRAG ATYP DST.ADDR DST.PORT DATA, read as a SOCKS5 request is:
 * HOST_NAME or HOST_ADDR (*lit filled); -1 for a header that is none,
 * -2 for an invalid name (*port and *hl set: the name is p + 5, *hl - 7
 * bytes), -3 for a fragment or port 0 (host and *port set).
 */
static int
parse_header(const uint8_t *p, size_t n, char *host, struct sockaddr_storage *lit,
    uint16_t *port, size_t *hl)
{
	size_t	alen;
	int	kind = HOST_ADDR;

	if (n < 4 || p[0] != 0 || p[1] != 0)
		return -1;
	switch (p[3]) {
	case 1:
	case 4:
		alen = p[3] == 1 ? 4 : 16;
		if (n < 4 + alen + 2)
			return -1;
		addr_from_bytes(alen == 4 ? AF_INET : AF_INET6, p + 4, lit, host,
		    PROXY_HOST_MAX + 1);
		break;
	case 3:
		if (n < 5)
			return -1;
		alen = 1 + (size_t)p[4];
		if (n < 4 + alen + 2)
			return -1;
		kind = host_parse((const char *)p + 5, alen - 1, host, PROXY_HOST_MAX + 1, lit);
		if (kind == -1) {
			*port = (uint16_t)(p[4 + alen] << 8 | p[5 + alen]);
			*hl = 4 + alen + 2;
			return -2;
		}
		break;
	default:
		return -1;
	}
	*port = (uint16_t)(p[4 + alen] << 8 | p[5 + alen]);
	*hl = 4 + alen + 2;
	/* fragments are not reassembled */
	return *port == 0 || p[2] != 0 ? -3 : kind;
}

/*
 * A datagram dropped before any policy, recorded with what it named: its
 * host (canon), else its name as the client wrote it (raw, an invalid
 * one), else nothing (no header at all).
 */
static void
refuse_dgram(struct udp_assoc *a, const char *reason, const char *canon,
    const uint8_t *raw, size_t len, uint16_t port)
{
	struct conn	*c = a->c;
	struct verdict	 v = { 0, reason, "request" };
	char		 host[sizeof(c->host)];
	uint16_t	 cport = c->port;
	size_t		 naddrs = c->naddrs;

	memcpy(host, c->host, sizeof(host));
	snprintf(c->host, sizeof(c->host), "%s", canon ? canon : "");
	if (raw != NULL)
		conn_raw_host(c, raw, len);
	c->port = port;
	c->naddrs = 0;
	c->addr[0] = '\0';
	audit_decision(c, &v);
	c->has_rawhost = 0;
	c->rawhostlen = 0;
	c->naddrs = naddrs;
	c->port = cport;
	memcpy(c->host, host, sizeof(host));
}

static void
from_client(struct ev_io *io, uint32_t events, void *arg)
{
	struct udp_assoc	*a = arg;
	struct sockaddr_storage	 src;
	socklen_t		 slen = sizeof(src);
	char			 host[PROXY_HOST_MAX + 1];
	struct sockaddr_storage	 lit;
	uint16_t		 port;
	struct udp_dest		*d;
	ssize_t			 n;
	size_t			 hl;
	int			 kind;

	n = recvfrom(a->cfd, dgram, sizeof(dgram), MSG_DONTWAIT, (struct sockaddr *)&src, &slen);
	if (n <= 0)
		return;
	/*
	 * One source only: the address and port the client gave at ASSOCIATE,
	 * the TCP client's own address where it gave none, and the port of
	 * the first datagram from there where it gave no port.
	 */
	if (!same_host(&src, &a->client))
		return;
	if (!a->have_client) {
		a->client = src;
		a->have_client = 1;
	} else if (port_of(&src) != port_of(&a->client))
		return;
	switch ((kind = parse_header(dgram, (size_t)n, host, &lit, &port, &hl))) {
	case -1:
		refuse_dgram(a, "bad_request", NULL, NULL, 0, 0);
		return;
	case -2:
		refuse_dgram(a, "invalid_host", NULL, dgram + 5, hl - 7, port);
		return;
	case -3:
		refuse_dgram(a, "bad_request", host, NULL, 0, port);
		return;
	}
	if ((d = dest_get(a, host, kind == HOST_ADDR ? &lit : NULL, port)) == NULL)
		return;
	if (d->state == DS_ALLOWED)
		send_out(d, dgram + hl, (size_t)n - hl);
	else if (d->state == DS_RESOLVING) {
		buf_reset(&d->pending);
		buf_append(&d->pending, dgram + hl, (size_t)n - hl);
	}
}

static void
from_target(struct ev_io *io, uint32_t events, void *arg)
{
	struct udp_assoc	*a = arg;
	struct sockaddr_storage	 src;
	socklen_t		 slen = sizeof(src);
	struct udp_dest		*d;
	ssize_t			 n;
	size_t			 hl;

	n = recvfrom(io->fd, dgram + UDP_HDR_MAX, UDP_DGRAM_MAX, MSG_DONTWAIT,
	    (struct sockaddr *)&src, &slen);
	if (n < 0 || !a->have_client)
		return;
	LIST_FOREACH(d, &a->dests, entry)
		if (d->state == DS_ALLOWED && same_host(&d->addr, &src) &&
		    port_of(&d->addr) == port_of(&src))
			break;
	if (d == NULL)
		return;		/* nobody asked this sender */
	hl = src.ss_family == AF_INET ? 10 : 22;
	memset(dgram + UDP_HDR_MAX - hl, 0, 3);
	dgram[UDP_HDR_MAX - hl + 3] = src.ss_family == AF_INET ? 1 : 4;
	if (src.ss_family == AF_INET)
		memcpy(dgram + UDP_HDR_MAX - hl + 4, &((struct sockaddr_in *)&src)->sin_addr, 4);
	else
		memcpy(dgram + UDP_HDR_MAX - hl + 4, &((struct sockaddr_in6 *)&src)->sin6_addr, 16);
	dgram[UDP_HDR_MAX - 2] = (uint8_t)(port_of(&src) >> 8);
	dgram[UDP_HDR_MAX - 1] = (uint8_t)port_of(&src);
	if (sendto(a->cfd, dgram + UDP_HDR_MAX - hl, hl + (size_t)n, 0,
	    (struct sockaddr *)&a->client, sa_len(&a->client)) > 0) {
		a->c->u2c.bytes += (uint64_t)n;
		a->c->last_io = ev_now();
	}
}

static int
udp_socket(int family, const struct sockaddr_storage *bind_to, struct ev_io *io,
    ev_io_cb *cb, struct udp_assoc *a)
{
	int	fd;

	if ((fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if ((bind_to != NULL && bind(fd, (const struct sockaddr *)bind_to,
	    sa_len(bind_to)) == -1) || ev_io_add(io, fd, EPOLLIN, cb, a) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

static int
unspecified(const struct sockaddr_storage *ss)
{
	static const uint8_t	zero[16];

	if (ss->ss_family == AF_INET)
		return ((const struct sockaddr_in *)ss)->sin_addr.s_addr == 0;
	if (ss->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)ss)->sin6_addr, zero, 16) == 0;
	return 1;
}

/*
 * Set up the relay; fills bnd with the client-facing address.  from: the
 * address the client said it will send from (NULL or unspecified: the TCP
 * client's), from_port its port (0: the first datagram's).  -1 on failure.
 */
int
udp_assoc_open(struct conn *c, struct sockaddr_storage *bnd,
    const struct sockaddr_storage *from, uint16_t from_port)
{
	struct udp_assoc	*a;
	socklen_t		 len = sizeof(*bnd);

	if ((a = calloc(1, sizeof(*a))) == NULL)
		return -1;
	a->c = c;
	a->cfd = a->ofd4 = a->ofd6 = -1;
	LIST_INIT(&a->dests);
	c->udp = a;
	/* the client side: the loopback address the client reached us on, any port */
	if (getsockname(c->cfd, (struct sockaddr *)bnd, &len) == -1 ||
	    getpeername(c->cfd, (struct sockaddr *)&a->client, &(socklen_t){ sizeof(a->client) })
	    == -1)
		return -1;
	if (from != NULL && !unspecified(from))
		a->client = *from;
	sockaddr_set_port(&a->client, from_port);
	a->have_client = from_port != 0;
	sockaddr_set_port(bnd, 0);
	if ((a->cfd = udp_socket(bnd->ss_family, bnd, &a->cio, from_client, a)) == -1)
		return -1;
	len = sizeof(*bnd);
	if (getsockname(a->cfd, (struct sockaddr *)bnd, &len) == -1)
		return -1;
	a->ofd4 = udp_socket(AF_INET, NULL, &a->oio4, from_target, a);
	a->ofd6 = udp_socket(AF_INET6, NULL, &a->oio6, from_target, a);
	if (a->ofd4 == -1 && a->ofd6 == -1)
		return -1;
	return 0;
}

static void
close_io(struct ev_io *io, int *fd)
{
	if (io->active)
		ev_io_del(io);
	if (*fd != -1)
		close(*fd);
	*fd = -1;
}

/* Descriptors and lookups go now; the memory when the connection is reaped. */
void
udp_assoc_close(struct udp_assoc *a)
{
	struct udp_dest	*d;

	if (a == NULL)
		return;
	close_io(&a->cio, &a->cfd);
	close_io(&a->oio4, &a->ofd4);
	close_io(&a->oio6, &a->ofd6);
	LIST_FOREACH(d, &a->dests, entry)
		if (d->rq != NULL) {
			resolve_cancel(d->rq);
			d->rq = NULL;
		}
}

void
udp_assoc_free(struct udp_assoc *a)
{
	struct udp_dest	*d;

	if (a == NULL)
		return;
	while ((d = LIST_FIRST(&a->dests)) != NULL) {
		LIST_REMOVE(d, entry);
		buf_free(&d->pending);
		free(d);
	}
	free(a);
}
