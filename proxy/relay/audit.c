/*
 * The audit trail: one JSON object per line for every decision and every
 * relay that ends.  Lines queue in memory and are written when the sink
 * can take them.  When the queue passes its bound (a stalled reader, a
 * full disk, a closed sink), "audit-overflow block", the default, stops
 * taking new work (no client is read, no connection accepted) until the
 * sink has caught up, so nothing is relayed unrecorded; "audit-overflow
 * drop" counts and reports what it cannot keep and carries on.  Denial
 * records are rate-limited per credential (audit_limit.c).  This file is
 * the queue and the sink; audit_event.c makes the events.
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
#include "relay/audit_int.h"
#include "policy/policy.h"

#define AUDIT_QUEUE_MAX		(1024 * 1024)	/* drop: the bound; block: stop here */
#define AUDIT_QUEUE_RESUME	(AUDIT_QUEUE_MAX / 2)	/* block: go on again */
#define AUDIT_QUEUE_HARD	(64 * 1024 * 1024)	/* block: in-flight work beyond */
#define AUDIT_SUMMARY_MS	1000
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
	enum audit_overflow overflow;
	int		 blocked;	/* new work waits for the sink */
	void		(*resume)(void);	/* told when new work may go on */
	struct ev_timer	 retry;		/* block: the sink failed, try again */
	struct ev_timer	 summary;	/* suppressed denials */
	uint64_t	 suppressed;
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
static int	sink_open(void);
static void	summary_record(const char *, uint64_t);
static void	write_summaries(struct ev_timer *, void *);

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

void
audit_lose(size_t n)
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

/* block: the queue is over its bound, or back under half of it. */
static void
check_blocked(void)
{
	size_t	q = buf_avail(&au.q);

	if (au.overflow != AUDIT_BLOCK)
		return;
	if (!au.blocked && q > AUDIT_QUEUE_MAX) {
		au.blocked = 1;
		log_warnx("audit: sink behind (%zu bytes queued); new work waits", q);
	} else if (au.blocked && q <= AUDIT_QUEUE_RESUME) {
		au.blocked = 0;
		log_notice("audit: sink caught up; resuming");
		if (au.resume != NULL)
			au.resume();
	}
}

int
audit_blocked(void)
{
	return au.blocked;
}

/* Who reads the work that waited (the connection core; main.c wires it). */
void
audit_set_resume(void (*cb)(void))
{
	au.resume = cb;
}

static void
retry_sink(struct ev_timer *t, void *arg)
{
	if (au.fd == -1 && au.dest != AUDIT_NONE)
		sink_open();
	flush();
	if (buf_avail(&au.q) > 0 && (au.fd == -1 || !au.io.active))
		ev_timer_start(&au.retry, AUDIT_REOPEN_MS);
}

