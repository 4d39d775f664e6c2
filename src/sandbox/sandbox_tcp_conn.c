/*
 * The connections transparent TCP makes for a caught connect(2): one to
 * the process's own SOCKS5 endpoint of the proxy (greeting, its
 * registration's username/password and CONNECT pipelined, the reply read
 * byte-exact so nothing of the program's stream is eaten), put on the
 * program's descriptor number once the proxy said yes; or one in the
 * sandbox's namespace made on execd's copy of the program's socket.  The
 * notification is answered when each is done, never blocking execd.
 */
#include "config.h"

#include <sys/ioctl.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evloop.h"
#include "log.h"
#include "sandbox/sandbox_int.h"
#include "sandbox/sandbox_tp.h"
#include "sandbox/sandbox_tcp.h"

int
tp_respond(struct sbx_tp *tp, uint64_t id, int error)
{
	struct seccomp_notif_resp	resp;

	memset(&resp, 0, sizeof(resp));
	resp.id = id;
	resp.error = error ? -error : 0;
	/* never SECCOMP_USER_NOTIF_FLAG_CONTINUE: see sandbox_tcp.c */
	if (ioctl(tp->nio.fd, SECCOMP_IOCTL_NOTIF_SEND, &resp) == -1) {
		/* ENOENT: the caller is gone, or was interrupted and will ask again */
		if (errno != ENOENT)
			log_warn("sandbox: process %ld: seccomp answer", (long)tp->pid);
		return -1;
	}
	return 0;
}

void
tp_conn_free(struct tp_conn *c)
{
	ev_timer_stop(&c->timer);
	ev_io_del(&c->io);
	close(c->io.fd);
	TAILQ_REMOVE(&c->tp->conns, c, entry);
	c->tp->nconns--;
	free(c);
}

static void
conn_fail(struct tp_conn *c, int error)
{
	log_info("sandbox: process %ld: transparent connect to %s: %s", (long)c->tp->pid,
	    c->what, strerror(error));
	(void)tp_respond(c->tp, c->id, error);
	tp_conn_free(c);
}

/* The proxy said yes: the socket goes on the program's descriptor number. */
static void
conn_done(struct tp_conn *c)
{
	struct seccomp_notif_addfd	add;
	int				fl;

	/*
	 * A socket whose non-blocking connect completed stays "connecting" to
	 * the kernel until connect is called again (then 0): called here, so
	 * the program's own second connect gets EISCONN, as on a socket it
	 * connected itself.
	 */
	if (connect(c->io.fd, (struct sockaddr *)&c->tp->socks.addr, c->tp->socks.len) == -1 &&
	    errno != EISCONN) {
		conn_fail(c, errno);
		return;
	}
	if ((fl = fcntl(c->io.fd, F_GETFL)) == -1 ||
	    fcntl(c->io.fd, F_SETFL, c->nonblock ? fl | O_NONBLOCK : fl & ~O_NONBLOCK) == -1) {
		conn_fail(c, errno);
		return;
	}
	memset(&add, 0, sizeof(add));
	add.id = c->id;
	add.flags = SECCOMP_ADDFD_FLAG_SETFD;
	add.srcfd = (uint32_t)c->io.fd;
	add.newfd = (uint32_t)c->target_fd;
	add.newfd_flags = c->cloexec ? O_CLOEXEC : 0;
	if (ioctl(c->tp->nio.fd, SECCOMP_IOCTL_NOTIF_ADDFD, &add) == -1) {
		if (errno != ENOENT)
			log_warn("sandbox: process %ld: seccomp addfd", (long)c->tp->pid);
		tp_conn_free(c);
		return;
	}
	log_debug("sandbox: process %ld: %s through the proxy", (long)c->tp->pid, c->what);
	(void)tp_respond(c->tp, c->id, 0);
	tp_conn_free(c);
}

/* The reply's status as an errno for connect. */
static int
rep_errno(uint8_t rep)
{
	switch (rep) {
	case 3:
		return ENETUNREACH;
	case 4:
		return EHOSTUNREACH;
	case 6:
		return ETIMEDOUT;
	default:
		return ECONNREFUSED;
	}
}

