/*
 * Transparent TCP: a sandboxed program that knows nothing of proxies
 * connects anywhere, and execd makes that connection through the proxy.
 *
 * Why seccomp user notification with the socket swapped (as
 * rootless-containers' bypass4netns does), rather than the kernel's
 * redirect in the sandbox's namespace or a TUN with a user-space stack:
 * it needs no helper binary, no host privilege and no nftables in the
 * Pod, costs nothing per byte (the program ends up holding a socket
 * connected straight to the proxy) and keeps the name the program asked
 * for (the DNS answerer's made-up address maps back to it).  Its known
 * weakness, that the address is read from the program's memory after the
 * check, does not matter here: the address is only read to pick the
 * proxy's target, and the answer is either a socket execd connected
 * to the proxy itself, or the result of a connect execd made on its own
 * copy of the program's socket (pidfd_getfd), which stays in that
 * socket's namespace, the sandbox's, where nothing but its own loopback
 * exists.  Never "continue": the kernel would read the address and the
 * descriptor number again, and a swapped socket (made in execd's
 * namespace) disconnected by connect(AF_UNSPEC) and connected again to
 * 127.0.0.1 would reach the host's loopback; a socket of execd's own
 * namespace is connected for good (EISCONN to every connect).
 *
 * Per connect: the address read (process_vm_readv, then the notification
 * checked still valid, so the pid was the caller's); AF_UNIX, loopback
 * and odd addresses are connected here on the copy; a datagram
 * socket to anywhere else is refused (ENETUNREACH, logged); a stream
 * socket gets a new one connected to the process's own SOCKS5 endpoint,
 * authenticated with its registration, CONNECT by name for a made-up
 * address, by address otherwise, all without blocking; then the new
 * socket is put on the program's descriptor number (ADDFD with SETFD,
 * its O_NONBLOCK and close-on-exec as the original's) and connect returns
 * 0.  The proxy's refusal answers ECONNREFUSED (an unreachable host
 * EHOSTUNREACH, a timeout ETIMEDOUT).  The policy decision and its audit
 * record are the proxy's, as for any SOCKS5 flow of the process.
 */
#include "config.h"

#include <sys/ioctl.h>
#include <sys/pidfd.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/utsname.h>

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
#include "fdio.h"
#include "log.h"
#include "sandbox/sandbox_int.h"
#include "sandbox/sandbox_tp.h"

#define TP_PENDING	64	/* connects being made per process */
#define TP_TIMEOUT_MS	300000	/* proxy handshake: the dial and a policyRequest included */

struct tp_conn {
	struct sbx_tp		*tp;
	uint64_t		 id;		/* the notification */
	int			 target_fd;	/* its descriptor number in the program */
	int			 nonblock, cloexec;
	struct ev_io		 io;
	struct ev_timer		 timer;
	int			 connecting;
	int			 local;		/* a connect in the sandbox's namespace */
	struct sockaddr_storage	 peer;		/* its address */
	socklen_t		 peerlen;
	uint8_t			 out[600];	/* greeting, auth and request, at once */
	size_t			 outlen, outoff;
	uint8_t			 in[4 + 262 + 2];	/* method, auth, reply */
	size_t			 inlen;
	char			 what[300];	/* for the log */
	TAILQ_ENTRY(tp_conn)	 entry;
};

struct sbx_tp {
	pid_t			 pid;
	struct ev_io		 nio;
	struct sbx_dns		*dns;
	struct sbx_route	 socks;
	char			 user[256], pass[256];
	TAILQ_HEAD(, tp_conn)	 conns;
	size_t			 nconns;
};

static int
respond(struct sbx_tp *tp, uint64_t id, int error, int cont)
{
	struct seccomp_notif_resp	resp;

	memset(&resp, 0, sizeof(resp));
	resp.id = id;
	resp.error = error ? -error : 0;
	resp.flags = cont ? SECCOMP_USER_NOTIF_FLAG_CONTINUE : 0;
	if (ioctl(tp->nio.fd, SECCOMP_IOCTL_NOTIF_SEND, &resp) == -1) {
		/* ENOENT: the caller is gone, or was interrupted and will ask again */
		if (errno != ENOENT)
			log_warn("sandbox: process %ld: seccomp answer", (long)tp->pid);
		return -1;
	}
	return 0;
}

