/*
 * The control-socket client of execd-proxy.  Requests are short and
 * synchronous (one line out, one line back, at most NP_TIMEOUT_MS); the
 * connection is watched by the event loop only while processes are
 * registered, so that it never keeps execd alive on its own.  When the
 * proxy goes away (restart), the registrations of running processes are
 * restored with their old credentials as soon as it is back.  Every
 * connection starts with the proxy's key, read from SOCKET.key each time:
 * a restarted proxy has a new one.
 */
#include "config.h"

#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "buf.h"
#include "evloop.h"
#include "jsonx.h"
#include "log.h"
#include "netproxy/netproxy.h"
#include "netproxy/netproxy_int.h"

#define NP_TIMEOUT_MS		2000
#define NP_RETRY_MIN_MS		250
#define NP_RETRY_MAX_MS		5000
#define NP_LINE_MAX		(64 * 1024)
#define NP_KEY_MAX		128	/* the proxy writes 64 hex digits */

static struct {
	char			*path;
	int			 fd;
	struct ev_io		 io;
	struct ev_timer		 retry;
	unsigned		 retry_ms;
	struct buf		 in;
	long long		 next_id;
	int			 restoring;
	TAILQ_HEAD(, netproxy_reg) regs;
} np = { .fd = -1, .regs = TAILQ_HEAD_INITIALIZER(np.regs) };

static void	watch(void);
static int	restore_all(void);
static int	send_line(const char *, size_t, uint64_t);
static json_t	*recv_reply(long long, uint64_t);

int
netproxy_init(const char *control_path)
{
	if (control_path == NULL)
		return 0;
	if ((np.path = strdup(control_path)) == NULL) {
		log_warn("netproxy");
		return -1;
	}
	ev_timer_init(&np.retry, NULL, NULL);
	return 0;
}

int
netproxy_enabled(void)
{
	return np.path != NULL;
}

static void
disconnect(const char *why)
{
	if (np.fd == -1)
		return;
	if (np.io.active)
		ev_io_del(&np.io);
	close(np.fd);
	np.fd = -1;
	buf_reset(&np.in);
	if (!TAILQ_EMPTY(&np.regs))
		log_warnx("execd-proxy control connection lost (%s); restoring registrations "
		    "when it is back", why);
	watch();
}

/* The proxy's current key, from the file beside its socket. */
static int
read_key(char *key, size_t keylen, char *err, size_t errlen)
{
	char	path[PATH_MAX];
	ssize_t	n;
	int	fd;

	if ((size_t)snprintf(path, sizeof(path), "%s.key", np.path) >= sizeof(path) ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "cannot read the execd-proxy key %s: %s", path,
		    strerror(errno));
		return -1;
	}
	n = read(fd, key, keylen - 1);
	close(fd);
	if (n == -1) {
		snprintf(err, errlen, "cannot read the execd-proxy key %s: %s", path,
		    strerror(errno));
		return -1;
	}
	key[n] = '\0';
	key[strcspn(key, "\r\n")] = '\0';
	if (*key == '\0') {
		snprintf(err, errlen, "the execd-proxy key %s is empty", path);
		return -1;
	}
	return 0;
}

