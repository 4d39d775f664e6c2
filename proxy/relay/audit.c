/*
 * The audit trail: one JSON object per line for every decision and every
 * relay that ends.  The sink never blocks the proxy: lines queue in memory
 * up to a bound and are written when the sink can take them; what a full
 * disk, a stalled reader or a closed sink refuses is counted as lost and
 * reported, and the proxy carries on.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jsonx.h"
#include "log.h"
#include "relay/relay.h"
#include "policy/policy.h"

#define AUDIT_QUEUE_MAX		(1024 * 1024)
#define AUDIT_REPORT_MS		10000
#define AUDIT_REOPEN_MS		1000
#define AUDIT_SYSLOG_PATH	"/dev/log"
#define AUDIT_SYSLOG_PRI	(LOG_DAEMON | LOG_INFO)

enum sink_kind {
	SINK_WRITE,		/* regular file, /dev/full ...: write(2) */
	SINK_PIPE,		/* pipe or tty of our own: write(2), pollable */
	SINK_SOCKET,		/* send(2) with MSG_DONTWAIT */
	SINK_DGRAM,		/* syslog datagrams */
};

static struct {
	enum audit_dest	 dest;
	char		*path;
	int		 fd;
	enum sink_kind	 kind;
	struct ev_io	 io;
	struct buf	 q;
	size_t		 qlines;
	uint64_t	 lost, lost_reported, written;
	uint64_t	 retry_at;
	int		 broken;	/* stderr reader gone: stop trying */
	struct ev_timer	 report;
} au = { .fd = -1 };

static void	flush(void);

const char *
proto_name(enum proxy_proto p)
{
	switch (p) {
	case PROTO_HTTP:
		return "http";
	case PROTO_HTTP_CONNECT:
		return "http-connect";
	case PROTO_SOCKS5:
		return "socks5";
	case PROTO_SOCKS5_UDP:
		return "socks5-udp";
	}
	return "unknown";
}

