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
 *
 * This file reads the notification and decides; the connections it
 * starts, and their answers, are sandbox_tcp_conn.c's.
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
#include "sandbox/sandbox_tcp.h"

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
		(void)tp_respond(tp, req->id, EPERM);
		return;
	}
	memset(&ss, 0, sizeof(ss));
	l.iov_base = &ss;
	l.iov_len = r.iov_len = len;
	r.iov_base = (void *)(uintptr_t)req->data.args[1];
	if (len > sizeof(ss)) {
		(void)tp_respond(tp, req->id, EINVAL);
		return;
	}
	if (len > 0 && (process_vm_readv(req->pid, &l, 1, &r, 1, 0) != (ssize_t)len ||
	    ioctl(tp->nio.fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) == -1)) {
		(void)tp_respond(tp, req->id, EFAULT);
		return;
	}
	if ((fd = target_socket(tp, req, &nonblock, &cloexec, &e)) == -1) {
		(void)tp_respond(tp, req->id, e);
		return;
	}
	/* a swapped socket: connected for good (no AF_UNSPEC disconnect) */
	if (own_netns(fd)) {
		close(fd);
		(void)tp_respond(tp, req->id, EISCONN);
		return;
	}
	/* what stays in the sandbox's namespace, or what the kernel refuses anyway */
	if ((ss.ss_family != AF_INET && ss.ss_family != AF_INET6) ||
	    (ss.ss_family == AF_INET && len < sizeof(struct sockaddr_in)) ||
	    (ss.ss_family == AF_INET6 && len < sizeof(struct sockaddr_in6)) ||
	    is_local((struct sockaddr *)&ss) || kernel_refuses(fd, ss.ss_family)) {
		tp_local_connect(tp, req->id, fd, nonblock, &ss, (socklen_t)len);
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
		(void)tp_respond(tp, req->id, ENETUNREACH);
		return;
	}
	tp_conn_start(tp, req->id, (int)req->data.args[0], nonblock, cloexec, fd,
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
		tp_conn_free(c);
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
