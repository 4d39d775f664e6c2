/*
 * Transparent TCP's DNS answerer: every name a sandboxed program resolves
 * gets a made-up address of its process's own (A from 198.18.0.0/15, AAAA
 * from fdc0:de00::/96, the same name the same address), so that a TCP
 * connect to that address can be sent through the proxy by the name the
 * program asked for (sandbox_tcp.c), and the policy decides on the name.
 * No host resolver is reachable from the sandbox: its network namespace
 * holds only loopback, and the answerer resolves nothing itself.
 *
 * The child binds a UDP socket and a TCP listener on 127.0.0.53:53 inside
 * its network namespace (its user namespace gives it the port) and hands
 * them to execd with the proxy routes; its view's /etc/resolv.conf names
 * that address.  execd answers on them in its event loop.
 *
 * Queries are parsed strictly: one question, no compression in it, labels
 * of letters, digits, '-' and '_' only (any other byte could not be given
 * to the proxy as the same name), at most 253 bytes as text.  A malformed
 * query gets FORMERR, a name outside that alphabet REFUSED, a class other
 * than IN NOTIMP, a type other than A and AAAA an empty NOERROR answer.
 * Debian 12's c-ares (1.18) has no response writer, so the few bytes of
 * an answer are written here.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/syscall.h>

#include <arpa/inet.h>
#include <linux/mount.h>
#include <netinet/in.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evloop.h"
#include "log.h"
#include "sandbox/sandbox_tp.h"
#include "sandbox/sandbox_int.h"

#define DNS_NAMES	4096	/* made-up addresses per process */
_Static_assert(DNS_NAMES <= 65536, "order[] holds indexes of names[] in 16 bits");
#define DNS_MSG		1024	/* longest query taken (they are small) */
#define DNS_TCP_CONNS	8	/* TCP DNS connections per process */
#define DNS_TCP_IDLE_MS	10000
#define DNS_TTL		60

#define FAKE4_NET	0xc6120000U	/* 198.18.0.0/15 */
static const uint8_t	fake6_net[12] = { 0xfd, 0xc0, 0xde, 0x00 };	/* fdc0:de00::/96 */

struct dns_tcp {
	struct sbx_dns	*d;
	struct ev_io	 io;
	struct ev_timer	 idle;
	uint8_t		 in[2 + DNS_MSG];
	size_t		 inlen;
	int		 used;
};

struct sbx_dns {
	char		*names[DNS_NAMES];	/* index i: address number i + 1 */
	/*
	 * names[] indexes sorted by name: a lookup is a binary search (12
	 * compares at 4096), never a walk of the table, whatever names the
	 * program makes up (no hash to flood either).
	 */
	uint16_t	 order[DNS_NAMES];
	size_t		 nnames;
	struct ev_io	 udp, tcp;
	struct dns_tcp	 conns[DNS_TCP_CONNS];
	pid_t		 pid;
};

/* ---- in the child ---- */

static int
bound(int type)
{
	struct sockaddr_in	sin = { .sin_family = AF_INET, .sin_port = htons(53) };
	int			fd, on = 1, e;

	sin.sin_addr.s_addr = htonl(SBX_DNS_ADDR);
	if ((fd = socket(AF_INET, type | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) == -1 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    (type == SOCK_STREAM && listen(fd, 16) == -1)) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int
sbx_dns_sockets(int *udp, int *tcp)
{
	int	e;

	if ((*udp = bound(SOCK_DGRAM)) == -1)
		return errno;
	if ((*tcp = bound(SOCK_STREAM)) == -1) {
		e = errno;
		close(*udp);
		return e;
	}
	return 0;
}

/*
 * /etc/resolv.conf in the view names the answerer: a file on a tmpfs of
 * its own, made detached (a memfd cannot be bound: it lives on an
 * internal mount), bound read-only over the view's.  No resolv.conf in
 * the view: nothing bound (the C library then asks 127.0.0.1, where
 * nothing answers).  0 or an errno; nothing allocated.
 */
int
sbx_dns_resolv(void)
{
	static const char	text[] = "nameserver 127.0.0.53\n";	/* as 0.171.0 writes it */
	struct mount_attr	ro = { .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
				    MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC };
	int			fs = -1, mnt = -1, f = -1, tree = -1, e = 0;

	if (access("/etc/resolv.conf", F_OK) == -1)
		return 0;
	if ((fs = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC)) == -1 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "size", "4k", 0) == -1 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == -1 ||
	    (mnt = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, 0)) == -1 ||
	    (f = openat(mnt, "resolv.conf", O_CREAT | O_WRONLY | O_CLOEXEC, 0644)) == -1 ||
	    write(f, text, sizeof(text) - 1) != (ssize_t)(sizeof(text) - 1) ||
	    (tree = (int)syscall(SYS_open_tree, mnt, "resolv.conf", OPEN_TREE_CLONE |
	    OPEN_TREE_CLOEXEC)) == -1 ||
	    syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &ro, sizeof(ro)) == -1 ||
	    syscall(SYS_move_mount, tree, "", AT_FDCWD, "/etc/resolv.conf",
	    MOVE_MOUNT_F_EMPTY_PATH) == -1)
		e = errno ? errno : EIO;
	if (tree != -1)
		close(tree);
	if (f != -1)
		close(f);
	if (mnt != -1)
		close(mnt);
	if (fs != -1)
		close(fs);
	return e;
}

