#include "config.h"

#include <sys/prctl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evloop.h"
#include "log.h"
#include "transport/listen.h"
#include "util/children.h"

#define LISTEN_MAX	16

static struct ev_io	lio[LISTEN_MAX];
static int		nlio;
static pid_t		*children;
static size_t		 nchildren, capchildren;
static const struct listen_ops *ops;

/*
 * The next connections' instances, forked and prepared ahead (each with its
 * spawn helper started, narrowed) and accepting on the listening sockets
 * themselves: no fork, no set-up and no hand-over stand between a
 * connection and the client's first answer.  A few are kept, so that
 * connections arriving back to back find one ready while the listener
 * forks the replacement of the last one taken; a spare that loses the race
 * for a connection sees EAGAIN and waits again.  While there is one, the
 * listener does not accept.
 */
#define SPARE_MAX	3
/*
 * A spare that took a connection is answering its client's initialize
 * right then: while others are left, its replacement is forked a moment
 * later rather than beside that answer, on the same few CPUs (the fork
 * copies the listener's page tables; the child gets ready).  With none
 * left it is forked at once.
 */
#define SPARE_REFILL_MS	3

struct spare {
	pid_t		pid;
	int		sock;	/* a byte: it took a connection; EOF: it is gone */
	struct ev_io	io;
};
static struct spare	spares[SPARE_MAX];
static int		nspares;
static struct ev_timer	refill;

static char	own_name[16] = "execd";	/* the spare's, once it serves a client */

static void	spare_drop(struct spare *);
static void	spares_drop(void);
static struct spare	*spare_of(pid_t);

static void
child_add(pid_t pid)
{
	pid_t	*n;

	if (nchildren == capchildren) {
		n = reallocarray(children, capchildren ? capchildren * 2 : 64, sizeof(*n));
		if (n == NULL) {
			log_warnx("out of memory tracking instance %ld", (long)pid);
			return;
		}
		children = n;
		capchildren = capchildren ? capchildren * 2 : 64;
	}
	children[nchildren++] = pid;
}

static void
child_del(pid_t pid)
{
	size_t	i;

	for (i = 0; i < nchildren; i++)
		if (children[i] == pid) {
			children[i] = children[--nchildren];
			return;
		}
}

static int
is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return 0;
}

int
listen_open(const char *url, int allow_remote, const char *token, char *client_url,
    size_t urllen)
{
	struct addrinfo		 hints = { .ai_socktype = SOCK_STREAM,
				    .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	struct addrinfo		*ai;
	struct sockaddr_storage	 ss;
	socklen_t		 sl = sizeof(ss);
	char			 host[256], port[16], shost[INET6_ADDRSTRLEN];
	const char		*hp, *colon;
	int			 fd, one = 1, r;

	if (strncmp(url, "ws://", 5) != 0) {
		log_warnx("--listen %s: only ws://HOST:PORT is supported", url);
		return -1;
	}
	hp = url + 5;
	if (*hp == '[') {
		colon = strstr(hp, "]:");
		if (colon == NULL || (size_t)(colon - hp - 1) >= sizeof(host))
			goto bad;
		snprintf(host, sizeof(host), "%.*s", (int)(colon - hp - 1), hp + 1);
		colon++;
	} else {
		colon = strrchr(hp, ':');
		if (colon == NULL || (size_t)(colon - hp) >= sizeof(host))
			goto bad;
		snprintf(host, sizeof(host), "%.*s", (int)(colon - hp), hp);
	}
	snprintf(port, sizeof(port), "%.*s", (int)strcspn(colon + 1, "/"), colon + 1);
	if ((r = getaddrinfo(host, port, &hints, &ai)) != 0) {
		log_warnx("--listen %s: %s", url, gai_strerror(r));
		return -1;
	}
	if (!is_loopback(ai->ai_addr) && !allow_remote) {
		log_warnx("--listen %s: not a loopback address; add --allow-remote "
		    "to listen on the network", url);
		freeaddrinfo(ai);
		return -1;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd == -1 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) == -1 || listen(fd, 128) == -1 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) == -1) {
		log_warn("--listen %s", url);
		if (fd != -1)
			close(fd);
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	if (ss.ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, shost, sizeof(shost));
		snprintf(client_url, urllen, "ws://[%s]:%u/%s", shost,
		    ntohs(((struct sockaddr_in6 *)&ss)->sin6_port), token ? token : "");
	} else {
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, shost, sizeof(shost));
		snprintf(client_url, urllen, "ws://%s:%u/%s", shost,
		    ntohs(((struct sockaddr_in *)&ss)->sin_port), token ? token : "");
	}
	return fd;
bad:
	log_warnx("--listen %s: expected ws://HOST:PORT", url);
	return -1;
}

int
listen_inherited(int *fds, int max)
{
	const char	*pid = getenv("LISTEN_PID"), *nfds = getenv("LISTEN_FDS");
	int		 n, i;

	if (pid == NULL || nfds == NULL || atol(pid) != (long)getpid())
		return 0;
	n = atoi(nfds);
	if (n > max)
		n = max;
	for (i = 0; i < n; i++) {
		fds[i] = 3 + i;
		fcntl(fds[i], F_SETFD, FD_CLOEXEC);
	}
	/* children must not think they were socket-activated */
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	return n;
}