/* The first request on a new connection: prove we may register. */
static int
authenticate(char *err, size_t errlen)
{
	uint64_t	 deadline = ev_now() + NP_TIMEOUT_MS;
	long long	 id = ++np.next_id;
	char		 key[NP_KEY_MAX], *line = NULL;
	const char	*msg;
	json_t		*req, *reply = NULL;
	size_t		 len;
	int		 rc = -1;

	if (read_key(key, sizeof(key), err, errlen) == -1)
		return -1;
	req = json_pack("{s:s, s:s, s:I}", "op", "auth", "key", key, "id", (json_int_t)id);
	explicit_bzero(key, sizeof(key));
	if (req == NULL || (line = jx_dump(req, &len)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	line[len] = '\n';
	if (send_line(line, len + 1, deadline) == -1 ||
	    (reply = recv_reply(id, deadline)) == NULL)
		snprintf(err, errlen, "execd-proxy at %s did not answer", np.path);
	else if (!json_is_true(json_object_get(reply, "ok"))) {
		msg = json_string_value(json_object_get(reply, "error"));
		snprintf(err, errlen, "execd-proxy at %s refused us: %s", np.path,
		    msg ? msg : "no reason");
	} else
		rc = 0;
out:
	if (line != NULL) {
		explicit_bzero(line, len);
		free(line);
	}
	json_decref(req);
	json_decref(reply);
	return rc;
}

static int
connect_now(char *err, size_t errlen)
{
	struct sockaddr_un	sun = { .sun_family = AF_UNIX };
	int			fd;

	if (strlen(np.path) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "execd-proxy control socket path too long: %s", np.path);
		return -1;
	}
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", np.path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1) {
		snprintf(err, errlen, "execd-proxy: socket: %s", strerror(errno));
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		snprintf(err, errlen, "cannot reach execd-proxy at %s: %s", np.path,
		    strerror(errno));
		close(fd);
		return -1;
	}
	np.fd = fd;
	if (authenticate(err, errlen) == -1) {
		close(np.fd);
		np.fd = -1;
		buf_reset(&np.in);
		return -1;
	}
	np.retry_ms = 0;
	return 0;
}

/* Read what is there; lines are late replies nobody waits for.  -1: gone. */
static int
drain(void)
{
	ssize_t	 n;
	uint8_t	*nl;

	for (;;) {
		if (buf_reserve(&np.in, 4096) == -1)
			return -1;
		n = read(np.fd, np.in.data + np.in.len, np.in.cap - np.in.len);
		if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR))
			return -1;
		if (n == -1)
			break;
		np.in.len += (size_t)n;
	}
	while (buf_avail(&np.in) > 0 &&
	    (nl = memchr(buf_head(&np.in), '\n', buf_avail(&np.in))) != NULL)
		buf_consume(&np.in, (size_t)(nl - buf_head(&np.in)) + 1);
	return 0;
}

static void
readable(struct ev_io *io, uint32_t events, void *arg)
{
	if (drain() == -1)
		disconnect("closed by execd-proxy");
}

static void
retry_now(struct ev_timer *t, void *arg)
{
	char	err[256];

	if (np.fd != -1 || TAILQ_EMPTY(&np.regs))
		return;
	if (connect_now(err, sizeof(err)) == -1) {
		np.retry_ms = np.retry_ms ? np.retry_ms * 2 : NP_RETRY_MIN_MS;
		if (np.retry_ms > NP_RETRY_MAX_MS)
			np.retry_ms = NP_RETRY_MAX_MS;
		log_debug("%s", err);
		watch();
		return;
	}
	restore_all();
	watch();
}

/*
 * Watch the connection (or retry it) only while processes are registered:
 * with none, execd's loop must be free to end.
 */
static void
watch(void)
{
	int	want = !TAILQ_EMPTY(&np.regs);

	if (np.path == NULL)
		return;		/* after netproxy_shutdown() */
	if (np.fd != -1) {
		ev_timer_stop(&np.retry);
		if (want && !np.io.active)
			ev_io_add(&np.io, np.fd, EPOLLIN, readable, NULL);
		else if (!want && np.io.active)
			ev_io_del(&np.io);
		return;
	}
	if (want && !ev_timer_armed(&np.retry)) {
		ev_timer_init(&np.retry, retry_now, NULL);
		ev_timer_start(&np.retry, np.retry_ms ? np.retry_ms : NP_RETRY_MIN_MS);
	} else if (!want)
		ev_timer_stop(&np.retry);
}

static int
ensure_connected(char *err, size_t errlen)
{
	if (np.fd != -1 && drain() == -1)
		disconnect("closed by execd-proxy");
	if (np.fd != -1)
		return 0;
	if (connect_now(err, errlen) == -1)
		return -1;
	if (!np.restoring && restore_all() == -1 && np.fd == -1) {
		snprintf(err, errlen, "execd-proxy at %s closed the connection", np.path);
		return -1;
	}
	return 0;
}

static int
wait_fd(short events, uint64_t deadline)
{
	struct pollfd	pfd = { .fd = np.fd, .events = events };
	uint64_t	now = ev_now();
	int		r;

	if (now >= deadline)
		return 0;
	r = poll(&pfd, 1, (int)(deadline - now));
	return r == -1 && errno == EINTR ? 1 : r;
}