/* ---- in execd: the names ---- */

/* The number (1..DNS_NAMES) a made-up address carries, or 0. */
static size_t
fake_number(const struct sockaddr *sa)
{
	const struct sockaddr_in	*sin = (const void *)sa;
	const struct sockaddr_in6	*sin6 = (const void *)sa;
	const uint8_t			*b;
	uint32_t			 a;

	if (sa->sa_family == AF_INET)
		a = ntohl(sin->sin_addr.s_addr);
	else if (sa->sa_family == AF_INET6) {
		b = sin6->sin6_addr.s6_addr;
		if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr))
			a = (uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 | b[14] << 8 | b[15];
		else if (memcmp(b, fake6_net, sizeof(fake6_net)) == 0) {
			a = (uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 | b[14] << 8 | b[15];
			return a >= 1 && a <= DNS_NAMES ? a : 0;
		} else
			return 0;
	} else
		return 0;
	if ((a & 0xfffe0000U) != FAKE4_NET)
		return 0;
	a -= FAKE4_NET;
	return a >= 1 && a <= DNS_NAMES ? a : 0;
}

/* In 198.18.0.0/15 (v4-mapped too) or fdc0:de00::/96, numbered or not. */
int
sbx_dns_is_fake(const struct sockaddr *sa)
{
	const struct sockaddr_in	*sin = (const void *)sa;
	const struct sockaddr_in6	*sin6 = (const void *)sa;
	const uint8_t			*b = sin6->sin6_addr.s6_addr;

	if (sa->sa_family == AF_INET)
		return (ntohl(sin->sin_addr.s_addr) & 0xfffe0000U) == FAKE4_NET;
	if (sa->sa_family != AF_INET6)
		return 0;
	if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr))
		return b[12] == 198 && (b[13] & 0xfe) == 18;
	return memcmp(b, fake6_net, sizeof(fake6_net)) == 0;
}

const char *
sbx_dns_name(const struct sbx_dns *d, const struct sockaddr *sa)
{
	size_t	n = fake_number(sa);

	return n == 0 || n > d->nnames ? NULL : d->names[n - 1];
}

