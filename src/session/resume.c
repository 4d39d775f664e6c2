#include "config.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "evloop.h"
#include "util/fdpass.h"
#include "fdio.h"
#include "log.h"
#include "peerns.h"
#include "jsonx.h"
#include "session/resume.h"
#include "rpc/rpc.h"
#include "util/crypto.h"

#define RESUME_MAGIC	0x65786431u	/* "exd1" */
#define RESUME_MAX	(1024 * 1024)	/* an initialize request is small */
#define RESUME_NAME_V1	"execd resume v1"	/* hashed with its NUL, then the id */
#define RESUME_NAME_LEN	16		/* bytes of the hash in the socket's name */
#define SESSION_ID_LEN	36
#define SOCK_SUFFIX	".sock"
#define OWNER_SUFFIX	".pid"		/* beside each socket: its owner's pid */

struct resume_hdr {
	uint32_t	magic;
	uint32_t	len;
};

static struct {
	char		 path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char		 owner[sizeof(((struct sockaddr_un *)0)->sun_path) + sizeof(OWNER_SUFFIX)];
	struct ev_io	 lio;
	int		 listening;
	struct ev_timer	 ttl;
	int		 waiting;
	char		 id[SESSION_ID_LEN + 1];	/* what a hand-over must name */
	const char	*state_dir;	/* NULL: sessions cannot be resumed */
	unsigned	 ttl_ms;	/* 0: sessions cannot be resumed */
	void		(*expired)(void);
	int		(*take_over)(int, const char **);
} rs;

void
resume_init(const char *state_dir, unsigned ttl_ms, void (*expired)(void),
    int (*take_over)(int fd, const char **peer))
{
	rs.state_dir = state_dir;
	rs.ttl_ms = ttl_ms;
	rs.expired = expired;
	rs.take_over = take_over;
}

static int
session_id_ok(const char *id)
{
	size_t	i, n = strlen(id);

	/* a UUID: it becomes a file name, so nothing else gets through */
	if (n != SESSION_ID_LEN)
		return 0;
	for (i = 0; i < n; i++)
		if (!(isxdigit((unsigned char)id[i]) || id[i] == '-'))
			return 0;
	return 1;
}

/*
 * The socket is named by a one-way function of the session id: whoever can
 * list the state directory learns where sessions are, never their ids, and
 * the id is what a hand-over must name (resume_take).
 */
