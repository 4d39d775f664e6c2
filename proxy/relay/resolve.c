/*
 * Name resolution with c-ares on the process's one event loop: c-ares
 * tells us which sockets it wants watched (sock-state callback), we call
 * ares_process_fd() when they are ready and when its timeout expires.
 * Results are always delivered from the loop, never from inside
 * resolve_start(), so callers need not be re-entrant.
 */
#include "config.h"

#include <sys/time.h>

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ares.h>

#include "log.h"
#include "relay/relay.h"

struct resolve_req {
	resolve_cb		*cb;
	void			*arg;
	int			 cancelled;	/* freed when c-ares lets go of it */
	int			 starting;	/* inside ares_getaddrinfo() */
	int			 finished;	/* result kept, delivery pending */
	int			 status;
	struct sockaddr_storage	 addrs[PROXY_ADDRS_MAX];
	size_t			 naddrs;
	struct resolve_names	 names;
	struct ev_timer		 deliver;
};

struct ares_sock {
	LIST_ENTRY(ares_sock)	 entry;
	int			 fd;
	int			 dead;
	struct ev_io		 io;
};

static ares_channel		 channel;
static int			 channel_up;
static unsigned			 timeout_ms;
static struct ev_timer		 ares_tmr;
static struct ev_timer		 reap_tmr;
static LIST_HEAD(, ares_sock)	 socks = LIST_HEAD_INITIALIZER(socks);

static void	rearm(void);

static void
reap(struct ev_timer *t, void *arg)
{
	struct ares_sock *s, *next;

	for (s = LIST_FIRST(&socks); s != NULL; s = next) {
		next = LIST_NEXT(s, entry);
		if (s->dead) {
			LIST_REMOVE(s, entry);
			free(s);
		}
	}
}

static void
sock_ready(struct ev_io *io, uint32_t events, void *arg)
{
	struct ares_sock *s = arg;
	ares_socket_t	  rfd = ARES_SOCKET_BAD, wfd = ARES_SOCKET_BAD;

	if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
		rfd = s->fd;
	if (events & EPOLLOUT)
		wfd = s->fd;
	ares_process_fd(channel, rfd, wfd);
	rearm();
}

static void
sock_state(void *data, ares_socket_t fd, int readable, int writable)
{
	struct ares_sock	*s;
	uint32_t		 ev = (readable ? EPOLLIN : 0) | (writable ? EPOLLOUT : 0);

	LIST_FOREACH(s, &socks, entry)
		if (!s->dead && s->fd == fd)
			break;
	if (ev == 0) {
		/* c-ares closes the socket right after telling us */
		if (s != NULL) {
			ev_io_del(&s->io);
			s->dead = 1;
			ev_timer_start(&reap_tmr, 0);
		}
		return;
	}
	if (s != NULL) {
		ev_io_set(&s->io, ev);
		return;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		log_warn("resolver: socket watch");
		return;
	}
	s->fd = fd;
	if (ev_io_add(&s->io, fd, ev, sock_ready, s) == -1) {
		free(s);
		return;
	}
	LIST_INSERT_HEAD(&socks, s, entry);
}