static int
send_line(const char *s, size_t len, uint64_t deadline)
{
	ssize_t	n;

	while (len > 0) {
		n = send(np.fd, s, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			s += n;
			len -= (size_t)n;
			continue;
		}
		if (n == -1 && (errno == EAGAIN || errno == EINTR) && wait_fd(POLLOUT, deadline) > 0)
			continue;
		return -1;
	}
	return 0;
}

/* The reply line whose id is id, or NULL (timeout, EOF). */
static json_t *
recv_reply(long long id, uint64_t deadline)
{
	uint8_t		*nl;
	json_t		*o, *rid;
	ssize_t		 n;
	size_t		 len;

	for (;;) {
		while (buf_avail(&np.in) > 0 &&
		    (nl = memchr(buf_head(&np.in), '\n', buf_avail(&np.in))) != NULL) {
			len = (size_t)(nl - buf_head(&np.in));
			o = json_loadb((const char *)buf_head(&np.in), len, 0, NULL);
			buf_consume(&np.in, len + 1);
			rid = json_object_get(o, "id");
			if (json_is_integer(rid) && json_integer_value(rid) == id)
				return o;
			json_decref(o);		/* a late reply to an unregister */
		}
		if (buf_avail(&np.in) > NP_LINE_MAX || buf_reserve(&np.in, 4096) == -1)
			return NULL;
		n = read(np.fd, np.in.data + np.in.len, np.in.cap - np.in.len);
		if (n > 0) {
			np.in.len += (size_t)n;
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EINTR) || wait_fd(POLLIN, deadline) <= 0)
			return NULL;
	}
}