static int
socket_path(const char *id, char *out, size_t len)
{
	static const char	 domain[] = RESUME_NAME_V1;
	unsigned char		 in[sizeof(domain) + SESSION_ID_LEN], md[SHA256_LEN];
	char			 hex[2 * RESUME_NAME_LEN + 1];
	size_t			 i;

	if (rs.state_dir == NULL || !session_id_ok(id))
		return -1;
	memcpy(in, domain, sizeof(domain));
	memcpy(in + sizeof(domain), id, SESSION_ID_LEN);
	if (crypto_sha256(in, sizeof(in), md) == -1)
		return -1;
	for (i = 0; i < RESUME_NAME_LEN; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	if ((size_t)snprintf(out, len, "%s/session-%s" SOCK_SUFFIX, rs.state_dir, hex) >= len)
		return -1;
	return 0;
}

static void
resume_expired(struct ev_timer *t, void *arg)
{
	log_info("session not resumed within %u ms: ending it", rs.ttl_ms);
	rs.waiting = 0;
	resume_cleanup();
	rs.expired();
}

/* Does the hand-over's initialize name our session?  Constant time. */
static int
handover_names_us(const char *msg, size_t len)
{
	json_t		*req = json_loadb(msg, len, 0, NULL);
	const char	*id;
	int		 ok;

	id = json_string_value(json_object_get(json_object_get(req, "params"),
	    "resumeSessionId"));
	ok = id != NULL && rs.id[0] != '\0' && strlen(id) == SESSION_ID_LEN &&
	    crypto_equal(id, rs.id, SESSION_ID_LEN);
	json_decref(req);
	return ok;
}

/* The owner's side: a new instance brings us our client back. */
static void
resume_take(int us)
{
	struct resume_hdr	 hdr;
	char			*msg = NULL, reply;
	const char		*peer;
	ssize_t			 n;
	int			 fds[FDPASS_MAX], fd = -1;
	size_t			 nfds, i;

	n = fdpass_recv(us, &hdr, sizeof(hdr), fds, &nfds, 0);
	/* the client's connection is the one descriptor that counts */
	if (nfds > 0)
		fd = fds[0];
	for (i = 1; i < nfds; i++)
		close(fds[i]);
	if (n != sizeof(hdr) || hdr.magic != RESUME_MAGIC || hdr.len > RESUME_MAX)
		goto bad;
	if (fd == -1 || (msg = malloc(hdr.len)) == NULL)
		goto bad;
	if (fd_read_full(us, msg, hdr.len) != 0)
		goto bad;
	if (!handover_names_us(msg, hdr.len)) {
		/* what a new instance hears for a session that does not exist */
		log_warnx("resume refused: the hand-over on %s names another session", rs.path);
		reply = 'N';
		(void)!write(us, &reply, 1);
		goto out;
	}
	if (rpc_attached()) {
		reply = 'A';
		(void)!write(us, &reply, 1);
		goto out;
	}
	reply = 'K';
	if (write(us, &reply, 1) != 1)
		goto bad;
	/*
	 * Still detached: what the children wrote, and their exits, go into
	 * the retention now, so the first read after the initialize sees it
	 * all instead of racing the pipes.
	 */
	rpc_output_drained();
	if (rs.take_over(fd, &peer) == -1) {
		log_warnx("cannot take over a resumed connection");
		goto out;
	}
	fd = -1;
	ev_timer_stop(&rs.ttl);
	rs.waiting = 0;
	log_info("session resumed by %s", peer);
	/* the initialize that asked for us is the first message of the new connection */
	rpc_input(msg, hdr.len);
	rpc_output_drained();
	goto out;
bad:
	log_warnx("malformed resume hand-over on %s", rs.path);
out:
	if (fd != -1)
		close(fd);
	free(msg);
	close(us);
}

/*
 * Only an execd instance outside any sandbox may hand us a client: our uid
 * (or root), a pid we can see, our pid and user namespaces.  NULL, or why not.
 */
static const char *
peer_refusal(int us, struct ucred *cred)
{
	socklen_t	cl = sizeof(*cred);

	if (getsockopt(us, SOL_SOCKET, SO_PEERCRED, cred, &cl) == -1)
		return "no peer credentials";
	if (cred->uid != getuid() && cred->uid != 0)
		return "another uid";
	if (cred->pid == 0)
		return "a pid outside our pid namespace";
	if (peerns_same_pid(cred->pid) != 1)
		return "another pid namespace";
	/* a sandbox's user namespace is one we own: the kernel tells us */
	if (peerns_same(cred->pid, "user") == 0)
		return "another user namespace";
	return NULL;
}

static void
resume_accept(struct ev_io *io, uint32_t events, void *arg)
{
	struct ucred	 cred = { 0 };
	const char	*why;
	int		 us, fl;

	if ((us = accept4(io->fd, NULL, NULL, SOCK_CLOEXEC)) == -1)
		return;
	if ((why = peer_refusal(us, &cred)) != NULL) {
		log_warnx("resume attempt by pid %ld uid %ld refused: %s", (long)cred.pid,
		    (long)cred.uid, why);
		close(us);
		return;
	}
	/* the hand-over is sent whole right after connect: a bounded blocking read */
	fl = fcntl(us, F_GETFL);
	fcntl(us, F_SETFL, fl & ~O_NONBLOCK);
	setsockopt(us, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){ 2, 0 },
	    sizeof(struct timeval));
	resume_take(us);
}

/*
 * The owner file names our pid, and exists before the socket does: a
 * clean-up (resume_sweep) never takes a socket being set up for stale.
 */