static void
conn_free(struct tp_conn *c)
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
	(void)respond(c->tp, c->id, error, 0);
	conn_free(c);
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
		conn_free(c);
		return;
	}
	log_debug("sandbox: process %ld: %s through the proxy", (long)c->tp->pid, c->what);
	(void)respond(c->tp, c->id, 0, 0);
	conn_free(c);
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
		(void)respond(c->tp, c->id, err, 0);
		conn_free(c);
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
static void
conn_start(struct sbx_tp *tp, uint64_t id, int target_fd, int nonblock, int cloexec,
    int orig, const struct sockaddr *sa)
{
	const char	*name = NULL;
	struct tp_conn	*c;
	int		 fd;

	if (sbx_dns_is_fake(sa) && (tp->dns == NULL || (name = sbx_dns_name(tp->dns,
	    sa)) == NULL)) {
		(void)respond(tp, id, EHOSTUNREACH, 0);	/* a made-up address never given */
		return;
	}
	if (tp->socks.len == 0 || tp->nconns >= TP_PENDING) {
		log_warnx("sandbox: process %ld: %s; transparent connect refused", (long)tp->pid,
		    tp->socks.len == 0 ? "no SOCKS5 endpoint" : "too many connects pending");
		(void)respond(tp, id, ECONNREFUSED, 0);
		return;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL ||
	    (fd = socket(tp->socks.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) == -1) {
		log_warn("sandbox: process %ld: transparent connect", (long)tp->pid);
		free(c);
		(void)respond(tp, id, ENOBUFS, 0);
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

/* Is sa an address of the sandbox's own (loopback or unspecified)? */
static int
is_local(const struct sockaddr *sa)
{
	const struct sockaddr_in	*sin = (const void *)sa;
	const struct sockaddr_in6	*sin6 = (const void *)sa;
	const struct in6_addr		*a6 = &sin6->sin6_addr;
	uint32_t			 a;

	if (sa->sa_family == AF_INET) {
		a = ntohl(sin->sin_addr.s_addr);
		return (a >> 24) == 127 || a == 0;
	}
	if (IN6_IS_ADDR_V4MAPPED(a6))
		return a6->s6_addr[12] == 127 || memcmp(a6->s6_addr + 12, "\0\0\0\0", 4) == 0;
	return IN6_IS_ADDR_LOOPBACK(a6) || IN6_IS_ADDR_UNSPECIFIED(a6);
}

/*
 * Would the kernel refuse this connect whatever the address?  A socket of
 * another family than the address's (an IPv6 socket may take a v4-mapped
 * one only), one connected already (EISCONN) or listening (EINVAL): the
 * kernel's answer, in the namespace, is the one the program expects.
 */
static int
kernel_refuses(int fd, int family)
{
	struct sockaddr_storage	peer;
	socklen_t		len = sizeof(peer), il = sizeof(int);
	int			domain = 0, listening = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &il) == -1 || domain != family)
		return 1;
	il = sizeof(int);
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &il) == -1 || listening)
		return 1;
	return getpeername(fd, (struct sockaddr *)&peer, &len) == 0;
}

/*
 * Is fd a socket of execd's own network namespace (a swapped one)?  When
 * it cannot be told: yes.  The namespace's cookie (5.14) says.
 */