/* How many reply bytes make the whole of it, given what came (at least 9). */
static size_t
reply_len(const uint8_t *b)
{
	switch (b[7]) {
	case 1:
		return 4 + 4 + 4 + 2;
	case 4:
		return 4 + 4 + 16 + 2;
	case 3:
		return 4 + 4 + 1 + b[8] + 2;
	default:
		return 0;
	}
}

/* Read no byte past the reply: what follows is the program's. */
static void
conn_read(struct tp_conn *c)
{
	size_t	want = c->inlen < 9 ? 9 : reply_len(c->in);
	ssize_t	n;

	if (want == 0 || want > sizeof(c->in)) {
		conn_fail(c, ECONNREFUSED);
		return;
	}
	n = recv(c->io.fd, c->in + c->inlen, want - c->inlen, MSG_DONTWAIT);
	if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR)) {
		conn_fail(c, ECONNREFUSED);
		return;
	}
	if (n > 0)
		c->inlen += (size_t)n;
	/* method (5, 2), then auth (1, 0), then the reply's status */
	if ((c->inlen >= 2 && (c->in[0] != 5 || c->in[1] != 2)) ||
	    (c->inlen >= 4 && (c->in[2] != 1 || c->in[3] != 0)) ||
	    (c->inlen >= 6 && c->in[4] != 5)) {
		conn_fail(c, ECONNREFUSED);
		return;
	}
	if (c->inlen >= 6 && c->in[5] != 0) {
		conn_fail(c, rep_errno(c->in[5]));
		return;
	}
	if (c->inlen >= 9 && c->inlen == reply_len(c->in))
		conn_done(c);
}

