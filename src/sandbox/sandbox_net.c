/*
 * Managed network: the child gets a network namespace of its own, where
 * only loopback exists, and its one way out is the proxy.
 *
 * Why a namespace and not a seccomp filter on connect(2): seccomp sees
 * only the syscall's registers, and connect's address is behind a
 * pointer, so a filter cannot tell the proxy's 127.0.0.1:port from any
 * other address (user-space notification could, but re-reading the
 * child's memory after the check is racy).  Landlock's TCP rules know
 * ports but not addresses.  A namespace needs no such judgement: nothing
 * but what execd bridges exists in it.
 *
 * The child, inside its new namespace, brings up lo and listens on each
 * proxy endpoint's own address and port (so the proxy variables in its
 * environment stay right as they are), then hands the listening sockets
 * to execd over a socketpair before it execs.  execd, in the host's
 * namespace, accepts on them and relays each connection to the real
 * proxy.  The routes end when the process's leader exits.
 */
#include "config.h"

#include <sys/ioctl.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/queue.h>

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evloop.h"
#include "log.h"
#include "tcplocal.h"
#include "util/fdpass.h"
#include "sandbox/sandbox_int.h"
#include "sandbox/sandbox_tp.h"

#define BRIDGE_BUF	16384
#define BRIDGE_CONNS	256	/* open connections per process */

int
sbx_route_make(const char *host, unsigned port, struct sbx_route *rp)
{
	struct sockaddr_in	sin = { .sin_family = AF_INET };
	struct sockaddr_in6	sin6 = { .sin6_family = AF_INET6 };
	struct sbx_route	r;

	memset(&r, 0, sizeof(r));
	if (port == 0 || port > 65535)
		return 0;
	if (strcmp(host, "localhost") == 0)
		host = "127.0.0.1";
	if (inet_pton(AF_INET, host, &sin.sin_addr) == 1) {
		if ((ntohl(sin.sin_addr.s_addr) >> 24) != 127)
			return 0;	/* only loopback endpoints are routed */
		sin.sin_port = htons((uint16_t)port);
		memcpy(&r.addr, &sin, sizeof(sin));
		r.len = sizeof(sin);
	} else if (inet_pton(AF_INET6, host, &sin6.sin6_addr) == 1) {
		if (!IN6_IS_ADDR_LOOPBACK(&sin6.sin6_addr))
			return 0;
		sin6.sin6_port = htons((uint16_t)port);
		memcpy(&r.addr, &sin6, sizeof(sin6));
		r.len = sizeof(sin6);
	} else
		return 0;
	*rp = r;
	return 1;
}

int
sbx_route_add(struct sandbox_plan *plan, const char *host, unsigned port)
{
	struct sbx_route	r;
	size_t			i;

	if (sbx_route_make(host, port, &r) == 0)
		return 0;
	for (i = 0; i < plan->nroutes; i++)
		if (plan->routes[i].len == r.len && memcmp(&plan->routes[i].addr, &r.addr,
		    r.len) == 0)
			return 0;
	if (plan->nroutes == SBX_MAX_ROUTES)
		return -1;
	plan->routes[plan->nroutes++] = r;
	return 0;
}

/* ---- in the child, inside its new network namespace ---- */

int
sbx_loopback_up(void)
{
	struct ifreq	ifr;
	int		s, e = 0;

	if ((s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return errno;
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) == -1)
		e = errno;
	else if (!(ifr.ifr_flags & IFF_UP)) {
		ifr.ifr_flags |= IFF_UP;
		if (ioctl(s, SIOCSIFFLAGS, &ifr) == -1)
			e = errno;
	}
	close(s);
	return e;
}