static int
is_instance(pid_t pid)
{
	size_t	i;

	for (i = 0; i < nchildren; i++)
		if (children[i] == pid)
			return 1;
	return 0;
}

/*
 * Each instance is the subreaper of its own processes, so nothing of a live
 * instance is ever re-parented past it: whatever else is our child was left
 * by an instance that is gone (SIGKILL, the OOM killer, a crash), and goes
 * the way the instance would have sent it.  Its own children come to us
 * when it dies, and are killed at the next reap.
 */
static void
listen_kill_orphans(void)
{
	pid_t	kids[1024];
	size_t	n, i;

	n = children_list(kids, 1024);
	for (i = 0; i < n; i++)
		if (!is_instance(kids[i])) {
			log_info("killing process %ld, left by a dead instance", (long)kids[i]);
			/* the group first: a daemon may have made its own */
			kill(-kids[i], SIGKILL);
			kill(kids[i], SIGKILL);
		}
}

static void
listen_reap(int signo, void *arg)
{
	struct spare	*sp;
	pid_t		 pid;
	int		 status, reaped = 0;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		reaped = 1;
		if (!is_instance(pid))
			continue;	/* something a dead instance left */
		child_del(pid);
		if (WIFSIGNALED(status))
			log_warnx("instance %ld killed by signal %d", (long)pid, WTERMSIG(status));
		if ((sp = spare_of(pid)) != NULL)
			spare_drop(sp);
		if (ops->gone != NULL)
			ops->gone(pid);
	}
	/* whatever died may have handed us its children */
	if (reaped)
		listen_kill_orphans();
}

static void
listen_stop(int signo, void *arg)
{
	size_t	i;

	log_info("signal %d: stopping; instances end their sessions", signo);
	for (i = 0; i < (size_t)nlio; i++) {
		ev_io_del(&lio[i]);
		close(lio[i].fd);
	}
	nlio = 0;
	spares_drop();	/* they end at EOF */
	/* each instance kills its own processes on SIGTERM */
	for (i = 0; i < nchildren; i++)
		kill(children[i], SIGTERM);
	ev_break();
}

/*
 * Accept on whichever listening socket is ready; -1 when none is (or at
 * EOF on s).  The spares wait on the listening sockets together; with
 * EPOLLEXCLUSIVE a connection wakes one of them, not each, to lose the
 * race for it.
 */