static void
ares_tick(struct ev_timer *t, void *arg)
{
	ares_process_fd(channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
	rearm();
}

static void
rearm(void)
{
	struct timeval	 tv, *tvp;

	if (!channel_up)
		return;
	if ((tvp = ares_timeout(channel, NULL, &tv)) == NULL) {
		ev_timer_stop(&ares_tmr);
		return;
	}
	ev_timer_start(&ares_tmr, (uint64_t)tvp->tv_sec * 1000 +
	    (uint64_t)(tvp->tv_usec + 999) / 1000);
}

static int
channel_open(const char *servers)
{
	struct ares_options	opts;
	int			r, mask;

	memset(&opts, 0, sizeof(opts));
	opts.sock_state_cb = sock_state;
	/* two tries, the second with twice the wait: the budget in about three parts */
	opts.timeout = (int)(timeout_ms / 3 > 100 ? timeout_ms / 3 : 100);
	opts.tries = 2;
	opts.lookups = (char *)"fb";
	/*
	 * The name decided is the name looked up: no search domains
	 * (resolv.conf "search", LOCALDOMAIN), which would take "db" to a
	 * denied "db.corp.example".  An empty list, as c-ares's
	 * getaddrinfo does not heed ARES_FLAG_NOSEARCH.
	 */
	opts.domains = NULL;
	opts.ndomains = 0;
	mask = ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES |
	    ARES_OPT_LOOKUPS | ARES_OPT_DOMAINS;
	if ((r = ares_init_options(&channel, &opts, mask)) != ARES_SUCCESS) {
		log_warnx("resolver: ares_init_options: %s", ares_strerror(r));
		return -1;
	}
	channel_up = 1;
	if (servers != NULL &&
	    (r = ares_set_servers_ports_csv(channel, servers)) != ARES_SUCCESS) {
		log_warnx("resolver: dns-server %s: %s", servers, ares_strerror(r));
		ares_destroy(channel);
		channel_up = 0;
		return -1;
	}
	return 0;
}

int
resolve_init(const char *servers, unsigned tmo_ms)
{
	int	r;

	if ((r = ares_library_init(ARES_LIB_INIT_ALL)) != ARES_SUCCESS) {
		log_warnx("resolver: ares_library_init: %s", ares_strerror(r));
		return -1;
	}
	timeout_ms = tmo_ms;
	ev_timer_init(&ares_tmr, ares_tick, NULL);
	ev_timer_init(&reap_tmr, reap, NULL);
	return channel_open(servers);
}

/* Pending lookups end with ARES_EDESTRUCTION; their callers see a DNS failure. */
static void
channel_close(void)
{
	struct ares_sock *s;

	if (channel_up) {
		ares_destroy(channel);
		channel_up = 0;
	}
	ev_timer_stop(&ares_tmr);
	LIST_FOREACH(s, &socks, entry)
		if (!s->dead) {
			ev_io_del(&s->io);
			s->dead = 1;
		}
	ev_timer_start(&reap_tmr, 0);
}

/* Only done when the servers change. */
int
resolve_set_servers(const char *servers, unsigned tmo_ms)
{
	channel_close();
	timeout_ms = tmo_ms;
	return channel_open(servers);
}

void
resolve_shutdown(void)
{
	channel_close();
	reap(NULL, NULL);
	ev_timer_stop(&reap_tmr);
	ares_library_cleanup();
}

static void
req_free(struct resolve_req *rq)
{
	ev_timer_stop(&rq->deliver);
	free(rq);
}

static void
deliver(struct ev_timer *t, void *arg)
{
	struct resolve_req *rq = arg;

	rq->cb(rq->arg, rq->status, rq->addrs, rq->naddrs, &rq->names);
	req_free(rq);
}

static void
keep_addrs(struct resolve_req *rq, const struct ares_addrinfo *res)
{
	const struct ares_addrinfo_node	*n;
	size_t				 i, len;

	for (n = res ? res->nodes : NULL; n != NULL && rq->naddrs < PROXY_ADDRS_MAX;
	    n = n->ai_next) {
		if (n->ai_family == AF_INET)
			len = sizeof(struct sockaddr_in);
		else if (n->ai_family == AF_INET6)
			len = sizeof(struct sockaddr_in6);
		else
			continue;
		if ((size_t)n->ai_addrlen < len)
			continue;
		for (i = 0; i < rq->naddrs; i++)
			if (memcmp(&rq->addrs[i], n->ai_addr, len) == 0)
				break;
		if (i < rq->naddrs)
			continue;
		memset(&rq->addrs[rq->naddrs], 0, sizeof(rq->addrs[0]));
		memcpy(&rq->addrs[rq->naddrs++], n->ai_addr, len);
	}
}

/* One name of the chain, canonical and once; -1 when it cannot be read or kept. */
static int
keep_name(struct resolve_names *nm, const char *name)
{
	char	canon[PROXY_HOST_MAX + 2];
	size_t	i, len = strlen(name);

	if (len > 0 && name[len - 1] == '.')
		len--;
	if (len == 0 || len > PROXY_HOST_MAX)
		return -1;
	for (i = 0; i < len; i++) {
		if (!isalnum((unsigned char)name[i]) && strchr("-_.", name[i]) == NULL)
			return -1;
		canon[i] = (char)tolower((unsigned char)name[i]);
	}
	canon[len] = '\0';
	for (i = 0; i < nm->n; i++)
		if (strcmp(nm->name[i], canon) == 0)
			return 0;
	if (nm->n == RESOLVE_NAMES_MAX)
		return -1;
	memcpy(nm->name[nm->n++], canon, len + 1);
	return 0;
}

/*
 * Every name the answer went through, so that policy sees them all: a
 * CNAME to a denied name is that name.  A chain too long to keep or a
 * name that cannot be read fails the lookup rather than be cut short.
 */
static int
keep_names(struct resolve_req *rq, const struct ares_addrinfo *res)
{
	const struct ares_addrinfo_cname *cn;

	for (cn = res ? res->cnames : NULL; cn != NULL; cn = cn->next)
		if ((cn->alias != NULL && keep_name(&rq->names, cn->alias) == -1) ||
		    (cn->name != NULL && keep_name(&rq->names, cn->name) == -1))
			return -1;
	return 0;
}

static void
ares_done(void *arg, int status, int timeouts, struct ares_addrinfo *res)
{
	struct resolve_req *rq = arg;

	if (rq->cancelled) {
		ares_freeaddrinfo(res);
		req_free(rq);
		return;
	}
	rq->status = status;
	if (status == ARES_SUCCESS) {
		keep_addrs(rq, res);
		if (keep_names(rq, res) == -1) {
			log_warnx("resolver: CNAME chain too long or unreadable");
			rq->status = ARES_EBADRESP;
		}
	}
	ares_freeaddrinfo(res);
	if (rq->status == ARES_SUCCESS && rq->naddrs == 0)
		rq->status = ARES_ENODATA;
	rq->finished = 1;
	if (rq->starting) {
		ev_timer_start(&rq->deliver, 0);
		return;
	}
	deliver(&rq->deliver, rq);
}

struct resolve_req *
resolve_start(const char *host, resolve_cb *cb, void *arg)
{
	struct resolve_req		*rq;
	struct ares_addrinfo_hints	 hints;

	if (!channel_up) {
		errno = EAGAIN;
		return NULL;
	}
	if ((rq = calloc(1, sizeof(*rq))) == NULL)
		return NULL;
	rq->cb = cb;
	rq->arg = arg;
	ev_timer_init(&rq->deliver, deliver, rq);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = ARES_AI_NOSORT;
	rq->starting = 1;
	ares_getaddrinfo(channel, host, NULL, &hints, ares_done, rq);
	rq->starting = 0;
	rearm();
	return rq;
}

void
resolve_cancel(struct resolve_req *rq)
{
	if (rq == NULL)
		return;
	if (rq->finished) {
		req_free(rq);
		return;
	}
	rq->cancelled = 1;
}

const char *
resolve_strerror(int status)
{
	return ares_strerror(status);
}

int
resolve_is_timeout(int status)
{
	return status == ARES_ETIMEOUT;
}