static void
conn_cb(struct ev_io *io, uint32_t events, void *arg)
{
	struct tp_conn	*c = arg;
	int		 err = 0;
	socklen_t	 len = sizeof(err);
	ssize_t		 n;

	if (c->local) {
		if (getsockopt(io->fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
			err = errno;
		/* the socket is "connecting" to the kernel until connect is called again */
		else if (err == 0 && connect(io->fd, (struct sockaddr *)&c->peer, c->peerlen) == -1 &&
		    errno != EISCONN)
			err = errno;
		(void)tp_respond(c->tp, c->id, err);
		tp_conn_free(c);
		return;
	}
	if (c->connecting) {
		if (getsockopt(io->fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1 || err != 0) {
			log_warnx("sandbox: process %ld: the proxy's SOCKS5 endpoint: %s",
			    (long)c->tp->pid, strerror(err ? err : errno));
			conn_fail(c, ECONNREFUSED);
			return;
		}
		c->connecting = 0;
	}
	if (c->outoff < c->outlen) {
		n = send(io->fd, c->out + c->outoff, c->outlen - c->outoff,
		    MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n == -1 && errno != EAGAIN && errno != EINTR) {
			conn_fail(c, ECONNREFUSED);
			return;
		}
		if (n > 0)
			c->outoff += (size_t)n;
		if (ev_io_set(io, c->outoff < c->outlen ? EPOLLOUT : EPOLLIN) == -1)
			conn_fail(c, ENOMEM);
		return;
	}
	conn_read(c);
}

static void
conn_timeout(struct ev_timer *t, void *arg)
{
	conn_fail(arg, ETIMEDOUT);
}

/* Greeting, username/password, CONNECT: one buffer, sent as soon as connected. */
static int
build_request(struct tp_conn *c, const struct sockaddr *sa, const char *name)
{
	const struct sockaddr_in	*sin = (const void *)sa;
	const struct sockaddr_in6	*sin6 = (const void *)sa;
	size_t				 ul = strlen(c->tp->user), pl = strlen(c->tp->pass);
	size_t				 nl = name ? strlen(name) : 0, o = 0;
	uint8_t				*b = c->out;
	char				 a[INET6_ADDRSTRLEN];
	uint16_t			 port;

	if (ul == 0 || ul > 255 || pl > 255 || nl > 255)
		return -1;
	b[o++] = 5, b[o++] = 1, b[o++] = 2;
	b[o++] = 1, b[o++] = (uint8_t)ul;
	memcpy(b + o, c->tp->user, ul), o += ul;
	b[o++] = (uint8_t)pl;
	memcpy(b + o, c->tp->pass, pl), o += pl;
	b[o++] = 5, b[o++] = 1, b[o++] = 0;
	port = sa->sa_family == AF_INET ? sin->sin_port : sin6->sin6_port;
	if (name != NULL) {
		b[o++] = 3, b[o++] = (uint8_t)nl;
		memcpy(b + o, name, nl), o += nl;
		snprintf(c->what, sizeof(c->what), "%s:%u", name, ntohs(port));
	} else if (sa->sa_family == AF_INET || IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
		b[o++] = 1;
		memcpy(b + o, sa->sa_family == AF_INET ? (const void *)&sin->sin_addr :
		    (const void *)(sin6->sin6_addr.s6_addr + 12), 4), o += 4;
		snprintf(c->what, sizeof(c->what), "%u.%u.%u.%u:%u", b[o - 4], b[o - 3],
		    b[o - 2], b[o - 1], ntohs(port));
	} else {
		b[o++] = 4;
		memcpy(b + o, &sin6->sin6_addr, 16), o += 16;
		snprintf(c->what, sizeof(c->what), "[%s]:%u", inet_ntop(AF_INET6,
		    &sin6->sin6_addr, a, sizeof(a)) ? a : "?", ntohs(port));
	}
	memcpy(b + o, &port, 2), o += 2;
	c->outlen = o;
	return 0;
}

/*
 * What the program set on its socket before connect and expects the
 * connected one to have (its own options set later go to the new socket
 * anyway): best effort, an option the proxy's family lacks is left.
 */
static void
copy_options(int from, int to)
{
	static const struct { int level, name; } opts[] = {
		{ IPPROTO_TCP, TCP_NODELAY }, { SOL_SOCKET, SO_KEEPALIVE },
		{ IPPROTO_TCP, TCP_KEEPIDLE }, { IPPROTO_TCP, TCP_KEEPINTVL },
		{ IPPROTO_TCP, TCP_KEEPCNT }, { IPPROTO_TCP, TCP_USER_TIMEOUT },
		{ SOL_SOCKET, SO_LINGER }, { SOL_SOCKET, SO_OOBINLINE },
	};
	unsigned char	v[sizeof(struct linger) > sizeof(int) ? sizeof(struct linger) :
			    sizeof(int)];
	socklen_t	len;
	size_t		i;

	for (i = 0; i < sizeof(opts) / sizeof(*opts); i++) {
		len = sizeof(v);
		if (getsockopt(from, opts[i].level, opts[i].name, v, &len) == 0)
			(void)setsockopt(to, opts[i].level, opts[i].name, v, len);
	}
}

/*
 * Starts the proxy connection for notification id, with the options of
 * the program's socket (orig, its copy here); answers it itself on failure.
 */
void
tp_conn_start(struct sbx_tp *tp, uint64_t id, int target_fd, int nonblock, int cloexec,
    int orig, const struct sockaddr *sa)
{
	const char	*name = NULL;
	struct tp_conn	*c;
	int		 fd;

	if (sbx_dns_is_fake(sa) && (tp->dns == NULL || (name = sbx_dns_name(tp->dns,
	    sa)) == NULL)) {
		(void)tp_respond(tp, id, EHOSTUNREACH);	/* a made-up address never given */
		return;
	}
	if (tp->socks.len == 0 || tp->nconns >= TP_PENDING) {
		log_warnx("sandbox: process %ld: %s; transparent connect refused", (long)tp->pid,
		    tp->socks.len == 0 ? "no SOCKS5 endpoint" : "too many connects pending");
		(void)tp_respond(tp, id, ECONNREFUSED);
		return;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL ||
	    (fd = socket(tp->socks.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) == -1) {
		log_warn("sandbox: process %ld: transparent connect", (long)tp->pid);
		free(c);
		(void)tp_respond(tp, id, ENOBUFS);
		return;
	}
	copy_options(orig, fd);
	c->tp = tp;
	c->id = id;
	c->target_fd = target_fd;
	c->nonblock = nonblock;
	c->cloexec = cloexec;
	c->connecting = 1;
	c->io.fd = fd;
	ev_timer_init(&c->timer, conn_timeout, c);
	TAILQ_INSERT_TAIL(&tp->conns, c, entry);
	tp->nconns++;
	if (build_request(c, sa, name) == -1) {
		conn_fail(c, ECONNREFUSED);
		return;
	}
	if ((connect(fd, (struct sockaddr *)&tp->socks.addr, tp->socks.len) == -1 &&
	    errno != EINPROGRESS) || ev_io_add(&c->io, fd, EPOLLOUT, conn_cb, c) == -1) {
		log_warn("sandbox: process %ld: the proxy's SOCKS5 endpoint", (long)tp->pid);
		conn_fail(c, ECONNREFUSED);
		return;
	}
	ev_timer_start(&c->timer, TP_TIMEOUT_MS);
}

/*
 * A connect that stays in the sandbox (loopback, AF_UNSPEC, odd
 * addresses), made here on execd's copy of the program's socket with the
 * address execd read: the copy's namespace is the socket's, and nothing
 * the program changes after the read (address, descriptor number) counts.
 * Never "continue": the kernel would read both again, and a swapped
 * socket (execd's namespace) disconnected by AF_UNSPEC then connected to
 * 127.0.0.1 would reach the host's loopback.
 */
void
tp_local_connect(struct sbx_tp *tp, uint64_t id, int fd, int nonblock,
    const struct sockaddr_storage *ss, socklen_t len)
{
	struct tp_conn	*c;
	int		 domain = 0, type = 0, fl, toggle, r, e;
	socklen_t	 il = sizeof(domain);

	/* AF_UNIX ones come from socketpair only (connected); a path is execd's view */
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &il) == -1 || domain == AF_UNIX) {
		close(fd);
		(void)tp_respond(tp, id, EISCONN);
		return;
	}
	/*
	 * Never block execd: the program's own blocking connect waits here
	 * instead.  A datagram or raw connect never blocks: its file's flags,
	 * which the program's other threads see, are left alone.
	 */
	il = sizeof(type);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &il) == -1)
		type = 0;
	fl = fcntl(fd, F_GETFL);
	toggle = fl != -1 && !(fl & O_NONBLOCK) && type != SOCK_DGRAM && type != SOCK_RAW;
	if (fl == -1 || (toggle && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1)) {
		close(fd);
		(void)tp_respond(tp, id, EPERM);
		return;
	}
	r = connect(fd, (const struct sockaddr *)ss, len);
	e = r == -1 ? errno : 0;
	if (toggle)
		(void)fcntl(fd, F_SETFL, fl);
	/* EALREADY: a blocking connect restarted after a signal waits on, as the kernel's */
	if ((e != EINPROGRESS && e != EALREADY) || nonblock || tp->nconns >= TP_PENDING ||
	    (c = calloc(1, sizeof(*c))) == NULL) {
		close(fd);
		(void)tp_respond(tp, id, (e == EINPROGRESS || e == EALREADY) && !nonblock ?
		    EAGAIN : e);
		return;
	}
	c->tp = tp;
	c->id = id;
	c->local = 1;
	c->peer = *ss;
	c->peerlen = len;
	snprintf(c->what, sizeof(c->what), "an address of the sandbox's own");
	c->io.fd = fd;
	ev_timer_init(&c->timer, conn_timeout, c);
	TAILQ_INSERT_TAIL(&tp->conns, c, entry);
	tp->nconns++;
	if (ev_io_add(&c->io, fd, EPOLLOUT, conn_cb, c) == -1) {
		conn_fail(c, ENOBUFS);
		return;
	}
	ev_timer_start(&c->timer, TP_TIMEOUT_MS);
}