static int
spare_accept(int s, const int *lfds, int n)
{
	struct epoll_event	ev[LISTEN_MAX + 1];
	int			ep, i, k, fd = -1;

	if ((ep = epoll_create1(EPOLL_CLOEXEC)) == -1) {
		log_warn("spare instance: epoll_create1");
		return -1;
	}
	for (i = 0; i <= n; i++) {
		ev[0] = (struct epoll_event){ .events = i < n ? EPOLLIN | EPOLLEXCLUSIVE : EPOLLIN,
		    .data.fd = i < n ? lfds[i] : s };
		if (epoll_ctl(ep, EPOLL_CTL_ADD, ev[0].data.fd, &ev[0]) == -1) {
			log_warn("spare instance: epoll_ctl");
			goto done;
		}
	}
	while (fd == -1) {
		if ((k = epoll_wait(ep, ev, n + 1, -1)) == -1) {
			if (errno == EINTR)
				continue;
			log_warn("spare instance: epoll_wait");
			goto done;
		}
		for (i = 0; i < k; i++)
			if (ev[i].data.fd == s)
				goto done;	/* the listener is stopping, or gone */
		for (i = 0; i < k && fd == -1; i++)
			if ((fd = accept4(ev[i].data.fd, NULL, NULL, SOCK_CLOEXEC)) == -1 &&
			    errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				log_warn("accept");
	}
done:
	close(ep);
	return fd;
}

/*
 * In the spare: get ready, then accept the next connection itself (one
 * wakeup, none of the listener's), tell the listener, and serve it.
 */
static void __attribute__((noreturn))
spare_main(int s)
{
	int	lfds[LISTEN_MAX], n = nlio, i, fd;

	for (i = 0; i < n; i++)
		lfds[i] = lio[i].fd;
	ev_child_reset();
	if (ops->prepare() == -1)
		_exit(1);
	fd = spare_accept(s, lfds, n);
	if (fd != -1 && write(s, "", 1) != 1)
		log_warn("spare instance: telling the listener");
	close(s);
	for (i = 0; i < n; i++)
		close(lfds[i]);
	if (fd == -1)
		_exit(0);
	(void)prctl(PR_SET_NAME, own_name, 0, 0, 0);
	_exit(ops->run(fd, fd));
}

/* The listener accepts (and forks) itself only while there is no spare. */
static void
listener_accepts(int on)
{
	int	i;

	for (i = 0; i < nlio; i++)
		if (ev_io_set(&lio[i], on ? EPOLLIN : 0) == -1)
			log_warn("listening socket %d", lio[i].fd);
}

static struct spare *
spare_of(pid_t pid)
{
	int	i;

	for (i = 0; i < SPARE_MAX; i++)
		if (spares[i].sock != -1 && spares[i].pid == pid)
			return &spares[i];
	return NULL;
}

static void
spare_drop(struct spare *sp)
{
	if (sp->sock == -1)
		return;
	ev_io_del(&sp->io);
	close(sp->sock);
	sp->sock = -1;
	sp->pid = -1;
	if (--nspares == 0)
		listener_accepts(1);
}

static void
spares_drop(void)
{
	int	i;

	for (i = 0; i < SPARE_MAX; i++)
		spare_drop(&spares[i]);
}

/* In a child: the other spares' sockets are the listener's, not ours. */
static void
spares_forget(void)
{
	int	i;

	for (i = 0; i < SPARE_MAX; i++)
		if (spares[i].sock != -1)
			close(spares[i].sock);
}

/* A child with the listening sockets closed and the loop's state dropped. */
static pid_t
instance_fork(void)
{
	pid_t	pid;
	int	i;

	if ((pid = fork()) == -1) {
		log_warn("fork");
		return -1;
	}
	if (pid == 0) {
		for (i = 0; i < nlio; i++)
			close(lio[i].fd);
		spares_forget();
		ev_child_reset();
		return 0;
	}
	child_add(pid);
	return pid;
}

static void	spares_fill(void);

/* A spare took a connection (a byte), or is gone (EOF): the next one. */
static void
spare_event(struct ev_io *io, uint32_t events, void *arg)
{
	struct spare	*sp = arg;
	char		 c;
	ssize_t		 n;

	if ((n = read(sp->sock, &c, 1)) == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	spare_drop(sp);
	if (n != 1)
		return;
	if (nspares == 0)
		spares_fill();
	else if (!ev_timer_armed(&refill))
		ev_timer_start(&refill, SPARE_REFILL_MS);
}

static void
spares_refill(struct ev_timer *t, void *arg)
{
	spares_fill();
}

static int
spare_fork(struct spare *sp)
{
	int	sv[2];
	pid_t	pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1) {
		log_warn("socketpair (spare instance)");
		return -1;
	}
	/*
	 * Told apart from the instances serving a client (ps, tests) until it
	 * is one; named before the fork, so it never shows under our name.
	 */
	(void)prctl(PR_SET_NAME, "execd-spare", 0, 0, 0);
	if ((pid = fork()) == 0) {
		close(sv[0]);
		spares_forget();
		spare_main(sv[1]);
	}
	(void)prctl(PR_SET_NAME, own_name, 0, 0, 0);
	close(sv[1]);
	if (pid == -1) {
		log_warn("fork (spare instance)");
		close(sv[0]);
		return -1;
	}
	child_add(pid);
	if (ev_io_add(&sp->io, sv[0], EPOLLIN, spare_event, sp) == -1) {
		close(sv[0]);
		kill(pid, SIGTERM);
		return -1;
	}
	sp->pid = pid;
	sp->sock = sv[0];
	if (nspares++ == 0)
		listener_accepts(0);
	return 0;
}

/* Fork spares into the empty places, up to SPARE_MAX. */
static void
spares_fill(void)
{
	int	i;

	if (nlio == 0)
		return;
	for (i = 0; i < SPARE_MAX; i++)
		if (spares[i].sock == -1 && spare_fork(&spares[i]) == -1)
			return;
}

static void
listen_accept(struct ev_io *io, uint32_t events, void *arg)
{
	int	fd;

	fd = accept4(io->fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd == -1) {
		if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
			log_warn("accept");
		return;
	}
	if (instance_fork() == 0) {
		if (ops->prepare() == -1)
			_exit(1);
		_exit(ops->run(fd, fd));
	}
	close(fd);
	spares_fill();
}

int
listen_serve(const int *fds, int nfds, const struct listen_ops *o)
{
	int	i;

	ops = o;
	(void)prctl(PR_GET_NAME, own_name, 0, 0, 0);
	if (ev_init() == -1)
		return 1;
	/* what a dead instance leaves comes to us, not to init */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) == -1)
		log_warn("PR_SET_CHILD_SUBREAPER");
	if (ev_signal(SIGCHLD, listen_reap, NULL) == -1 ||
	    ev_signal(SIGTERM, listen_stop, NULL) == -1 ||
	    ev_signal(SIGINT, listen_stop, NULL) == -1)
		return 1;
	for (i = 0; i < nfds && nlio < LISTEN_MAX; i++) {
		fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
		if (ev_io_add(&lio[nlio], fds[i], EPOLLIN, listen_accept, NULL) == 0)
			nlio++;
	}
	if (nlio == 0)
		return 1;
	/* before any fork: the instances share what it sets up */
	if (ops->warm != NULL)
		ops->warm();
	for (i = 0; i < SPARE_MAX; i++)
		spares[i] = (struct spare){ .pid = -1, .sock = -1 };
	ev_timer_init(&refill, spares_refill, NULL);
	spares_fill();
	ev_run();
	return 0;
}
