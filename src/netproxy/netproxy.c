/*
 * The registrations of execd-proxy's client (the connection itself is
 * netproxy_line.c).  Requests are short and
 * synchronous (one line out, one line back, at most NP_TIMEOUT_MS); the
 * connection is watched by the event loop only while processes are
 * registered, so that it never keeps execd alive on its own.  When the
 * proxy goes away (restart), the registrations of running processes are
 * restored with their old credentials as soon as it is back.  Every
 * connection starts with the proxy's key, read from SOCKET.key each time:
 * a restarted proxy has a new one.  Lines the proxy sends on its own
 * (decisions, questions) go to netproxy_events.c wherever they are read.
 *
 * Without a sidecar, execd starts an execd-proxy of its own (-e) on a
 * socketpair when the first managed process needs it: nobody else holds
 * that connection, so it needs no key and no path to hide, and the proxy
 * exits when it ends, that is, with this instance, however it ends.
 */
#include "config.h"

#include <sys/queue.h>

#include <errno.h>
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

#define NP_LAUNCH_MS		10000	/* a proxy just started answers its first line within */
#define NP_RETRY_MIN_MS		250
#define NP_RETRY_MAX_MS		5000

static struct {
	struct ev_io		 io;
	struct ev_timer		 retry;
	int			 restoring;
	TAILQ_HEAD(, netproxy_reg) regs;
} np = { .regs = TAILQ_HEAD_INITIALIZER(np.regs) };

static void	watch(void);
static int	ensure_connected(char *, size_t);
static int	restore_all(void);

int
netproxy_init(const char *control_path)
{
	if (control_path == NULL)
		return 0;
	if ((npc.path = strdup(control_path)) == NULL) {
		log_warn("netproxy");
		return -1;
	}
	ev_timer_init(&np.retry, NULL, NULL);
	return 0;
}

/*
 * A sidecar's auth reply names its CA key, which must be hidden before a
 * sandbox is planned: connect then, at the first sandboxed start, rather
 * than at start-up (which would put a round trip before every initialize
 * answer).  Not there yet: tried again at the next sandboxed start.
 */
void
netproxy_before_sandbox(void)
{
	static int	named;
	char		err[256];

	if (named || npc.path == NULL || npc.launch != NULL || !np_key_wanted())
		return;
	if (ensure_connected(err, sizeof(err)) == -1) {
		log_info("%s", err);
		return;
	}
	named = 1;
}

int
netproxy_init_embedded(pid_t (*launch)(int fd))
{
	if ((npc.path = strdup("embedded execd-proxy")) == NULL) {
		log_warn("netproxy");
		return -1;
	}
	npc.launch = launch;
	ev_timer_init(&np.retry, NULL, NULL);
	return 0;
}

int
netproxy_enabled(void)
{
	return npc.path != NULL;
}

int
netproxy_embedded(void)
{
	return npc.launch != NULL;
}

static int	want_decisions, want_questions;

void
netproxy_want(int decisions, int questions)
{
	want_decisions = decisions;
	want_questions = questions;
}

struct netproxy_reg *
netproxy_find_credential(const char *id)
{
	struct netproxy_reg	*r;

	TAILQ_FOREACH(r, &np.regs, entry)
		if (strcmp(r->id, id) == 0)
			return r;
	return NULL;
}

static void
disconnect(const char *why)
{
	if (npc.fd == -1)
		return;
	if (np.io.active)
		ev_io_del(&np.io);
	close(npc.fd);
	npc.fd = -1;
	buf_reset(&npc.in);
	if (!TAILQ_EMPTY(&np.regs))
		log_warnx("execd-proxy control connection lost (%s); restoring registrations "
		    "when it is back", why);
	watch();
}

/* Read what is there: the proxy's own lines, late replies nobody waits for.  -1: gone. */
static int
drain(void)
{
	ssize_t	 n;
	uint8_t	*nl;
	size_t	 len;
	json_t	*o;

	for (;;) {
		if (buf_reserve(&npc.in, 4096) == -1)
			return -1;
		n = read(npc.fd, npc.in.data + npc.in.len, npc.in.cap - npc.in.len);
		if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR))
			return -1;
		if (n == -1)
			break;
		npc.in.len += (size_t)n;
	}
	while (buf_avail(&npc.in) > 0 &&
	    (nl = memchr(buf_head(&npc.in), '\n', buf_avail(&npc.in))) != NULL) {
		len = (size_t)(nl - buf_head(&npc.in));
		o = json_loadb((const char *)buf_head(&npc.in), len, 0, NULL);
		buf_consume(&npc.in, len + 1);
		np_dispatch_event(o);
		json_decref(o);
		if (npc.fd == -1)
			return 0;
	}
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

	if (npc.fd != -1 || TAILQ_EMPTY(&np.regs))
		return;
	if (np_connect(err, sizeof(err)) == -1) {
		npc.retry_ms = npc.retry_ms ? npc.retry_ms * 2 : NP_RETRY_MIN_MS;
		if (npc.retry_ms > NP_RETRY_MAX_MS)
			npc.retry_ms = NP_RETRY_MAX_MS;
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

	if (npc.path == NULL)
		return;		/* after netproxy_shutdown() */
	if (npc.fd != -1) {
		ev_timer_stop(&np.retry);
		if (want && !np.io.active)
			ev_io_add(&np.io, npc.fd, EPOLLIN, readable, NULL);
		else if (!want && np.io.active)
			ev_io_del(&np.io);
		return;
	}
	if (want && !ev_timer_armed(&np.retry)) {
		ev_timer_init(&np.retry, retry_now, NULL);
		ev_timer_start(&np.retry, npc.retry_ms ? npc.retry_ms : NP_RETRY_MIN_MS);
	} else if (!want)
		ev_timer_stop(&np.retry);
}

