#include "config.h"

#include <sys/socket.h>
#include <sys/stat.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "transport/conn.h"

static void	conn_io(struct ev_io *, uint32_t, void *);
static void	conn_flush(struct ev_defer *, void *);

static void
conn_describe(struct conn *c)
{
	struct sockaddr_storage	 ss;
	socklen_t		 sl = sizeof(ss);
	char			 host[INET6_ADDRSTRLEN];
	int			 one = 1;

	snprintf(c->peer, sizeof(c->peer), "stdio");
	if (getpeername(c->in_fd, (struct sockaddr *)&ss, &sl) == -1)
		return;
	if (ss.ss_family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
		snprintf(c->peer, sizeof(c->peer), "%s:%u", host, ntohs(s4->sin_port));
		c->is_inet = 1;
	} else if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
		snprintf(c->peer, sizeof(c->peer), "[%s]:%u", host, ntohs(s6->sin6_port));
		c->is_inet = 1;
	} else
		snprintf(c->peer, sizeof(c->peer), "unix");
	if (c->is_inet)
		setsockopt(c->in_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int
nonblock(int fd)
{
	int	fl = fcntl(fd, F_GETFL);

	if (fl == -1 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1) {
		log_warn("fcntl O_NONBLOCK fd %d", fd);
		return -1;
	}
	return 0;
}

static int
is_regular(int fd)
{
	struct stat	st;

	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

static void
conn_plain_ready(struct ev_timer *t, void *arg)
{
	struct conn	*c = arg;

	if (c->closed)
		return;
	if ((c->in_plain || buf_avail(&c->pre) > 0) && c->want_read && c->on_read != NULL)
		c->on_read(c);
	if (!c->closed && c->out_plain && c->want_write && c->on_write != NULL)
		c->on_write(c);
}

/*
 * Watch fd with epoll; one epoll refuses (/dev/null, and regular files
 * caught above) is always ready, served from the loop as *plain.
 */
static int
watch(struct ev_io *io, int fd, struct conn *c, int *plain)
{
	if (ev_io_add(io, fd, 0, conn_io, c) == 0)
		return 0;
	if (errno != EPERM)
		return -1;
	log_debug("fd %d cannot be watched: served as always ready", fd);
	*plain = 1;
	return 0;
}

int
conn_open(struct conn *c, int in_fd, int out_fd)
{
	memset(c, 0, sizeof(*c));
	c->in_fd = in_fd;
	c->out_fd = out_fd;
	c->in_plain = is_regular(in_fd);
	c->out_plain = is_regular(out_fd);
	ev_timer_init(&c->plain_timer, conn_plain_ready, c);
	ev_defer_init(&c->flush, conn_flush, c);
	if (nonblock(in_fd) == -1 || (out_fd != in_fd && nonblock(out_fd) == -1))
		return -1;
	conn_describe(c);
	if (!c->in_plain && watch(&c->rio, in_fd, c, &c->in_plain) == -1)
		return -1;
	if (out_fd != in_fd && !c->out_plain && watch(&c->wio, out_fd, c, &c->out_plain) == -1)
		return -1;
	if (out_fd == in_fd && c->in_plain)
		c->out_plain = 1;
	return 0;
}

void
conn_set_handlers(struct conn *c, conn_cb *on_read, conn_cb *on_write, void *arg)
{
	c->on_read = on_read;
	c->on_write = on_write;
	c->arg = arg;
}

/* EPOLLIN and EPOLLOUT as wanted (EPOLLOUT only once a direct write fell short). */
static void
conn_interest(struct conn *c)
{
	int	out = c->want_write && c->write_poll;

	if (c->in_fd == c->out_fd)
		ev_io_set(&c->rio, (c->want_read ? EPOLLIN : 0) | (out ? EPOLLOUT : 0));
	else {
		ev_io_set(&c->rio, c->want_read ? EPOLLIN : 0);
		ev_io_set(&c->wio, out ? EPOLLOUT : 0);
	}
}

/*
 * The round's output in one write, before the loop waits: a reply or a
 * notification leaves without a turn through epoll_wait for EPOLLOUT.
 */
static void
conn_flush(struct ev_defer *d, void *arg)
{
	struct conn	*c = arg;

	(void)d;
	if (c->closed || !c->want_write || c->on_write == NULL)
		return;
	/* what this write cannot take waits for EPOLLOUT (conn_want from on_write) */
	c->write_poll = 1;
	c->on_write(c);
}

void
conn_want(struct conn *c, int rd, int wr)
{
	if (c->closed)
		return;
	c->want_read = rd && !c->in_eof;
	c->want_write = wr;
	if (!wr)
		c->write_poll = 0;
	else if (!c->write_poll && !c->out_plain)
		ev_defer_arm(&c->flush);
	conn_interest(c);
	/*
	 * Bytes already buffered will never make the descriptor readable: they
	 * are served from the loop too, never from here, as the caller may be
	 * in the middle of a read callback of its own (wslay is not reentrant).
	 */
	if ((c->in_plain && c->want_read) || (c->out_plain && c->want_write) ||
	    (c->want_read && buf_avail(&c->pre) > 0)) {
		if (!ev_timer_armed(&c->plain_timer))
			ev_timer_start(&c->plain_timer, 0);
	} else
		ev_timer_stop(&c->plain_timer);
}

static void
conn_io(struct ev_io *io, uint32_t events, void *arg)
{
	struct conn	*c = arg;

	if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && c->want_read && io == &c->rio &&
	    c->on_read != NULL)
		c->on_read(c);
	if (c->closed)
		return;
	if ((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) && c->want_write &&
	    (io == &c->wio || c->in_fd == c->out_fd) && c->on_write != NULL)
		c->on_write(c);
}

ssize_t
conn_read(struct conn *c, void *p, size_t n)
{
	size_t	avail = buf_avail(&c->pre);

	if (avail > 0) {
		if (n > avail)
			n = avail;
		memcpy(p, buf_head(&c->pre), n);
		buf_consume(&c->pre, n);
		return (ssize_t)n;
	}
	return read(c->in_fd, p, n);
}

void
conn_shutdown_write(struct conn *c)
{
	if (c->in_fd == c->out_fd)
		shutdown(c->out_fd, SHUT_WR);
}

void
conn_close(struct conn *c)
{
	if (c->closed)
		return;
	c->closed = 1;
	ev_timer_stop(&c->plain_timer);
	ev_defer_cancel(&c->flush);
	ev_io_del(&c->rio);
	if (c->out_fd != c->in_fd) {
		ev_io_del(&c->wio);
		close(c->out_fd);
	}
	close(c->in_fd);
	buf_free(&c->pre);
}