/* block: a failed write keeps its lines and is tried again later. */
static void
sink_failed(void)
{
	if (!ev_timer_armed(&au.retry))
		ev_timer_start(&au.retry, AUDIT_REOPEN_MS);
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
audit_open(enum audit_dest dest, const char *path, enum audit_overflow overflow)
{
	char	*p = NULL;
	int	 r;

	if (path != NULL && (p = strdup(path)) == NULL)
		return -1;
	flush();
	sink_close();
	/* what the old sink did not take goes to the new one (block) */
	if (overflow == AUDIT_DROP || dest == AUDIT_NONE) {
		audit_lose(au.qlines);
		buf_reset(&au.q);
		au.qlines = 0;
	}
	free(au.path);
	au.path = p;
	au.dest = dest;
	au.overflow = overflow;
	au.broken = 0;
	au.retry_at = 0;
	if (!au.report.cb) {
		ev_timer_init(&au.report, report, NULL);
		ev_timer_init(&au.retry, retry_sink, NULL);
		ev_timer_init(&au.summary, write_summaries, NULL);
	}
	r = sink_open();
	flush();
	check_blocked();
	return r;
}

void
audit_close(void)
{
	audit_limit_flush(summary_record);
	flush();
	audit_lose(au.qlines);
	sink_close();
	buf_free(&au.q);
	au.qlines = 0;
	free(au.path);
	au.path = NULL;
	ev_timer_stop(&au.report);
	ev_timer_stop(&au.retry);
	ev_timer_stop(&au.summary);
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
	audit_lose(au.qlines);
	buf_reset(&au.q);
	au.qlines = 0;
}

static ssize_t	send_syslog(const char *line, size_t len);

/* One write (a datagram per line for syslog); what went, or -1 (errno). */
static ssize_t
sink_write(const uint8_t *p, size_t n)
{
	const uint8_t	*nl;

	switch (au.kind) {
	case SINK_SOCKET:
		return send(au.fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
	case SINK_DGRAM:
		if ((nl = memchr(p, '\n', n)) == NULL)
			return (ssize_t)n;	/* cannot happen: lines end in LF */
		if (send_syslog((const char *)p, (size_t)(nl - p)) == -1)
			return -1;
		return nl + 1 - p;
	default:
		return write(au.fd, p, n);
	}
}

static void
flush(void)
{
	ssize_t	n;
	size_t	lines;

	while (au.fd != -1 && buf_avail(&au.q) > 0) {
		n = sink_write(buf_head(&au.q), buf_avail(&au.q));
		if (n > 0) {
			lines = count_lines(buf_head(&au.q), (size_t)n);
			au.written += lines;
			au.qlines -= lines;
			buf_consume(&au.q, (size_t)n);
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)) {
			/* watched only while something waits; retried on the next event otherwise */
			if (!au.io.active)
				ev_io_add(&au.io, au.fd, EPOLLOUT, sink_writable, NULL);
			if (au.kind == SINK_DGRAM)
				sink_failed();	/* a datagram socket may never say writable */
			break;
		}
		/* ENOSPC, EIO, EPIPE ...: drop loses the queue, block keeps it and retries */
		if (au.overflow == AUDIT_DROP)
			drop_queue();
		if (n == -1 && (errno == EPIPE || errno == EBADF || errno == ECONNRESET ||
		    errno == ECONNREFUSED || errno == ENOTCONN)) {
			log_warn("audit: sink closed");
			sink_close();
			au.broken = au.dest == AUDIT_STDERR && au.overflow == AUDIT_DROP;
			au.retry_at = ev_now() + AUDIT_REOPEN_MS;
		}
		if (au.overflow == AUDIT_BLOCK)
			sink_failed();
		break;
	}
	if (buf_avail(&au.q) == 0 && au.io.active)
		ev_io_del(&au.io);
	check_blocked();
}

static ssize_t
send_syslog(const char *line, size_t len)
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
	return sendmsg(au.fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
}

void
audit_emit(json_t *ev)
{
	char	*line;
	size_t	 len, bound;

	if (au.dest == AUDIT_NONE) {
		json_decref(ev);
		return;
	}
	line = jx_dump(ev, &len);
	json_decref(ev);
	if (line == NULL) {
		audit_lose(1);
		return;
	}
	if (au.fd == -1 && !au.broken && ev_now() >= au.retry_at)
		sink_open();
	/* drop: the bound is the bound; block: the bound stops new work, this is in flight */
	bound = au.overflow == AUDIT_BLOCK ? AUDIT_QUEUE_HARD : AUDIT_QUEUE_MAX;
	if ((au.fd == -1 && au.overflow == AUDIT_DROP) ||
	    buf_avail(&au.q) + len + 1 > bound ||
	    buf_append(&au.q, line, len) == -1 || buf_append(&au.q, "\n", 1) == -1) {
		audit_lose(1);
	} else {
		au.qlines++;
		if (au.fd == -1)
			sink_failed();
		flush();
	}
	free(line);
}

/* One line per credential and second: how many of its denials went unwritten. */
static void
summary_record(const char *cred, uint64_t n)
{
	char	 ts[40], msg[64];
	json_t	*ev;

	au.suppressed += n;
	time_rfc3339(ts, sizeof(ts));
	snprintf(msg, sizeof(msg), "%llu denials suppressed", (unsigned long long)n);
	ev = json_pack("{s:s, s:s, s:s?, s:I, s:s}", "time", ts, "event", "suppressed",
	    "credential", cred, "count", (json_int_t)n, "message", msg);
	if (ev == NULL) {
		audit_lose(n);
		return;
	}
	if (cred == NULL)
		json_object_set_new(ev, "credential", json_null());
	audit_emit(ev);
}

static void
write_summaries(struct ev_timer *t, void *arg)
{
	if (audit_limit_flush(summary_record))
		ev_timer_start(&au.summary, AUDIT_SUMMARY_MS);
}

int
audit_admit_denial(const char *cred)
{
	if (audit_limit_admit(cred, summary_record))
		return 1;
	if (!ev_timer_armed(&au.summary))
		ev_timer_start(&au.summary, AUDIT_SUMMARY_MS);
	return 0;
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

uint64_t
audit_queued(void)
{
	return au.qlines;
}

uint64_t
audit_suppressed(void)
{
	return au.suppressed;
}