static int
ensure_connected(char *err, size_t errlen)
{
	if (npc.fd != -1 && drain() == -1)
		disconnect("closed by execd-proxy");
	if (npc.fd != -1)
		return 0;
	if (np_connect(err, errlen) == -1)
		return -1;
	if (!np.restoring && restore_all() == -1 && npc.fd == -1) {
		snprintf(err, errlen, "execd-proxy at %s closed the connection", npc.path);
		return -1;
	}
	return 0;
}

/* One request, its reply; req is stolen.  NULL with err on failure. */
static json_t *
request(json_t *req, char *err, size_t errlen)
{
	uint64_t	 deadline;
	long long	 id = ++npc.next_id;
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
		deadline = ev_now() + NP_TIMEOUT_MS;
		/* a proxy we just started may still be setting up */
		if (npc.launch != NULL && npc.launched_at + NP_LAUNCH_MS > deadline)
			deadline = npc.launched_at + NP_LAUNCH_MS;
		if (np_send_line(line, len + 1, deadline) == 0 &&
		    (reply = np_recv_reply(id, deadline)) != NULL)
			break;
		snprintf(err, errlen, "execd-proxy at %s did not answer", npc.path);
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
	json_decref(r->masked);
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
	np_key_seen(json_string_value(json_object_get(reply, "ca_key")));
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
		if (restore_one(r) == -1 || npc.fd == -1)
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
	return netproxy_register_env(process_id, start_params, NULL, out, err, errlen);
}

int
netproxy_register_env(const char *process_id, json_t *start_params, json_t *env,
    struct netproxy_reg **out, char *err, size_t errlen)
{
	json_t	*req;
	int	 rv;

	*out = NULL;
	if (npc.path == NULL) {
		snprintf(err, errlen, "no execd-proxy configured");
		return -1;
	}
	if ((rv = netproxy_build_request(process_id, start_params, &req, err, errlen)) != 0)
		return rv;
	rv = netproxy_register_req(req, start_params, env, out, err, errlen);
	json_decref(req);
	return rv;
}

int
netproxy_register_req(json_t *req0, json_t *start_params, json_t *env,
    struct netproxy_reg **out, char *err, size_t errlen)
{
	struct netproxy_reg	*r;
	json_t			*req, *reply, *brokered, *masked;
	json_int_t		 ask_ms;

	*out = NULL;
	if (npc.path == NULL) {
		snprintf(err, errlen, "no execd-proxy configured");
		return -1;
	}
	/* ours to change (events, brokered, the id the reply is matched by) */
	if ((req = json_deep_copy(req0)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* nobody above to take them: the proxy need not send them */
	if (!want_decisions)
		json_object_del(req, "events");
	if (!want_questions)
		json_object_del(req, "ask_timeout_ms");
	ask_ms = json_integer_value(json_object_get(req, "ask_timeout_ms"));
	if (netproxy_mask_plan(start_params, env, &brokered, &masked) == -1 ||
	    (brokered != NULL && json_object_set_new(req, "brokered", brokered) == -1)) {
		json_decref(masked);
		json_decref(req);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL || (r->req = json_deep_copy(req)) == NULL) {
		free(r);
		json_decref(masked);
		json_decref(req);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	r->masked = masked;
	r->process_id = json_string_value(json_object_get(json_object_get(r->req, "tags"),
	    "process_id"));
	r->ask_ms = (unsigned)ask_ms;
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
	/* a proxy that does not inspect TLS cannot put the real values back: no dummies */
	if (r->masked != NULL && r->ca_bundle == NULL &&
	    netproxy_mask_needs_tls(json_object_get(r->req, "brokered"))) {
		log_info("process %s: execd-proxy does not inspect TLS; credentials unmasked",
		    r->process_id);
		json_decref(r->masked);
		r->masked = NULL;
	}
	TAILQ_INSERT_TAIL(&np.regs, r, entry);
	watch();
	*out = r;
	return 0;
}

/*
 * Fire and forget (a late reply is skipped by id).  Never disconnects:
 * this may run while a reply is being read; a dead connection shows
 * itself on the next read.
 */
int
netproxy_send_oneway(json_t *req)
{
	char	*line;
	size_t	 len;
	int	 rc = -1;

	if (npc.fd != -1 && json_object_set_new(req, "id", json_integer(++npc.next_id)) == 0 &&
	    (line = jx_dump(req, &len)) != NULL) {
		line[len] = '\n';
		rc = np_send_line(line, len + 1, ev_now() + NP_TIMEOUT_MS);
		free(line);
	}
	json_decref(req);
	return rc;
}

void
netproxy_unregister(struct netproxy_reg *r)
{
	json_t	*req;

	if (r == NULL)
		return;
	TAILQ_REMOVE(&np.regs, r, entry);
	if (npc.fd != -1 && (req = json_pack("{s:s, s:s}", "op", "unregister",
	    "credential", r->id)) != NULL && netproxy_send_oneway(req) == -1)
		log_info("execd-proxy: unregistering %s failed", r->id);
	reg_free(r);
	watch();
}

void
netproxy_shutdown(void)
{
	if (npc.fd != -1) {
		if (np.io.active)
			ev_io_del(&np.io);
		close(npc.fd);
		npc.fd = -1;
	}
	ev_timer_stop(&np.retry);
	buf_free(&npc.in);
	free(npc.path);
	npc.path = NULL;
}
