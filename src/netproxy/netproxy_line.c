/*
 * The control connection itself: reaching a sidecar's socket (with the
 * key read from SOCKET.key at every connect) or starting our own proxy on
 * a socketpair, and one line each way with a deadline.  The proxy's own
 * lines (decisions, questions) met while a reply is awaited go to
 * netproxy_events.c.  netproxy.c keeps the registrations on top of it.
 */
#include "config.h"

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

#define NP_KEY_MAX		128	/* the proxy writes 64 hex digits */

struct np_conn	npc = { .fd = -1 };

/* The proxy's current key, from the file beside its socket. */
static int
read_key(char *key, size_t keylen, char *err, size_t errlen)
{
	char	path[PATH_MAX];
	ssize_t	n;
	int	fd;

	if ((size_t)snprintf(path, sizeof(path), "%s.key", npc.path) >= sizeof(path) ||
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
	long long	 id = ++npc.next_id;
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
	if (np_send_line(line, len + 1, deadline) == -1 ||
	    (reply = np_recv_reply(id, deadline)) == NULL)
		snprintf(err, errlen, "execd-proxy at %s did not answer", npc.path);
	else if (!json_is_true(json_object_get(reply, "ok"))) {
		msg = json_string_value(json_object_get(reply, "error"));
		snprintf(err, errlen, "execd-proxy at %s refused us: %s", npc.path,
		    msg ? msg : "no reason");
	} else {
		np_key_seen(json_string_value(json_object_get(reply, "ca_key")));
		rc = 0;
	}
out:
	if (line != NULL) {
		explicit_bzero(line, len);
		free(line);
	}
	json_decref(req);
	json_decref(reply);
	return rc;
}

/* Our own proxy, on a fresh socketpair; the old one (if any) has gone. */
static int
launch_now(char *err, size_t errlen)
{
	int	sv[2];
	pid_t	pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1) {
		snprintf(err, errlen, "execd-proxy: socketpair: %s", strerror(errno));
		return -1;
	}
	pid = npc.launch(sv[1]);
	close(sv[1]);
	if (pid == -1 || fcntl(sv[0], F_SETFL, O_NONBLOCK) == -1) {
		snprintf(err, errlen, "cannot start execd-proxy");
		close(sv[0]);
		return -1;
	}
	log_info("started execd-proxy, pid %ld", (long)pid);
	npc.fd = sv[0];
	npc.launched_at = ev_now();
	npc.retry_ms = 0;
	npc.gen++;
	return 0;
}

int
np_connect(char *err, size_t errlen)
{
	struct sockaddr_un	sun = { .sun_family = AF_UNIX };
	int			fd;

	if (npc.launch != NULL)
		return launch_now(err, errlen);
	if (strlen(npc.path) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "execd-proxy control socket path too long: %s", npc.path);
		return -1;
	}
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", npc.path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1) {
		snprintf(err, errlen, "execd-proxy: socket: %s", strerror(errno));
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		snprintf(err, errlen, "cannot reach execd-proxy at %s: %s", npc.path,
		    strerror(errno));
		close(fd);
		return -1;
	}
	npc.fd = fd;
	if (authenticate(err, errlen) == -1) {
		close(npc.fd);
		npc.fd = -1;
		buf_reset(&npc.in);
		return -1;
	}
	npc.retry_ms = 0;
	npc.gen++;
	return 0;
}

static int
wait_fd(short events, uint64_t deadline)
{
	struct pollfd	pfd = { .fd = npc.fd, .events = events };
	uint64_t	now = ev_now();
	int		r;

	if (now >= deadline)
		return 0;
	r = poll(&pfd, 1, (int)(deadline - now));
	return r == -1 && errno == EINTR ? 1 : r;
}

int
np_send_line(const char *s, size_t len, uint64_t deadline)
{
	ssize_t	n;

	while (len > 0) {
		n = send(npc.fd, s, len, MSG_NOSIGNAL | MSG_DONTWAIT);
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
json_t *
np_recv_reply(long long id, uint64_t deadline)
{
	uint8_t		*nl;
	json_t		*o, *rid;
	ssize_t		 n;
	size_t		 len;

	for (;;) {
		while (buf_avail(&npc.in) > 0 &&
		    (nl = memchr(buf_head(&npc.in), '\n', buf_avail(&npc.in))) != NULL) {
			len = (size_t)(nl - buf_head(&npc.in));
			o = json_loadb((const char *)buf_head(&npc.in), len, 0, NULL);
			buf_consume(&npc.in, len + 1);
			rid = json_object_get(o, "id");
			if (!np_dispatch_event(o) && json_is_integer(rid) &&
			    json_integer_value(rid) == id)
				return o;
			json_decref(o);		/* an event, or a late reply to a one-way request */
		}
		if (buf_avail(&npc.in) > NP_LINE_MAX || buf_reserve(&npc.in, 4096) == -1)
			return NULL;
		n = read(npc.fd, npc.in.data + npc.in.len, npc.in.cap - npc.in.len);
		if (n > 0) {
			npc.in.len += (size_t)n;
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EINTR) || wait_fd(POLLIN, deadline) <= 0)
			return NULL;
	}
}

/* A line that is not a reply is the proxy's own: hand it on.  1 if it was. */
int
np_dispatch_event(json_t *o)
{
	if (!json_is_object(o) || json_object_get(o, "event") == NULL)
		return 0;
	if (npc.on_event != NULL)
		npc.on_event(json_incref(o));
	return 1;
}

static void	(*key_hider)(const char *);
static char	 *key_hidden;

void
netproxy_set_key_hider(void (*hide)(const char *))
{
	key_hider = hide;
}

/* The proxy's CA key, hidden from sandboxes once (the list only grows). */
void
np_key_seen(const char *path)
{
	if (path == NULL || *path != '/' || key_hider == NULL ||
	    (key_hidden != NULL && strcmp(key_hidden, path) == 0))
		return;
	free(key_hidden);
	if ((key_hidden = strdup(path)) == NULL) {
		log_warn("execd-proxy CA key %s", path);
		return;
	}
	key_hider(path);
}

int
np_key_wanted(void)
{
	return key_hider != NULL;
}