static int
owner_write(const char *sock)
{
	char	buf[32];
	int	fd, n;

	snprintf(rs.owner, sizeof(rs.owner), "%.*s" OWNER_SUFFIX,
	    (int)(strlen(sock) - strlen(SOCK_SUFFIX)), sock);
	n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	fd = open(rs.owner, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd == -1 || write(fd, buf, n) != n) {
		log_warn("owner file %s: sessions cannot be resumed", rs.owner);
		if (fd != -1) {
			close(fd);
			unlink(rs.owner);
		}
		rs.owner[0] = '\0';
		return -1;
	}
	close(fd);
	return 0;
}

static void
unpublish(void)
{
	if (rs.path[0] != '\0')
		unlink(rs.path);
	if (rs.owner[0] != '\0')
		unlink(rs.owner);
	rs.path[0] = rs.owner[0] = '\0';
}

int
resume_publish(const char *session_id)
{
	struct sockaddr_un	 sun = { .sun_family = AF_UNIX };
	mode_t			 old;
	int			 fd;

	ev_timer_init(&rs.ttl, resume_expired, NULL);
	if (rs.ttl_ms == 0 || socket_path(session_id, rs.path, sizeof(rs.path)) == -1)
		return -1;
	snprintf(rs.id, sizeof(rs.id), "%s", session_id);
	if (mkdir(rs.state_dir, 0700) == -1 && errno != EEXIST) {
		log_warn("mkdir %s: sessions cannot be resumed", rs.state_dir);
		return -1;
	}
	if (owner_write(rs.path) == -1) {
		rs.path[0] = '\0';
		return -1;
	}
	memcpy(sun.sun_path, rs.path, strlen(rs.path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	old = umask(077);
	if (fd == -1 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		umask(old);
		log_warn("session socket %s: sessions cannot be resumed", rs.path);
		if (fd != -1)
			close(fd);
		/* whatever is at the path is not ours */
		rs.path[0] = '\0';
		unpublish();
		return -1;
	}
	umask(old);
	if (listen(fd, 4) == -1) {
		log_warn("listen %s: sessions cannot be resumed", rs.path);
		close(fd);
		unpublish();
		return -1;
	}
	if (ev_io_add(&rs.lio, fd, EPOLLIN, resume_accept, NULL) == -1) {
		close(fd);
		unpublish();
		return -1;
	}
	/* the socket alone must not keep an idle instance alive */
	ev_hold(-1);
	rs.listening = 1;
	return 0;
}

int
resume_detached(void)
{
	if (!rs.listening)
		return 0;
	rs.waiting = 1;
	ev_timer_start(&rs.ttl, rs.ttl_ms);
	log_info("client gone: keeping the session for %u ms", rs.ttl_ms);
	return 1;
}

int
resume_waiting(void)
{
	return rs.waiting;
}

void
resume_cleanup(void)
{
	if (!rs.listening)
		return;
	ev_hold(1);
	ev_io_del(&rs.lio);
	close(rs.lio.fd);
	unpublish();
	rs.listening = 0;
	rs.waiting = 0;		/* nobody can come back now */
	ev_timer_stop(&rs.ttl);
}

int
resume_handoff(const char *session_id, int fd, json_t *id, json_t *params)
{
	struct sockaddr_un	 sun = { .sun_family = AF_UNIX };
	struct resume_hdr	 hdr = { RESUME_MAGIC, 0 };
	char			*msg, reply = 0;
	struct iovec		 iov = { &hdr, sizeof(hdr) };
	json_t			*req;
	size_t			 len;
	int			 us, rc = -1;

	if (socket_path(session_id, sun.sun_path, sizeof(sun.sun_path)) == -1)
		return -1;
	req = json_pack("{s:O,s:s,s:O}", "id", id, "method", "initialize", "params", params);
	msg = req != NULL ? jx_dump(req, &len) : NULL;
	json_decref(req);
	if (msg == NULL || len > RESUME_MAX)
		goto out;
	hdr.len = (uint32_t)len;
	if ((us = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		goto out;
	setsockopt(us, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){ 2, 0 },
	    sizeof(struct timeval));
	if (connect(us, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		close(us);
		goto out;
	}
	if (fdpass_send(us, &iov, 1, &fd, 1, MSG_NOSIGNAL) == sizeof(hdr) &&
	    write(us, msg, len) == (ssize_t)len && read(us, &reply, 1) == 1)
		rc = reply == 'K' ? 0 : reply == 'A' ? -2 : -1;
	close(us);
out:
	free(msg);
	return rc;
}

/* The pid in a socket's owner file; 0 when there is none. */
static pid_t
owner_of(const char *owner)
{
	char	buf[32];
	ssize_t	n;
	long	pid;
	int	fd;

	if ((fd = open(owner, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	pid = strtol(buf, NULL, 10);
	return pid > 0 ? (pid_t)pid : 0;
}

/* gone: a pid known to be dead (the listener has just reaped it). */
static int
owner_alive(pid_t pid, pid_t gone)
{
	if (pid <= 0 || pid == gone)
		return 0;
	return kill(pid, 0) == 0 || errno == EPERM;
}

/* Does anything listen at path?  Only a refused connect says no. */
static int
nobody_listens(const char *path)
{
	struct sockaddr_un	sun = { .sun_family = AF_UNIX };
	int			fd, refused;

	if (strlen(path) >= sizeof(sun.sun_path))
		return 0;
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) == -1)
		return 0;
	refused = connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 &&
	    (errno == ECONNREFUSED || errno == ENOENT);
	close(fd);
	return refused;
}

/*
 * name is "session-HASH" plus suffix: the base (without the suffix) into
 * base, or -1 for any other name (nothing else in the directory is ours).
 */
static int
session_base(const char *name, const char *suffix, char *base, size_t len)
{
	size_t	n = strlen(name), s = strlen(suffix), i;

	if (n != strlen("session-") + 2 * RESUME_NAME_LEN + s ||
	    strncmp(name, "session-", 8) != 0 || strcmp(name + n - s, suffix) != 0)
		return -1;
	for (i = 8; i < n - s; i++)
		if (!isxdigit((unsigned char)name[i]))
			return -1;
	return (size_t)snprintf(base, len, "%.*s", (int)(n - s), name) < len ? 0 : -1;
}

static int
sweep_one(const char *dir, const char *name, pid_t gone)
{
	char	base[64], sock[PATH_MAX], owner[PATH_MAX];
	pid_t	pid;
	int	is_sock;

	is_sock = session_base(name, SOCK_SUFFIX, base, sizeof(base)) == 0;
	if (!is_sock && session_base(name, OWNER_SUFFIX, base, sizeof(base)) == -1)
		return 0;
	if ((size_t)snprintf(sock, sizeof(sock), "%s/%s" SOCK_SUFFIX, dir, base) >= sizeof(sock) ||
	    (size_t)snprintf(owner, sizeof(owner), "%s/%s" OWNER_SUFFIX, dir, base) >= sizeof(owner))
		return 0;
	/* a live owner's files are never touched, not even connected to */
	pid = owner_of(owner);
	if (owner_alive(pid, gone))
		return 0;
	if (is_sock) {
		if (!nobody_listens(sock))
			return 0;
		if (unlink(sock) == -1 && errno != ENOENT) {
			log_warn("unlink %s", sock);
			return 0;
		}
		unlink(owner);
		log_info("removed %s: its instance (pid %ld) is gone", sock, (long)pid);
		return 1;
	}
	/* an owner file alone: its socket was never made, or is already gone */
	if (access(sock, F_OK) == -1 && errno == ENOENT && unlink(owner) == 0)
		return 1;
	return 0;
}

int
resume_sweep(const char *dir, pid_t gone)
{
	struct dirent	*de;
	DIR		*d;
	int		 n = 0;

	if (dir == NULL || (d = opendir(dir)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL)
		n += sweep_one(dir, de->d_name, gone);
	closedir(d);
	return n;
}