void
time_rfc3339(char *buf, size_t len)
{
	struct timespec	ts;
	struct tm	tm;
	char		base[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03ldZ", base, ts.tv_nsec / 1000000);
}

static void
report(struct ev_timer *t, void *arg)
{
	if (au.lost == au.lost_reported)
		return;
	log_warnx("audit: %llu events lost (%llu in total)",
	    (unsigned long long)(au.lost - au.lost_reported), (unsigned long long)au.lost);
	au.lost_reported = au.lost;
}

static void
lose(size_t n)
{
	if (n == 0)
		return;
	if (au.lost == 0) {
		au.lost += n;
		report(NULL, NULL);
	} else
		au.lost += n;
	if (!ev_timer_armed(&au.report))
		ev_timer_start(&au.report, AUDIT_REPORT_MS);
}

static void
sink_writable(struct ev_io *io, uint32_t events, void *arg)
{
	flush();
}

static void
sink_close(void)
{
	if (au.io.active)
		ev_io_del(&au.io);
	if (au.fd != -1)
		close(au.fd);
	au.fd = -1;
}

/* stderr may be shared with whoever started us: use our own file description. */
static int
open_stderr(void)
{
	struct stat	st;
	int		fd;

	if (fstat(STDERR_FILENO, &st) == -1)
		return -1;
	if (S_ISSOCK(st.st_mode)) {
		au.kind = SINK_SOCKET;
		return fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	}
	if (!S_ISREG(st.st_mode) &&
	    (fd = open("/proc/self/fd/2", O_WRONLY | O_NONBLOCK | O_CLOEXEC)) != -1) {
		au.kind = SINK_PIPE;
		return fd;
	}
	au.kind = SINK_WRITE;
	return fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
}

static int
open_syslog(void)
{
	struct sockaddr_un	sun = { .sun_family = AF_UNIX };
	int			fd;

	au.kind = SINK_DGRAM;
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", AUDIT_SYSLOG_PATH);
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

static int
open_file(void)
{
	struct stat	st;
	int		fd;

	fd = open(au.path, O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0640);
	if (fd == -1)
		return -1;
	au.kind = SINK_WRITE;
	if (fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
		au.kind = SINK_PIPE;
	return fd;
}

static int
sink_open(void)
{
	switch (au.dest) {
	case AUDIT_NONE:
		return 0;
	case AUDIT_STDERR:
		au.fd = open_stderr();
		break;
	case AUDIT_SYSLOG:
		au.fd = open_syslog();
		break;
	case AUDIT_FILE:
		au.fd = open_file();
		break;
	}
	if (au.fd == -1) {
		log_warn("audit: cannot open %s", au.dest == AUDIT_FILE ? au.path :
		    au.dest == AUDIT_SYSLOG ? AUDIT_SYSLOG_PATH : "stderr");
		au.retry_at = ev_now() + AUDIT_REOPEN_MS;
		return -1;
	}
	return 0;
}

/* (Re)open the sink; SIGHUP comes here too, which is how a rotated file is picked up. */
int
audit_open(enum audit_dest dest, const char *path)
{
	char	*p = NULL;

	if (path != NULL && (p = strdup(path)) == NULL)
		return -1;
	flush();
	sink_close();
	lose(au.qlines);
	buf_reset(&au.q);
	au.qlines = 0;
	free(au.path);
	au.path = p;
	au.dest = dest;
	au.broken = 0;
	au.retry_at = 0;
	if (!au.report.cb)
		ev_timer_init(&au.report, report, NULL);
	return sink_open();
}

void
audit_close(void)
{
	flush();
	lose(au.qlines);
	sink_close();
	buf_free(&au.q);
	au.qlines = 0;
	free(au.path);
	au.path = NULL;
	ev_timer_stop(&au.report);
	report(NULL, NULL);
}

static size_t
count_lines(const uint8_t *p, size_t n)
{
	size_t	c = 0;

	while (n-- > 0)
		c += *p++ == '\n';
	return c;
}

static void
drop_queue(void)
{
	lose(au.qlines);
	buf_reset(&au.q);
	au.qlines = 0;
}

static void
flush(void)
{
	ssize_t	n;
	size_t	lines;

	while (au.fd != -1 && buf_avail(&au.q) > 0) {
		if (au.kind == SINK_SOCKET)
			n = send(au.fd, buf_head(&au.q), buf_avail(&au.q),
			    MSG_DONTWAIT | MSG_NOSIGNAL);
		else
			n = write(au.fd, buf_head(&au.q), buf_avail(&au.q));
		if (n > 0) {
			lines = count_lines(buf_head(&au.q), (size_t)n);
			au.written += lines;
			au.qlines -= lines;
			buf_consume(&au.q, (size_t)n);
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			/* watched only while something waits; retried on the next event otherwise */
			if (!au.io.active)
				ev_io_add(&au.io, au.fd, EPOLLOUT, sink_writable, NULL);
			return;
		}
		/* ENOSPC, EIO, EPIPE ...: what is queued is lost, the proxy goes on */
		drop_queue();
		if (n == -1 && (errno == EPIPE || errno == EBADF || errno == ECONNRESET)) {
			log_warn("audit: sink closed");
			sink_close();
			au.broken = au.dest == AUDIT_STDERR;
			au.retry_at = ev_now() + AUDIT_REOPEN_MS;
		}
		return;
	}
	if (au.io.active)
		ev_io_del(&au.io);
}

static void
emit_syslog(const char *line, size_t len)
{
	char		 head[64], stamp[32];
	struct tm	 tm;
	time_t		 now = time(NULL);
	struct iovec	 iov[2];
	struct msghdr	 msg = { .msg_iov = iov, .msg_iovlen = 2 };

	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%b %e %H:%M:%S", &tm);
	snprintf(head, sizeof(head), "<%d>%s execd-proxy[%d]: ", AUDIT_SYSLOG_PRI, stamp,
	    (int)getpid());
	iov[0].iov_base = head;
	iov[0].iov_len = strlen(head);
	iov[1].iov_base = (void *)line;
	iov[1].iov_len = len;
	if (sendmsg(au.fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) == -1) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS) {
			sink_close();
			au.retry_at = ev_now() + AUDIT_REOPEN_MS;
		}
		lose(1);
		return;
	}
	au.written++;
}

static void
emit(json_t *ev)
{
	char	*line;
	size_t	 len;

	if (au.dest == AUDIT_NONE) {
		json_decref(ev);
		return;
	}
	line = jx_dump(ev, &len);
	json_decref(ev);
	if (line == NULL) {
		lose(1);
		return;
	}
	if (au.fd == -1 && !au.broken && ev_now() >= au.retry_at)
		sink_open();
	if (au.fd == -1) {
		lose(1);
	} else if (au.kind == SINK_DGRAM) {
		emit_syslog(line, len);
	} else if (buf_avail(&au.q) + len + 1 > AUDIT_QUEUE_MAX ||
	    buf_append(&au.q, line, len) == -1 || buf_append(&au.q, "\n", 1) == -1) {
		lose(1);
	} else {
		au.qlines++;
		flush();
	}
	free(line);
}

static json_t *
base_event(struct conn *c, const char *event)
{
	char	 ts[40];
	json_t	*ev;

	time_rfc3339(ts, sizeof(ts));
	ev = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s?, s:i}",
	    "time", ts, "event", event, "client", c->client,
	    "protocol", proto_name(c->proto),
	    "method", c->method[0] ? c->method : "none",
	    "host", c->host[0] ? c->host : NULL, "port", (int)c->port);
	if (ev == NULL)
		return NULL;
	json_object_set_new(ev, "credential", c->reg ? json_string(c->reg->id) : json_null());
	json_object_set_new(ev, "tags", c->reg ? json_incref(c->reg->tags) : json_object());
	json_object_set_new(ev, "address", c->addr[0] ? json_string(c->addr) : json_null());
	return ev;
}

void
audit_decision(struct conn *c, const struct verdict *v)
{
	json_t	*ev;

	if ((ev = base_event(c, "decision")) == NULL) {
		lose(1);
		return;
	}
	if (c->naddrs > 0) {
		json_t	*res = json_array();
		char	 a[64];
		size_t	 i;

		for (i = 0; i < c->naddrs; i++) {
			addr_ntop(&c->addrs[i], a, sizeof(a));
			json_array_append_new(res, json_string(a));
		}
		json_object_set_new(ev, "resolved", res);
	}
	json_object_set_new(ev, "decision", json_string(v->allow ? "allow" : "deny"));
	json_object_set_new(ev, "reason", json_string(v->reason));
	json_object_set_new(ev, "source", json_string(v->source));
	emit(ev);
}

/* result: "ok", "upstream_failure", "dns_failure", "timeout", "idle_timeout", ... */
void
audit_tunnel_close(struct conn *c, const char *result)
{
	json_t	*ev;

	if ((ev = base_event(c, "close")) == NULL) {
		lose(1);
		return;
	}
	json_object_set_new(ev, "result", json_string(result));
	json_object_set_new(ev, "bytes_up", json_integer((json_int_t)c->c2u.bytes));
	json_object_set_new(ev, "bytes_down", json_integer((json_int_t)c->u2c.bytes));
	json_object_set_new(ev, "duration_ms", json_integer((json_int_t)(ev_now() - c->started)));
	emit(ev);
}

uint64_t
audit_lost(void)
{
	return au.lost;
}

uint64_t
audit_written(void)
{
	return au.written;
}
