/*
 * The loopback listeners (HTTP proxy and SOCKS5).  Accepting stops for a
 * moment when descriptors run out instead of spinning; a new connection
 * over the bounds on unauthenticated ones displaces the oldest of them
 * (conn_admit()), and one over max-connections is closed at once.
 */
#include "config.h"

#include <arpa/inet.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "front/front.h"
#include "relay/relay.h"

#define ACCEPT_BATCH	64
#define ACCEPT_PAUSE_MS	100
#define LISTEN_BACKLOG	4096

static void	accept_ready(struct ev_io *, uint32_t, void *);

static void
resume(struct ev_timer *t, void *arg)
{
	struct listener *l = arg;

	if (l->fd != -1 && !l->io.active)
		ev_io_add(&l->io, l->fd, EPOLLIN, accept_ready, l);
}

static void
over_limit(struct listener *l, int fd)
{
	static uint64_t	last;

	if (ev_now() - last > 5000) {
		log_warnx("%s: connection limit reached (%u connections, %u unauthenticated)",
		    l->name, conn_count(), conn_pending());
		last = ev_now();
	}
	close(fd);
}

static void
accept_ready(struct ev_io *io, uint32_t events, void *arg)
{
	struct listener		*l = arg;
	struct sockaddr_storage	 peer;
	socklen_t		 len;
	int			 fd, i;

	for (i = 0; i < ACCEPT_BATCH; i++) {
		if (audit_blocked()) {
			/* nothing new until the audit sink has caught up */
			ev_io_del(&l->io);
			ev_timer_start(&l->retry, ACCEPT_PAUSE_MS);
			return;
		}
		len = sizeof(peer);
		fd = accept4(l->fd, (struct sockaddr *)&peer, &len,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
				return;
			log_warn("%s: accept", l->name);
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				ev_io_del(&l->io);
				ev_timer_start(&l->retry, ACCEPT_PAUSE_MS);
			}
			return;
		}
		if (conn_admit(l->env->conf, &peer) == -1) {
			over_limit(l, fd);
			continue;
		}
		conn_new(l->pp, l->env->conf, fd, &peer);
	}
}

static void
name_of(const struct sockaddr_storage *ss, char *out, size_t len)
{
	char	a[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &sin6->sin6_addr, a, sizeof(a));
		snprintf(out, len, "[%s]:%u", a, ntohs(sin6->sin6_port));
	} else {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &sin->sin_addr, a, sizeof(a));
		snprintf(out, len, "%s:%u", a, ntohs(sin->sin_port));
	}
}

int
listener_open(struct listener *l, const struct proto_handler *pp,
    const struct sockaddr_storage *ss, struct proxy_env *env)
{
	struct sockaddr_storage	bound;
	socklen_t		len = ss->ss_family == AF_INET ? sizeof(struct sockaddr_in) :
				    sizeof(struct sockaddr_in6);
	int			one = 1;

	l->pp = pp;
	l->env = env;
	name_of(ss, l->name, sizeof(l->name));
	l->fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (l->fd == -1) {
		log_warn("listen %s", l->name);
		return -1;
	}
	if (setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    bind(l->fd, (const struct sockaddr *)ss, len) == -1 ||
	    listen(l->fd, LISTEN_BACKLOG) == -1) {
		log_warn("listen %s", l->name);
		close(l->fd);
		l->fd = -1;
		return -1;
	}
	len = sizeof(bound);
	if (getsockname(l->fd, (struct sockaddr *)&bound, &len) == 0)
		name_of(&bound, l->name, sizeof(l->name));
	ev_timer_init(&l->retry, resume, l);
	if (ev_io_add(&l->io, l->fd, EPOLLIN, accept_ready, l) == -1) {
		close(l->fd);
		l->fd = -1;
		return -1;
	}
	log_notice("%s proxy listening on %s", pp->name, l->name);
	return 0;
}

void
listener_close(struct listener *l)
{
	if (l->fd == -1)
		return;
	ev_timer_stop(&l->retry);
	if (l->io.active)
		ev_io_del(&l->io);
	close(l->fd);
	l->fd = -1;
}