/* Where name is in d->order, or would go: *found says which. */
static size_t
name_slot(const struct sbx_dns *d, const char *name, int *found)
{
	size_t	lo = 0, hi = d->nnames, mid;
	int	c;

	*found = 0;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if ((c = strcmp(name, d->names[d->order[mid]])) == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* The number of name (canonical, lower case), given one if new; 0 when the table is full. */
static size_t
name_number(struct sbx_dns *d, const char *name)
{
	size_t	slot;
	int	found;

	slot = name_slot(d, name, &found);
	if (found)
		return (size_t)d->order[slot] + 1;
	if (d->nnames == DNS_NAMES) {
		log_warnx("sandbox: process %ld resolved %d names; no address for %s",
		    (long)d->pid, DNS_NAMES, name);
		return 0;
	}
	if ((d->names[d->nnames] = strdup(name)) == NULL) {
		log_warn("sandbox: DNS answerer");
		return 0;
	}
	memmove(d->order + slot + 1, d->order + slot, (d->nnames - slot) * sizeof(d->order[0]));
	d->order[slot] = (uint16_t)d->nnames;
	return ++d->nnames;
}

/* ---- in execd: the answers ---- */

enum { RC_OK = 0, RC_FORMERR = 1, RC_SERVFAIL = 2, RC_NOTIMP = 4, RC_REFUSED = 5 };

/*
 * The question of q (qlen bytes): its name as text in name (room for
 * 254), its end in *qend, type and class.  An rcode: RC_OK, RC_FORMERR or
 * RC_REFUSED (a byte a proxy name cannot carry).
 */
static int
parse_question(const uint8_t *q, size_t qlen, char *name, size_t *qend, unsigned *type,
    unsigned *class)
{
	size_t	off = 12, n = 0, len, i;
	int	refused = 0;

	while (off < qlen && (len = q[off]) != 0) {
		if (len > 63 || off + 1 + len >= qlen || n + len + 1 > 254)
			return RC_FORMERR;	/* compression or too long */
		for (i = 0; i < len; i++) {
			int c = q[off + 1 + i];
			if (!isalnum(c) && c != '-' && c != '_')
				refused = 1;
			name[n++] = (char)tolower(c & 0x7f);
		}
		name[n++] = '.';
		off += 1 + len;
	}
	if (off >= qlen || off + 5 > qlen)
		return RC_FORMERR;
	name[n > 0 ? n - 1 : 0] = '\0';
	off++;
	*type = (unsigned)q[off] << 8 | q[off + 1];
	*class = (unsigned)q[off + 2] << 8 | q[off + 3];
	*qend = off + 4;
	return refused ? RC_REFUSED : RC_OK;
}

static void
put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* The answer to q in out (room for DNS_MSG + 64), its length; 0: no answer at all. */
static size_t
answer(struct sbx_dns *d, const uint8_t *q, size_t qlen, uint8_t *out)
{
	char		name[256];
	size_t		qend = 12, len, num;
	unsigned	type = 0, class = 0, qd, an, ns, ar;
	int		rc;

	if (qlen < 12 || (q[2] & 0x80))
		return 0;	/* not even a header, or a response: dropped */
	qd = (unsigned)q[4] << 8 | q[5];
	an = (unsigned)q[6] << 8 | q[7];
	ns = (unsigned)q[8] << 8 | q[9];
	ar = (unsigned)q[10] << 8 | q[11];
	if ((q[2] & 0x78) != 0)
		rc = RC_NOTIMP;		/* an opcode other than QUERY */
	else if (qd != 1 || an != 0 || ns != 0 || ar > 1)
		rc = RC_FORMERR;
	else if ((rc = parse_question(q, qlen, name, &qend, &type, &class)) == RC_OK &&
	    class != 1)
		rc = RC_NOTIMP;
	if (rc == RC_FORMERR || rc == RC_NOTIMP)
		qend = 12;		/* the header alone goes back */
	memcpy(out, q, qend);
	out[2] = (uint8_t)(0x80 | (q[2] & 0x79));	/* QR, the opcode, RD */
	out[3] = 0x80;					/* RA */
	put16(out + 4, qend > 12);
	put16(out + 6, 0);
	put16(out + 8, 0);
	put16(out + 10, 0);
	len = qend;
	if (rc == RC_OK && (type == 1 || type == 28) && name[0] != '\0') {
		if ((num = name_number(d, name)) == 0)
			rc = RC_SERVFAIL;
		else {
			put16(out + len, 0xc00c);	/* the question's name */
			put16(out + len + 2, type);
			put16(out + len + 4, 1);
			put16(out + len + 6, 0);
			put16(out + len + 8, DNS_TTL);
			len += 10;
			if (type == 1) {
				uint32_t a = htonl(FAKE4_NET + (uint32_t)num);
				put16(out + len, 4);
				memcpy(out + len + 2, &a, 4);
				len += 6;
			} else {
				uint32_t a = htonl((uint32_t)num);
				put16(out + len, 16);
				memcpy(out + len + 2, fake6_net, sizeof(fake6_net));
				memcpy(out + len + 14, &a, 4);
				len += 18;
			}
			put16(out + 6, 1);
		}
	}
	out[3] |= (uint8_t)rc;
	if (rc != RC_OK)
		len = qend;
	return len;
}

static void
udp_cb(struct ev_io *io, uint32_t events, void *arg)
{
	struct sbx_dns		*d = arg;
	struct sockaddr_storage	 from;
	socklen_t		 fromlen;
	uint8_t			 q[DNS_MSG], out[DNS_MSG + 64];
	ssize_t			 n;
	size_t			 len;
	int			 i;

	for (i = 0; i < 64; i++) {	/* a bounded round: the loop has others to serve */
		fromlen = sizeof(from);
		n = recvfrom(io->fd, q, sizeof(q), MSG_DONTWAIT | MSG_TRUNC,
		    (struct sockaddr *)&from, &fromlen);
		if (n == -1)
			break;
		if ((size_t)n > sizeof(q))
			continue;	/* larger than any question: dropped */
		if ((len = answer(d, q, (size_t)n, out)) > 0)
			(void)sendto(io->fd, out, len, MSG_DONTWAIT | MSG_NOSIGNAL,
			    (struct sockaddr *)&from, fromlen);
	}
}

static void
tcp_close(struct dns_tcp *c)
{
	ev_timer_stop(&c->idle);
	ev_io_del(&c->io);
	close(c->io.fd);
	c->used = 0;
}

static void
tcp_idle(struct ev_timer *t, void *arg)
{
	tcp_close(arg);
}

/* Answers whole queries in c->in; -1 when the connection is to end. */
static int
tcp_serve(struct dns_tcp *c)
{
	uint8_t		out[2 + DNS_MSG + 64];
	size_t		qlen, len;

	while (c->inlen >= 2) {
		qlen = (size_t)c->in[0] << 8 | c->in[1];
		if (qlen == 0 || qlen > DNS_MSG)
			return -1;
		if (c->inlen < 2 + qlen)
			return 0;
		if ((len = answer(c->d, c->in + 2, qlen, out + 2)) == 0)
			return -1;
		put16(out, (unsigned)len);
		/* a few dozen bytes on a fresh socket buffer: a short write ends it */
		if (send(c->io.fd, out, len + 2, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)(len + 2))
			return -1;
		memmove(c->in, c->in + 2 + qlen, c->inlen - 2 - qlen);
		c->inlen -= 2 + qlen;
	}
	return 0;
}

static void
tcp_cb(struct ev_io *io, uint32_t events, void *arg)
{
	struct dns_tcp	*c = arg;
	ssize_t		 n;

	n = recv(io->fd, c->in + c->inlen, sizeof(c->in) - c->inlen, MSG_DONTWAIT);
	if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR)) {
		tcp_close(c);
		return;
	}
	if (n > 0)
		c->inlen += (size_t)n;
	if (tcp_serve(c) == -1)
		tcp_close(c);
	else
		ev_timer_start(&c->idle, DNS_TCP_IDLE_MS);
}