static int
route_listener(const struct sbx_route *r)
{
	int	fd, on = 1;

	if ((fd = socket(r->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (r->addr.ss_family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) == -1 ||
	    bind(fd, (const struct sockaddr *)&r->addr, r->len) == -1 || listen(fd, 128) == -1) {
		on = errno;
		close(fd);
		errno = on;
		return -1;
	}
	return fd;
}

_Static_assert(SBX_MAX_ROUTES <= FDPASS_MAX, "one message carries every route");

/* transparent TCP: the DNS answerer's sockets, a message of their own */
static int
send_dns(int sv)
{
	struct iovec	iov;
	int		fds[2], e = 0;
	char		count = 2;

	if ((e = sbx_dns_sockets(&fds[0], &fds[1])) != 0)
		return e;
	iov.iov_base = &count;
	iov.iov_len = 1;
	if (fdpass_send(sv, &iov, 1, fds, 2, MSG_NOSIGNAL) == -1)
		e = errno;
	close(fds[0]);
	close(fds[1]);
	return e;
}

int
sbx_net_apply(const struct sandbox_plan *plan)
{
	struct iovec	 iov;
	int		 fds[SBX_MAX_ROUTES], e;
	size_t		 i, n = 0;
	char		 count;

	if ((e = sbx_loopback_up()) != 0)
		return e;
	if (plan->net != SBX_NET_MANAGED)
		return 0;	/* network off: loopback only, no way out */
	for (i = 0; i < plan->nroutes; i++) {
		if ((fds[n] = route_listener(&plan->routes[i])) == -1) {
			e = errno;
			goto out;
		}
		n++;
	}
	count = (char)n;
	iov.iov_base = &count;
	iov.iov_len = 1;
	if (fdpass_send(plan->route_sv[1], &iov, 1, fds, n, MSG_NOSIGNAL) == -1)
		e = errno;
	else if (plan->transparent)
		e = send_dns(plan->route_sv[1]);
out:
	/* execd has them now; the command must not */
	for (i = 0; i < n; i++)
		close(fds[i]);
	return e;
}

/* ---- in execd: the relay ---- */

struct bridge;

struct side {
	struct bconn	*c;
	int		 fd;
	struct ev_io	 io;
	uint8_t		 buf[BRIDGE_BUF];	/* read here, to be written to the other side */
	size_t		 off, len;
	int		 eof;		/* nothing more to read */
	int		 shut;		/* our write side is shut down */
};

struct bconn {
	struct bridge		*b;
	struct side		 in, out;	/* the child's connection, the proxy's */
	int			 connecting;
	TAILQ_ENTRY(bconn)	 entry;
};

struct listener {
	struct bridge		*b;
	struct ev_io		 io;
	const struct sbx_route	*route;
};

struct bridge {
	pid_t			 pid;
	int			 pidfd;
	struct ev_io		 pid_io;
	struct sbx_route	 routes[SBX_MAX_ROUTES];
	struct listener		 l[SBX_MAX_ROUTES];
	size_t			 nl;
	TAILQ_HEAD(, bconn)	 conns;
	size_t			 nconns;
	struct sbx_dns		*dns;		/* transparent TCP's, else NULL */
	struct sbx_tp		*tp;
};

static void	side_cb(struct ev_io *, uint32_t, void *);

static void
conn_close(struct bconn *c)
{
	ev_io_del(&c->in.io);
	ev_io_del(&c->out.io);
	close(c->in.fd);
	close(c->out.fd);
	TAILQ_REMOVE(&c->b->conns, c, entry);
	c->b->nconns--;
	free(c);
}

static struct side *
peer(struct side *s)
{
	return s == &s->c->in ? &s->c->out : &s->c->in;
}

/* Write what s holds to its peer; -1 when the connection is beyond use. */
static int
flush_to_peer(struct side *s)
{
	struct side	*p = peer(s);
	ssize_t		 n;

	if (p == &s->c->out && s->c->connecting)
		return 0;
	while (s->off < s->len) {
		n = send(p->fd, s->buf + s->off, s->len - s->off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n == -1)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		s->off += (size_t)n;
	}
	s->off = s->len = 0;
	if (s->eof && !p->shut) {
		(void)shutdown(p->fd, SHUT_WR);
		p->shut = 1;
	}
	return 0;
}

static void
fill(struct side *s)
{
	ssize_t	n;

	while (!s->eof && s->len < sizeof(s->buf)) {
		n = recv(s->fd, s->buf + s->len, sizeof(s->buf) - s->len, MSG_DONTWAIT);
		if (n > 0)
			s->len += (size_t)n;
		else if (n == 0 || (errno != EAGAIN && errno != EINTR))
			s->eof = 1;
		else
			break;
	}
}

static int
interest(struct side *s)
{
	struct side	*p = peer(s);
	uint32_t	 ev = 0;

	if (!s->io.active)
		return 0;	/* hung up, its last bytes on their way */
	if (!s->eof && s->len < sizeof(s->buf))
		ev |= EPOLLIN;
	if (p->off < p->len || (s == &s->c->out && s->c->connecting))
		ev |= EPOLLOUT;
	return ev_io_set(&s->io, ev);
}

static void
side_cb(struct ev_io *io, uint32_t events, void *arg)
{
	struct side	*s = arg;
	struct bconn	*c = s->c;
	int		 err = 0;
	socklen_t	 len = sizeof(err);

	if (s == &c->out && c->connecting) {
		if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1 || err != 0) {
			log_debug("sandbox route to the proxy: %s", strerror(err ? err : errno));
			conn_close(c);
			return;
		}
		c->connecting = 0;
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		fill(s);
	if (flush_to_peer(&c->in) == -1 || flush_to_peer(&c->out) == -1 ||
	    (events & EPOLLERR)) {
		conn_close(c);
		return;
	}
	/* a hung-up side that has nothing left for its peer ends the connection */
	if (((events & EPOLLHUP) && s->len == 0) ||
	    (c->in.eof && c->out.eof && c->in.len == 0 && c->out.len == 0)) {
		conn_close(c);
		return;
	}
	/* else stop hearing the hang-up again and again until the peer took the rest */
	if (events & EPOLLHUP)
		ev_io_del(&s->io);
	if (interest(&c->in) == -1 || interest(&c->out) == -1)
		conn_close(c);
}

static void
accept_cb(struct ev_io *io, uint32_t events, void *arg)
{
	struct listener		*l = arg;
	struct bridge		*b = l->b;
	struct bconn		*c;
	struct sockaddr_storage	 from;
	socklen_t		 len;
	int			 fd, out;

	for (;;) {
		len = sizeof(from);
		if ((fd = accept4(io->fd, (struct sockaddr *)&from, &len,
		    SOCK_NONBLOCK | SOCK_CLOEXEC)) == -1)
			break;
		if (b->nconns >= BRIDGE_CONNS) {
			log_warnx("sandbox: process %ld has %d proxy connections open; refusing "
			    "another", (long)b->pid, BRIDGE_CONNS);
			close(fd);
			continue;
		}
		if ((out = socket(l->route->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, 0)) == -1) {
			log_warn("sandbox: proxy route socket");
			close(fd);
			continue;
		}
		/* both ends on loopback: no pacing (tcplocal.h), best effort */
		(void)tcp_local_cc(fd, (const struct sockaddr *)&from, TCP_LOCAL_CC);
		(void)tcp_local_cc(out, (const struct sockaddr *)&l->route->addr, TCP_LOCAL_CC);
		if (connect(out, (const struct sockaddr *)&l->route->addr, l->route->len) == -1 &&
		    errno != EINPROGRESS) {
			log_debug("sandbox: proxy route connect: %s", strerror(errno));
			close(out);
			close(fd);
			continue;
		}
		if ((c = calloc(1, sizeof(*c))) == NULL) {
			log_warn("sandbox: proxy route");
			close(out);
			close(fd);
			continue;
		}
		c->b = b;
		c->connecting = 1;
		c->in.c = c->out.c = c;
		c->in.fd = fd;
		c->out.fd = out;
		TAILQ_INSERT_TAIL(&b->conns, c, entry);
		b->nconns++;
		if (ev_io_add(&c->in.io, fd, EPOLLIN, side_cb, &c->in) == -1 ||
		    ev_io_add(&c->out.io, out, EPOLLOUT, side_cb, &c->out) == -1)
			conn_close(c);
	}
	if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
		log_warn("sandbox: accept on a proxy route");
}

static void
bridge_end(struct ev_io *io, uint32_t events, void *arg)
{
	struct bridge	*b = arg;
	struct bconn	*c;
	size_t		 i;

	while ((c = TAILQ_FIRST(&b->conns)) != NULL)
		conn_close(c);
	for (i = 0; i < b->nl; i++) {
		ev_io_del(&b->l[i].io);
		close(b->l[i].io.fd);
	}
	sbx_tp_free(b->tp);
	sbx_dns_free(b->dns);
	ev_io_del(&b->pid_io);
	close(b->pidfd);
	log_debug("sandbox: proxy routes of process %ld closed", (long)b->pid);
	free(b);
}

/* The listeners the child sent (fds: room for FDPASS_MAX), or -1. */
static int
recv_listeners(int sock, int *fds, size_t *n)
{
	char	count;

	if (fdpass_recv(sock, &count, 1, fds, n, MSG_DONTWAIT) != 1)
		return -1;
	return *n == (size_t)count ? 0 : -1;
}

/*
 * Transparent TCP: the DNS answerer on the last two sockets the child
 * sent, and the seccomp listener, which the command's own process sent
 * before it ran (so it is there by now).  Without the listener the
 * command's connects fail (ENOSYS): nothing is half open.
 */
static void
transparent_start(struct bridge *b, struct sandbox_plan *plan)
{
	int	fds[FDPASS_MAX], nfd;
	size_t	i, n;

	if (recv_listeners(plan->route_sv[0], fds, &n) == -1 || n != 2) {
		log_warnx("sandbox: process %ld did not hand over its DNS sockets; names do "
		    "not resolve", (long)b->pid);
		for (i = 0; i < n; i++)
			close(fds[i]);
	} else
		b->dns = sbx_dns_new(b->pid, fds[0], fds[1]);
	if (recv_listeners(plan->route_sv[0], fds, &n) == -1 || n != 1) {
		log_warnx("sandbox: process %ld did not hand over its seccomp listener; "
		    "its connects fail", (long)b->pid);
		for (i = 0; i < n; i++)
			close(fds[i]);
		return;
	}
	nfd = fds[0];
	if ((b->tp = sbx_tp_start(b->pid, nfd, b->dns, &plan->socks, plan->socks_user,
	    plan->socks_pass)) != NULL)
		log_info("sandbox: process %ld: transparent TCP through %s", (long)b->pid,
		    plan->socks.len ? "its SOCKS5 endpoint" : "no SOCKS5 endpoint (refused)");
}

void
sbx_bridge_start(struct sandbox_plan *plan, pid_t pid)
{
	struct bridge	*b;
	int		 fds[FDPASS_MAX];
	size_t		 i, n;

	if (recv_listeners(plan->route_sv[0], fds, &n) == -1 || n != plan->nroutes) {
		log_warnx("sandbox: process %ld did not hand over its proxy routes; it has "
		    "no network", (long)pid);
		for (i = 0; i < n; i++)
			close(fds[i]);
		return;
	}
	if (n == 0 && !plan->transparent)
		return;		/* fail closed: a managed network without a proxy */
	if ((b = calloc(1, sizeof(*b))) == NULL || (b->pidfd = pidfd_open(pid, 0)) == -1) {
		log_warn("sandbox: proxy routes of process %ld", (long)pid);
		free(b);
		for (i = 0; i < n; i++)
			close(fds[i]);
		return;
	}
	fcntl(b->pidfd, F_SETFD, FD_CLOEXEC);
	b->pid = pid;
	TAILQ_INIT(&b->conns);
	memcpy(b->routes, plan->routes, sizeof(b->routes));
	for (i = 0; i < n; i++) {
		struct listener *l = &b->l[b->nl];

		l->b = b;
		l->route = &b->routes[i];
		if (fcntl(fds[i], F_SETFL, O_NONBLOCK) == -1 ||
		    ev_io_add(&l->io, fds[i], EPOLLIN, accept_cb, l) == -1) {
			log_warn("sandbox: proxy route of process %ld", (long)pid);
			close(fds[i]);
			continue;
		}
		b->nl++;
	}
	if (plan->transparent)
		transparent_start(b, plan);
	if (ev_io_add(&b->pid_io, b->pidfd, EPOLLIN, bridge_end, b) == -1)
		bridge_end(&b->pid_io, 0, b);
	else
		log_info("sandbox: process %ld reaches the network through %zu proxy routes",
		    (long)pid, b->nl);
}
