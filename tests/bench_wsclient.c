/*
 * Bench client for tests/bench/ws.py: process output over WebSocket, read as
 * fast as a client can.  The Python client spends about 2 ms of CPU per MiB
 * and on two CPUs it, not the server, set the pace; this one only parses the
 * frame heads, counts the base64 of each process/output chunk and drops it.
 *
 * Usage: bench_wsclient HOST PORT PATH NBYTES PROCESS-ID CWD
 *   connects, upgrades (PATH is the request target), initializes, prints
 *   "ready" and waits for a line on stdin (the caller samples the server's
 *   CPU then), sends process/start for `head -c NBYTES /dev/zero`, reads
 *   until process/closed and prints "BYTES SECONDS CLIENT-CPU-MS".
 * Exits 1 with a message on stderr on any error, wrong byte count included.
 * Every wait is bounded by SO_RCVTIMEO/SO_SNDTIMEO.
 */
#include "config.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BUF_SIZE	(8u << 20)	/* the largest frame accepted */
#define IO_SECONDS	120
#define HEAD_SCAN	256		/* where a notification's method is looked for first */

struct rd {
	int		 fd;
	unsigned char	*b;
	size_t		 st, en;
};

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list	ap;

	fprintf(stderr, "bench_wsclient: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static int
dial(const char *host, const char *port)
{
	struct addrinfo	 hints, *res;
	struct timeval	 tv = { IO_SECONDS, 0 };
	int		 fd, one = 1, rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	if ((rc = getaddrinfo(host, port, &hints, &res)) != 0)
		die("%s:%s: %s", host, port, gai_strerror(rc));
	if ((fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		die("socket: %s", strerror(errno));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == -1 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == -1)
		die("setsockopt: %s", strerror(errno));
	if (connect(fd, res->ai_addr, res->ai_addrlen) == -1)
		die("connect %s:%s: %s", host, port, strerror(errno));
	freeaddrinfo(res);
	return fd;
}

static void
send_all(int fd, const void *p, size_t n)
{
	const char	*c = p;
	ssize_t		 w;

	while (n > 0) {
		if ((w = send(fd, c, n, MSG_NOSIGNAL)) == -1) {
			if (errno == EINTR)
				continue;
			die("send: %s", strerror(errno));
		}
		c += w;
		n -= (size_t)w;
	}
}

/* a masked client frame; the zero mask leaves the payload as it is */
static void
send_frame(int fd, int opcode, const void *p, size_t n)
{
	unsigned char	head[14];
	size_t		h = 0;

	head[h++] = 0x80 | (unsigned char)opcode;
	if (n < 126)
		head[h++] = 0x80 | (unsigned char)n;
	else if (n < 65536) {
		head[h++] = 0x80 | 126;
		head[h++] = (unsigned char)(n >> 8);
		head[h++] = (unsigned char)n;
	} else
		die("frame of %zu bytes to send", n);
	memset(head + h, 0, 4);
	h += 4;
	send_all(fd, head, h);
	send_all(fd, p, n);
}

/* more bytes into the buffer, the unread ones moved to its start first */
static void
fill(struct rd *r)
{
	ssize_t	n;

	if (r->st > 0) {
		memmove(r->b, r->b + r->st, r->en - r->st);
		r->en -= r->st;
		r->st = 0;
	}
	if (r->en == BUF_SIZE)
		die("a frame over %u bytes", BUF_SIZE);
	while ((n = recv(r->fd, r->b + r->en, BUF_SIZE - r->en, 0)) == -1 &&
	    errno == EINTR)
		;
	if (n == -1)
		die("recv: %s", errno == EAGAIN ? "no data in time" : strerror(errno));
	if (n == 0)
		die("the server closed the connection");
	r->en += (size_t)n;
}

/* the next whole frame: its opcode, payload and length */
static int
next_frame(struct rd *r, unsigned char **pay, size_t *len)
{
	unsigned char	*f;
	uint64_t	 n;
	size_t		 off, i;

	for (;;) {
		f = r->b + r->st;
		off = 2;
		if (r->en - r->st >= 2) {
			if ((f[0] & 0x80) == 0 || (f[1] & 0x80))
				die("a fragmented or masked server frame (%02x %02x)",
				    f[0], f[1]);
			n = f[1] & 0x7f;
			if (n >= 126)
				off = n == 126 ? 4 : 10;
			if (r->en - r->st >= off) {
				if (off > 2)
					for (n = 0, i = 2; i < off; i++)
						n = n << 8 | f[i];
				if (n > BUF_SIZE - off)
					die("a frame of %llu bytes", (unsigned long long)n);
				if (r->en - r->st >= off + n) {
					*pay = f + off;
					*len = (size_t)n;
					r->st += off + (size_t)n;
					return f[0] & 0x0f;
				}
			}
		}
		fill(r);
	}
}

/* a text frame's payload; pings answered, anything else ends the run */
static void
next_text(struct rd *r, unsigned char **pay, size_t *len)
{
	int	op;

	for (;;) {
		op = next_frame(r, pay, len);
		if (op == 1)
			return;
		if (op == 9)
			send_frame(r->fd, 10, *pay, *len);
		else if (op == 8)
			die("the server sent a close frame");
		else if (op != 10)
			die("an unexpected frame, opcode %d", op);
	}
}

static void
upgrade(struct rd *r, const char *host, const char *path)
{
	char		 req[1024];
	unsigned char	*e;
	int		 n;

	n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: %s\r\n"
	    "Upgrade: websocket\r\nConnection: Upgrade\r\n"
	    "Sec-WebSocket-Key: YmVuY2hfd3NjbGllbnQgIQ==\r\n"
	    "Sec-WebSocket-Version: 13\r\n\r\n", path, host);
	if (n < 0 || (size_t)n >= sizeof(req))
		die("request target too long");
	send_all(r->fd, req, (size_t)n);
	while ((e = memmem(r->b, r->en, "\r\n\r\n", 4)) == NULL)
		fill(r);
	if (r->en < 12 || memcmp(r->b, "HTTP/1.1 101", 12) != 0)
		die("upgrade refused: %.60s", r->b);
	r->st = (size_t)(e + 4 - r->b);
}

static void
initialize(struct rd *r)
{
	static const char	init[] =
	    "{\"id\":1,\"method\":\"initialize\",\"params\":{\"clientName\":\"bench\"}}";
	static const char	inited[] = "{\"method\":\"initialized\"}";
	unsigned char		*p;
	size_t			 n;

	send_frame(r->fd, 1, init, sizeof(init) - 1);
	do
		next_text(r, &p, &n);
	while (memmem(p, n, "\"id\":1", 6) == NULL || memmem(p, n, "\"method\"", 8));
	if (memmem(p, n, "\"result\"", 8) == NULL)
		die("initialize: %.*s", (int)(n > 300 ? 300 : n), p);
	send_frame(r->fd, 1, inited, sizeof(inited) - 1);
}

/* the decoded length of a process/output payload's chunk, or -1 if it is not one */
static long long
chunk_bytes(const unsigned char *p, size_t n)
{
	const unsigned char	*k, *q;
	size_t			 len;

	if ((k = memmem(p, n, "\"chunk\":\"", 9)) == NULL)
		return -1;
	if (memmem(p, n < HEAD_SCAN ? n : HEAD_SCAN, "\"process/output\"", 16) == NULL &&
	    memmem(p, n, "\"process/output\"", 16) == NULL)
		return -1;
	k += 9;
	if ((q = memchr(k, '"', n - (size_t)(k - p))) == NULL)
		die("an unterminated chunk");
	len = (size_t)(q - k);
	if (len % 4 != 0)
		die("a chunk of %zu base64 characters", len);
	if (len == 0)
		return 0;
	return (long long)(len / 4 * 3) - (q[-1] == '=') - (q[-2] == '=');
}

static double
now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double
cpu_ms(void)
{
	struct rusage	ru;

	if (getrusage(RUSAGE_SELF, &ru) == -1)
		die("getrusage: %s", strerror(errno));
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	    (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

/* the process/start request; the names are the bench's own, checked plain */
static size_t
start_request(char *out, size_t cap, const char *nbytes, const char *id, const char *cwd)
{
	const char	*s;
	int		 n;

	for (s = id; *s; s++)
		if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20)
			die("a process id that needs escaping");
	for (s = cwd; *s; s++)
		if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20)
			die("a cwd that needs escaping");
	if (strspn(nbytes, "0123456789") != strlen(nbytes) || *nbytes == '\0')
		die("NBYTES is not a number: %s", nbytes);
	n = snprintf(out, cap, "{\"id\":2,\"method\":\"process/start\",\"params\":"
	    "{\"processId\":\"%s\",\"argv\":[\"head\",\"-c\",\"%s\",\"/dev/zero\"],"
	    "\"cwd\":\"file://%s\",\"env\":{\"PATH\":\"/usr/bin:/bin\"},\"tty\":false}}",
	    id, nbytes, cwd);
	if (n < 0 || (size_t)n >= cap)
		die("process/start too long");
	return (size_t)n;
}

static long long
read_output(struct rd *r, const char *id)
{
	char		 key[128];
	unsigned char	*p;
	size_t		 n;
	long long	 total = 0, c;

	snprintf(key, sizeof(key), "\"processId\":\"%s\"", id);
	for (;;) {
		next_text(r, &p, &n);
		if ((c = chunk_bytes(p, n)) >= 0)
			total += c;
		else if (memmem(p, n, "\"process/closed\"", 16) &&
		    memmem(p, n, key, strlen(key)))
			return total;
		else if (memmem(p, n, "\"error\"", 7) && memmem(p, n, "\"id\":2", 6))
			die("process/start: %.*s", (int)(n > 300 ? 300 : n), p);
	}
}

int
main(int argc, char *argv[])
{
	struct rd	 r;
	char		 req[2048], line[64];
	size_t		 n;
	long long	 want, got;
	double		 t, c;

	if (argc != 7)
		die("usage: bench_wsclient HOST PORT PATH NBYTES PROCESS-ID CWD");
	want = strtoll(argv[4], NULL, 10);
	n = start_request(req, sizeof(req), argv[4], argv[5], argv[6]);
	memset(&r, 0, sizeof(r));
	if ((r.b = malloc(BUF_SIZE)) == NULL)
		die("malloc: %s", strerror(errno));
	r.fd = dial(argv[1], argv[2]);
	upgrade(&r, argv[1], argv[3]);
	initialize(&r);
	printf("ready\n");
	fflush(stdout);
	if (fgets(line, sizeof(line), stdin) == NULL)
		die("no go line on stdin");
	t = now();
	c = cpu_ms();
	send_frame(r.fd, 1, req, n);
	got = read_output(&r, argv[5]);
	t = now() - t;
	c = cpu_ms() - c;
	if (got != want)
		die("received %lld of %lld bytes", got, want);
	printf("%lld %.6f %.3f\n", got, t, c);
	fflush(stdout);
	close(r.fd);
	free(r.b);
	return 0;
}