static void
accept_cb(struct ev_io *io, uint32_t events, void *arg)
{
	struct sbx_dns	*d = arg;
	size_t		 i;
	int		 fd;

	while ((fd = accept4(io->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) != -1) {
		for (i = 0; i < DNS_TCP_CONNS && d->conns[i].used; i++)
			;
		if (i == DNS_TCP_CONNS) {
			log_warnx("sandbox: process %ld has %d DNS connections open; refusing "
			    "another", (long)d->pid, DNS_TCP_CONNS);
			close(fd);
			continue;
		}
		d->conns[i].d = d;
		d->conns[i].inlen = 0;
		d->conns[i].used = 1;
		ev_timer_init(&d->conns[i].idle, tcp_idle, &d->conns[i]);
		if (ev_io_add(&d->conns[i].io, fd, EPOLLIN, tcp_cb, &d->conns[i]) == -1) {
			close(fd);
			d->conns[i].used = 0;
			continue;
		}
		ev_timer_start(&d->conns[i].idle, DNS_TCP_IDLE_MS);
	}
}

struct sbx_dns *
sbx_dns_new(pid_t pid, int udp, int tcp)
{
	struct sbx_dns	*d;

	if ((d = calloc(1, sizeof(*d))) == NULL) {
		log_warn("sandbox: DNS answerer");
		close(udp);
		close(tcp);
		return NULL;
	}
	d->pid = pid;
	d->udp.fd = d->tcp.fd = -1;
	if (fcntl(udp, F_SETFL, O_NONBLOCK) == -1 || fcntl(tcp, F_SETFL, O_NONBLOCK) == -1 ||
	    ev_io_add(&d->udp, udp, EPOLLIN, udp_cb, d) == -1) {
		log_warn("sandbox: DNS answerer of process %ld", (long)pid);
		close(udp);
		close(tcp);
		free(d);
		return NULL;
	}
	if (ev_io_add(&d->tcp, tcp, EPOLLIN, accept_cb, d) == -1) {
		log_warn("sandbox: DNS answerer of process %ld", (long)pid);
		close(tcp);
		d->tcp.fd = -1;
	}
	return d;
}

void
sbx_dns_free(struct sbx_dns *d)
{
	size_t	i;

	if (d == NULL)
		return;
	for (i = 0; i < DNS_TCP_CONNS; i++)
		if (d->conns[i].used)
			tcp_close(&d->conns[i]);
	ev_io_del(&d->udp);
	close(d->udp.fd);
	if (d->tcp.fd != -1) {
		ev_io_del(&d->tcp);
		close(d->tcp.fd);
	}
	for (i = 0; i < d->nnames; i++)
		free(d->names[i]);
	free(d);
}