/* One request, its reply; req is stolen.  NULL with err on failure. */
static json_t *
request(json_t *req, char *err, size_t errlen)
{
	uint64_t	 deadline = ev_now() + NP_TIMEOUT_MS;
	long long	 id = ++np.next_id;
	json_t		*reply = NULL;
	char		*line = NULL;
	size_t		 len;
	int		 tries;

	json_object_set_new(req, "id", json_integer(id));
	if ((line = jx_dump(req, &len)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	line[len] = '\n';	/* jx_dump's NUL: the line ends here */
	/* once more after a reconnect: the proxy may just have restarted */
	for (tries = 0; tries < 2 && reply == NULL; tries++) {
		if (ensure_connected(err, errlen) == -1)
			break;
		if (send_line(line, len + 1, deadline) == 0 &&
		    (reply = recv_reply(id, deadline)) != NULL)
			break;
		snprintf(err, errlen, "execd-proxy at %s did not answer", np.path);
		disconnect("no answer");
	}
out:
	free(line);
	json_decref(req);
	return reply;
}

static void
reg_free(struct netproxy_reg *r)
{
	json_decref(r->req);
	free(r->ca_bundle);
	free(r);
}

/* Take the proxy's answer into r; -1 with err when it refused. */
static int
take_reply(struct netproxy_reg *r, json_t *reply, char *err, size_t errlen)
{
	const char	*id, *secret, *http, *socks, *ca, *msg;
	json_t		*cred = json_object_get(reply, "credentials");

	if (!json_is_true(json_object_get(reply, "ok"))) {
		msg = json_string_value(json_object_get(reply, "error"));
		snprintf(err, errlen, "%s", msg ? msg : "refused");
		return -1;
	}
	id = json_string_value(json_object_get(cred, "id"));
	secret = json_string_value(json_object_get(cred, "secret"));
	http = json_string_value(json_object_get(reply, "http"));
	socks = json_string_value(json_object_get(reply, "socks5"));
	ca = json_string_value(json_object_get(reply, "ca_bundle"));
	if (id == NULL || secret == NULL || strlen(id) >= sizeof(r->id) ||
	    strlen(secret) >= sizeof(r->secret) || (http == NULL && socks == NULL)) {
		snprintf(err, errlen, "malformed reply from execd-proxy");
		return -1;
	}
	snprintf(r->id, sizeof(r->id), "%s", id);
	snprintf(r->secret, sizeof(r->secret), "%s", secret);
	snprintf(r->http, sizeof(r->http), "%s", http ? http : "");
	snprintf(r->socks, sizeof(r->socks), "%s", socks ? socks : "");
	r->allow_local = json_is_true(json_object_get(reply, "allow_local"));
	free(r->ca_bundle);
	r->ca_bundle = ca ? strdup(ca) : NULL;
	return 0;
}

/* A restarted proxy gets the running processes back, with their credentials. */
static int
restore_one(struct netproxy_reg *r)
{
	json_t	*req, *reply;
	char	 err[256], http[sizeof(r->http)], socks[sizeof(r->socks)];

	if ((req = json_deep_copy(r->req)) == NULL)
		return -1;
	json_object_set_new(req, "credentials", json_pack("{s:s, s:s}", "id", r->id,
	    "secret", r->secret));
	if ((reply = request(req, err, sizeof(err))) == NULL)
		return -1;
	memcpy(http, r->http, sizeof(http));
	memcpy(socks, r->socks, sizeof(socks));
	if (take_reply(r, reply, err, sizeof(err)) == -1)
		log_warnx("execd-proxy: cannot restore process %s: %s", r->process_id, err);
	else if (strcmp(http, r->http) != 0 || strcmp(socks, r->socks) != 0)
		log_warnx("execd-proxy: listens elsewhere since its restart; process %s keeps "
		    "the old proxy address and has no network", r->process_id);
	json_decref(reply);
	return 0;
}

static int
restore_all(void)
{
	struct netproxy_reg	*r;
	size_t			 n = 0;

	np.restoring = 1;
	TAILQ_FOREACH(r, &np.regs, entry) {
		if (restore_one(r) == -1 || np.fd == -1)
			break;
		n++;
	}
	np.restoring = 0;
	if (n > 0)
		log_notice("execd-proxy: %zu running processes registered again", n);
	return r == NULL ? 0 : -1;
}

int
netproxy_register(const char *process_id, json_t *start_params,
    struct netproxy_reg **out, char *err, size_t errlen)
{
	struct netproxy_reg	*r;
	json_t			*req, *reply;
	int			 rv;

	*out = NULL;
	if (np.path == NULL) {
		snprintf(err, errlen, "no execd-proxy configured");
		return -1;
	}
	if ((rv = netproxy_build_request(process_id, start_params, &req, err, errlen)) != 0)
		return rv;
	if ((r = calloc(1, sizeof(*r))) == NULL || (r->req = json_deep_copy(req)) == NULL) {
		free(r);
		json_decref(req);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	r->process_id = json_string_value(json_object_get(json_object_get(r->req, "tags"),
	    "process_id"));
	if ((reply = request(req, err, errlen)) == NULL) {
		reg_free(r);
		return -1;
	}
	if (take_reply(r, reply, err, errlen) == -1) {
		json_decref(reply);
		reg_free(r);
		return netproxy_refusal(err, errlen);
	}
	json_decref(reply);
	TAILQ_INSERT_TAIL(&np.regs, r, entry);
	watch();
	*out = r;
	return 0;
}

void
netproxy_unregister(struct netproxy_reg *r)
{
	char	*line;
	size_t	 len;
	json_t	*req;

	if (r == NULL)
		return;
	TAILQ_REMOVE(&np.regs, r, entry);
	/* fire and forget: a late reply is skipped by id */
	if (np.fd != -1 && (req = json_pack("{s:s, s:s, s:I}", "op", "unregister",
	    "credential", r->id, "id", (json_int_t)++np.next_id)) != NULL) {
		if ((line = jx_dump(req, &len)) != NULL) {
			line[len] = '\n';
			if (send_line(line, len + 1, ev_now() + NP_TIMEOUT_MS) == -1)
				disconnect("write failed");
			free(line);
		}
		json_decref(req);
	}
	reg_free(r);
	watch();
}

void
netproxy_shutdown(void)
{
	if (np.fd != -1) {
		if (np.io.active)
			ev_io_del(&np.io);
		close(np.fd);
		np.fd = -1;
	}
	ev_timer_stop(&np.retry);
	buf_free(&np.in);
	free(np.path);
	np.path = NULL;
}