static int
own_netns(int fd)
{
	static uint64_t	mine;
	uint64_t	c = 0;
	socklen_t	l = sizeof(c);
	int		s;

	if (mine == 0) {
		if ((s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
			return 1;
		if (getsockopt(s, SOL_SOCKET, SO_NETNS_COOKIE, &mine, &l) == -1)
			mine = 0;
		close(s);
		l = sizeof(c);
		if (mine == 0)
			return 1;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &c, &l) == -1)
		return 1;
	return c == mine;
}

/* A pidfd for the calling thread's descriptors: its own (6.9), else its leader's. */
static int
caller_pidfd(pid_t tid)
{
	char	path[64], buf[512], *p;
	int	pidfd;

	if ((pidfd = (int)syscall(SYS_pidfd_open, tid, 0x80 /* PIDFD_THREAD */)) != -1 ||
	    errno != EINVAL || (pidfd = (int)syscall(SYS_pidfd_open, tid, 0)) != -1 ||
	    errno != EINVAL)
		return pidfd;
	snprintf(path, sizeof(path), "/proc/%ld/status", (long)tid);
	if (path_read_small(path, buf, sizeof(buf)) == -1)
		return -1;
	if ((p = strstr(buf, "\nTgid:")) == NULL)
		return -1;
	return (int)syscall(SYS_pidfd_open, (pid_t)strtol(p + 6, NULL, 10), 0);
}

/*
 * The program's socket: its copy here, or -1 with *err the answer
 * (EBADF, ENOTSOCK as the kernel's; EPERM when it cannot be fetched).
 */
static int
target_socket(struct sbx_tp *tp, const struct seccomp_notif *req, int *nonblock,
    int *cloexec, int *err)
{
	char		 path[64], buf[256], *p;
	struct stat	 st;
	int		 pidfd, fd, ffd, fl;
	ssize_t		 n;

	*err = EPERM;
	if ((pidfd = caller_pidfd((pid_t)req->pid)) == -1)
		return -1;
	/* the pidfd is the caller's only if the notification is still pending */
	if (ioctl(tp->nio.fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) == -1) {
		close(pidfd);
		return -1;
	}
	fd = (int)syscall(SYS_pidfd_getfd, pidfd, (int)req->data.args[0], 0);
	if (fd == -1 && errno == EBADF)
		*err = EBADF;
	close(pidfd);
	if (fd == -1)
		return -1;
	if (fstat(fd, &st) == -1 || !S_ISSOCK(st.st_mode) || (fl = fcntl(fd, F_GETFL)) == -1) {
		*err = ENOTSOCK;
		close(fd);
		return -1;
	}
	*nonblock = (fl & O_NONBLOCK) != 0;
	/* close-on-exec is the program's descriptor's, not the file's: fdinfo says */
	*cloexec = 0;
	snprintf(path, sizeof(path), "/proc/%ld/fdinfo/%d", (long)req->pid,
	    (int)req->data.args[0]);
	if ((ffd = open(path, O_RDONLY | O_CLOEXEC)) != -1) {
		if ((n = read(ffd, buf, sizeof(buf) - 1)) > 0) {
			buf[n] = '\0';
			if ((p = strstr(buf, "flags:")) != NULL)
				*cloexec = (strtoul(p + 6, NULL, 8) & O_CLOEXEC) != 0;
		}
		close(ffd);
	}
	return fd;
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
static void
local_connect(struct sbx_tp *tp, uint64_t id, int fd, int nonblock,
    const struct sockaddr_storage *ss, socklen_t len)
{
	struct tp_conn	*c;
	int		 domain = 0, type = 0, fl, toggle, r, e;
	socklen_t	 il = sizeof(domain);

	/* AF_UNIX ones come from socketpair only (connected); a path is execd's view */
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &il) == -1 || domain == AF_UNIX) {
		close(fd);
		(void)respond(tp, id, EISCONN, 0);
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
		(void)respond(tp, id, EPERM, 0);
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
		(void)respond(tp, id, (e == EINPROGRESS || e == EALREADY) && !nonblock ?
		    EAGAIN : e, 0);
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

static void
handle(struct sbx_tp *tp, const struct seccomp_notif *req)
{
	struct sockaddr_storage	 ss;
	struct iovec		 l, r;
	size_t			 len = (size_t)req->data.args[2];
	int			 fd, type = 0, nonblock, cloexec, e;
	socklen_t		 tl = sizeof(type);
	char			 a[INET6_ADDRSTRLEN];

	if (req->data.nr != __NR_connect) {
		(void)respond(tp, req->id, EPERM, 0);
		return;
	}
	memset(&ss, 0, sizeof(ss));
	l.iov_base = &ss;
	l.iov_len = r.iov_len = len;
	r.iov_base = (void *)(uintptr_t)req->data.args[1];
	if (len > sizeof(ss)) {
		(void)respond(tp, req->id, EINVAL, 0);
		return;
	}
	if (len > 0 && (process_vm_readv(req->pid, &l, 1, &r, 1, 0) != (ssize_t)len ||
	    ioctl(tp->nio.fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) == -1)) {
		(void)respond(tp, req->id, EFAULT, 0);
		return;
	}
	if ((fd = target_socket(tp, req, &nonblock, &cloexec, &e)) == -1) {
		(void)respond(tp, req->id, e, 0);
		return;
	}
	/* a swapped socket: connected for good (no AF_UNSPEC disconnect) */
	if (own_netns(fd)) {
		close(fd);
		(void)respond(tp, req->id, EISCONN, 0);
		return;
	}
	/* what stays in the sandbox's namespace, or what the kernel refuses anyway */
	if ((ss.ss_family != AF_INET && ss.ss_family != AF_INET6) ||
	    (ss.ss_family == AF_INET && len < sizeof(struct sockaddr_in)) ||
	    (ss.ss_family == AF_INET6 && len < sizeof(struct sockaddr_in6)) ||
	    is_local((struct sockaddr *)&ss) || kernel_refuses(fd, ss.ss_family)) {
		local_connect(tp, req->id, fd, nonblock, &ss, (socklen_t)len);
		return;
	}
	e = getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl);
	if (e == -1 || type != SOCK_STREAM) {
		close(fd);
		log_info("sandbox: process %ld: %s connect to %s refused: only TCP goes "
		    "through the proxy", (long)tp->pid, type == SOCK_DGRAM ? "UDP" : "a",
		    inet_ntop(ss.ss_family, ss.ss_family == AF_INET ?
		    (void *)&((struct sockaddr_in *)&ss)->sin_addr :
		    (void *)&((struct sockaddr_in6 *)&ss)->sin6_addr, a, sizeof(a)) ? a : "?");
		(void)respond(tp, req->id, ENETUNREACH, 0);
		return;
	}
	conn_start(tp, req->id, (int)req->data.args[0], nonblock, cloexec, fd,
	    (struct sockaddr *)&ss);
	close(fd);
}

static void
notify_cb(struct ev_io *io, uint32_t events, void *arg)
{
	struct sbx_tp		*tp = arg;
	struct seccomp_notif	 req;

	if (!(events & EPOLLIN)) {
		ev_io_del(io);	/* every process of the filter is gone */
		return;
	}
	memset(&req, 0, sizeof(req));
	if (ioctl(io->fd, SECCOMP_IOCTL_NOTIF_RECV, &req) == -1) {
		if (errno != ENOENT && errno != EINTR)
			log_warn("sandbox: process %ld: seccomp notification", (long)tp->pid);
		return;
	}
	handle(tp, &req);
}

struct sbx_tp *
sbx_tp_start(pid_t pid, int notify_fd, struct sbx_dns *dns, const struct sbx_route *socks,
    const char *user, const char *pass)
{
	struct sbx_tp	*tp;

	if ((tp = calloc(1, sizeof(*tp))) == NULL) {
		log_warn("sandbox: transparent TCP of process %ld", (long)pid);
		close(notify_fd);
		return NULL;
	}
	tp->pid = pid;
	tp->dns = dns;
	tp->socks = *socks;
	snprintf(tp->user, sizeof(tp->user), "%s", user);
	snprintf(tp->pass, sizeof(tp->pass), "%s", pass);
	TAILQ_INIT(&tp->conns);
	if (ev_io_add(&tp->nio, notify_fd, EPOLLIN, notify_cb, tp) == -1) {
		close(notify_fd);
		free(tp);
		return NULL;
	}
	return tp;
}

void
sbx_tp_free(struct sbx_tp *tp)
{
	struct tp_conn	*c;

	if (tp == NULL)
		return;
	while ((c = TAILQ_FIRST(&tp->conns)) != NULL)
		conn_free(c);
	ev_io_del(&tp->nio);
	close(tp->nio.fd);
	explicit_bzero(tp->pass, sizeof(tp->pass));
	free(tp);
}

/*
 * User notification (5.0), the ADDFD ioctl (5.9) the swap needs and
 * SO_NETNS_COOKIE (5.14),
 * which cannot be probed without a listener: the kernel's version says.
 * EXECD_SANDBOX_DISABLE=transparent makes execd act as if it lacked them.
 */
int
sbx_tp_supported(void)
{
	static int	probed = -1;
	uint32_t	action = SECCOMP_RET_USER_NOTIF;
	struct utsname	u;
	unsigned	maj = 0, min = 0;
	const char	*v = getenv("EXECD_SANDBOX_DISABLE");

	if (probed != -1)
		return probed;
	probed = 0;
	if (v != NULL && strstr(v, "transparent") != NULL)
		return 0;
	if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == -1 ||
	    uname(&u) == -1 || sscanf(u.release, "%u.%u", &maj, &min) != 2)
		return 0;
	/* 5.14: SO_NETNS_COOKIE tells a swapped socket (execd's namespace) */
	probed = maj > 5 || (maj == 5 && min >= 14);
	return probed;
}
