/*
 * The control socket: a Unix stream socket (mode 0600) on which execd
 * registers the processes it starts.  Only the proxy's own user or root
 * may talk to it (SO_PEERCRED), and sharing the uid is not enough: the
 * first request must be "auth" with the key the proxy wrote beside the
 * socket at start, which a sandboxed command cannot see, and a peer seen
 * in another pid namespace (a sandbox's) is refused outright.  One JSON
 * object per line each way; see execd-proxy(8).  Registrations belong to
 * the connection that made them and end with it, so a vanished execd
 * leaves no working credentials.
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
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "fdio.h"
#include "jsonx.h"
#include "log.h"
#include "peerns.h"
#include "front/front.h"
#include "front/control_int.h"
#include "relay/relay.h"
#include "policy/policy.h"
#include "tls/tls.h"

#define CTL_LINE_MAX	(256 * 1024)
#define CTL_TAGS_MAX	(8 * 1024)
#define CTL_KEY_BYTES	32

static TAILQ_HEAD(, ctl_client)	clients = TAILQ_HEAD_INITIALIZER(clients);
static TAILQ_HEAD(, ctl_client)	dead_clients = TAILQ_HEAD_INITIALIZER(dead_clients);
static int			ctl_fd = -1;
static struct ev_io		ctl_io;
static struct ev_timer		ctl_reaper;
static char			ctl_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static struct proxy_env		*env;
static char			ctl_key_path[sizeof(ctl_path) + sizeof(".key")];
static char			ctl_key[2 * CTL_KEY_BYTES + 1];
static void			(*adopted_gone)(void);

static void
reap(struct ev_timer *t, void *arg)
{
	struct ctl_client *cl;

	while ((cl = TAILQ_FIRST(&dead_clients)) != NULL) {
		TAILQ_REMOVE(&dead_clients, cl, entry);
		free(cl);
	}
}

/* Its connections first, so they can still be audited with its tags. */
static void
drop_reg(struct reg *r)
{
	conn_close_reg(r);
	reg_destroy(r);
}

static void
client_close(struct ctl_client *cl, const char *why)
{
	struct reg	*r;
	size_t		 n = 0;

	if (cl->dead)
		return;
	while ((r = TAILQ_FIRST(&cl->regs)) != NULL) {
		TAILQ_REMOVE(&cl->regs, r, owner_entry);
		drop_reg(r);
		n++;
	}
	log_notice("control: client pid %d %s; %zu registrations dropped", (int)cl->pid,
	    why, n);
	if (cl->io.active)
		ev_io_del(&cl->io);
	close(cl->fd);
	buf_free(&cl->in);
	buf_free(&cl->out);
	cl->dead = 1;
	TAILQ_REMOVE(&clients, cl, entry);
	TAILQ_INSERT_TAIL(&dead_clients, cl, entry);
	ev_timer_start(&ctl_reaper, 0);
	if (cl->adopted && adopted_gone != NULL)
		adopted_gone();
}

/* A reply; a client so far behind that it does not fit is gone. */
static void
send_json(struct ctl_client *cl, json_t *o)
{
	if (ctl_queue(cl, o, CTL_OUT_MAX) == -1)
		client_close(cl, "stalled (reply queue full)");
}

static int
send_error(struct ctl_client *cl, json_t *id, const char *msg)
{
	send_json(cl, json_pack("{s:O?, s:b, s:s}", "id", id, "ok", 0, "error", msg));
	return -1;
}

static json_t *
listener_addr(const struct listener *l)
{
	return l->fd != -1 ? json_string(l->name) : json_null();
}

/*
 * The bundle a process's CA variables should name: ours when its HTTPS is
 * inspected (limited mode), else the configured one, else ours when some
 * hosts are inspected, else none: its CA variables stay its own.
 */
static const char *
ca_bundle_for(const struct proxy_conf *conf, const struct policy *pol,
    const struct broker *broker)
{
	int	inspecting = tls_ready() && conf->inspect;

	if (inspecting && (policy_limited(&conf->policy) || (pol != NULL &&
	    policy_limited(pol)) || broker_has_https(broker)))
		return tls_bundle_path();
	if (conf->ca_bundle != NULL)
		return conf->ca_bundle;
	if (inspecting && conf->ninspect_hosts > 0)
		return tls_bundle_path();
	return NULL;
}

static int
op_register(struct ctl_client *cl, json_t *req, json_t *id)
{
	json_t		*tags, *pj, *cred, *o, *bj;
	struct policy	*pol = NULL;
	struct reg	*r;
	const char	*want_id = NULL, *want_secret = NULL, *bundle;
	char		 err[256], *dump;
	size_t		 len;
	int		 local, socks, events;
	unsigned	 ask_ms;

	tags = json_object_get(req, "tags");
	if (tags != NULL && !json_is_object(tags) && !json_is_null(tags))
		return send_error(cl, id, "tags must be an object");
	if (tags != NULL && json_is_object(tags)) {
		if ((dump = jx_dump(tags, &len)) == NULL || len > CTL_TAGS_MAX) {
			free(dump);
			return send_error(cl, id, "tags too large");
		}
		free(dump);
	} else
		tags = NULL;
	if (ctl_reg_options(req, &events, &ask_ms, err, sizeof(err)) == -1)
		return send_error(cl, id, err);
	if ((pj = json_object_get(req, "policy")) != NULL && !json_is_null(pj) &&
	    (pol = policy_from_json(pj, err, sizeof(err))) == NULL)
		return send_error(cl, id, err);
	if ((cred = json_object_get(req, "credentials")) != NULL && !json_is_null(cred)) {
		want_id = json_string_value(json_object_get(cred, "id"));
		want_secret = json_string_value(json_object_get(cred, "secret"));
		if (want_id == NULL || want_secret == NULL) {
			policy_free(pol);
			return send_error(cl, id, "credentials need id and secret strings");
		}
	}
	if ((r = reg_create(cl, tags, pol, want_id, want_secret, err, sizeof(err))) == NULL) {
		policy_free(pol);
		return send_error(cl, id, err);
	}
	if ((bj = json_object_get(req, "brokered")) != NULL && !json_is_null(bj) &&
	    (r->broker = broker_from_json(bj, err, sizeof(err))) == NULL) {
		reg_destroy(r);
		return send_error(cl, id, err);
	}
	TAILQ_INSERT_TAIL(&cl->regs, r, owner_entry);
	r->events = events;
	r->ask_ms = ask_ms;
	local = env->conf->policy.allow_local && (pol == NULL || pol->allow_local);
	socks = env->socks->fd != -1 && env->conf->policy.socks5 &&
	    (pol == NULL || pol->socks5);
	bundle = ca_bundle_for(env->conf, pol, r->broker);
	o = json_pack("{s:O?, s:b, s:{s:s, s:s}, s:o, s:o, s:b, s:b, s:s?, s:s?}", "id", id,
	    "ok", 1, "credentials", "id", r->id, "secret", r->secret,
	    "http", listener_addr(env->http),
	    "socks5", socks ? listener_addr(env->socks) : json_null(),
	    "allow_local", local, "socks5_enabled", socks, "ca_bundle", bundle,
	    "ca_key", bundle != NULL && bundle == tls_bundle_path() ? tls_key_path() : NULL);
	log_info("control: registered %s%s", r->id, want_id ? " (restored)" : "");
	send_json(cl, o);
	return 0;
}

static int
op_unregister(struct ctl_client *cl, json_t *req, json_t *id)
{
	const char	*rid = json_string_value(json_object_get(req, "credential"));
	struct reg	*r;

	if (rid == NULL)
		return send_error(cl, id, "credential must be a string");
	/* only a credential this control connection registered, or restored */
	if ((r = reg_find(rid)) == NULL || r->owner != cl)
		return send_error(cl, id, "unknown credential");
	TAILQ_REMOVE(&r->owner->regs, r, owner_entry);
	drop_reg(r);
	log_info("control: unregistered %s", rid);
	send_json(cl, json_pack("{s:O?, s:b}", "id", id, "ok", 1));
	return 0;
}

static void
op_status(struct ctl_client *cl, json_t *id)
{
	send_json(cl, json_pack("{s:O?, s:b, s:s, s:i, s:I, s:I, s:I, s:I, s:o, s:o,"
	    " s:{s:I, s:I, s:I, s:I}}", "id", id, "ok", 1, "version", PACKAGE_VERSION,
	    "pid", (int)getpid(), "generation", (json_int_t)env->generation,
	    "registrations", (json_int_t)reg_count(), "connections", (json_int_t)conn_count(),
	    "pending", (json_int_t)conn_pending(),
	    "http", listener_addr(env->http), "socks5", listener_addr(env->socks),
	    "audit", "written", (json_int_t)audit_written(), "lost", (json_int_t)audit_lost(),
	    "suppressed", (json_int_t)audit_suppressed(),
	    "queued", (json_int_t)audit_queued()));
}

/* A refused client hears why, as far as the socket takes it, and is gone. */
static void
refuse(struct ctl_client *cl, json_t *id, const char *why)
{
	log_warnx("control: pid %d uid %u refused: %s", (int)cl->pid, (unsigned)cl->uid, why);
	send_error(cl, id, why);
	if (!cl->dead) {
		(void)ctl_flush_out(cl);
		client_close(cl, "refused");
	}
}

/* The first request must be {"op":"auth","key":...} with our key. */
static void
op_auth(struct ctl_client *cl, json_t *req, json_t *id)
{
	const char	*key = json_string_value(json_object_get(req, "key"));
	const char	*op = json_string_value(json_object_get(req, "op"));

	if (op == NULL || strcmp(op, "auth") != 0)
		refuse(cl, id, "authentication required");
	else if (key == NULL || strlen(key) != 2 * CTL_KEY_BYTES ||
	    strlen(ctl_key) != 2 * CTL_KEY_BYTES ||
	    CRYPTO_memcmp(key, ctl_key, 2 * CTL_KEY_BYTES) != 0)
		refuse(cl, id, "wrong key");
	else {
		cl->authed = 1;
		log_info("control: client pid %d authenticated", (int)cl->pid);
		/* execd hides it from its sandboxes before it starts any */
		send_json(cl, json_pack("{s:O?, s:b, s:s?}", "id", id, "ok", 1, "ca_key",
		    tls_key_path()));
	}
}

static void
handle_line(struct ctl_client *cl, const char *line, size_t len)
{
	json_t		*req, *id;
	json_error_t	 jerr;
	const char	*op;

	/* NULs are read so that the refusal below can carry the request's id */
	if ((req = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
	    &jerr)) == NULL) {
		if (!cl->authed)
			refuse(cl, NULL, "authentication required");
		else
			send_error(cl, NULL, "malformed JSON");
		return;
	}
	id = json_object_get(req, "id");
	if (jx_has_nul_deep(req)) {
		/* never cut at the NUL: "allow\0deny" is no "allow" */
		if (!cl->authed)
			refuse(cl, NULL, "authentication required");
		else
			send_error(cl, jx_has_nul_deep(id) ? NULL : id,
			    "a string holds a NUL byte");
		json_decref(req);
		return;
	}
	op = json_string_value(json_object_get(req, "op"));
	if (!cl->authed)
		op_auth(cl, req, id);
	else if (!json_is_object(req) || op == NULL)
		send_error(cl, id, "a request is an object with an \"op\" string");
	else if (strcmp(op, "register") == 0)
		op_register(cl, req, id);
	else if (strcmp(op, "unregister") == 0)
		op_unregister(cl, req, id);
	else if (strcmp(op, "status") == 0)
		op_status(cl, id);
	else if (strcmp(op, "decide") == 0)
		send_json(cl, ctl_op_decide(cl, req, id));
	else if (strcmp(op, "auth") == 0)
		send_error(cl, id, "already authenticated");
	else
		send_error(cl, id, "unknown op");
	json_decref(req);
}

static int
read_input(struct ctl_client *cl)
{
	ssize_t	n;

	if (buf_reserve(&cl->in, 8192) == -1) {
		client_close(cl, "out of memory");
		return -1;
	}
	n = read(cl->fd, cl->in.data + cl->in.len, cl->in.cap - cl->in.len);
	if (n > 0) {
		cl->in.len += (size_t)n;
		return 0;
	}
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return 1;
	client_close(cl, n == 0 ? "disconnected" : "read error");
	return -1;
}

static void
client_io(struct ev_io *io, uint32_t events, void *arg)
{
	struct ctl_client	*cl = arg;
	uint8_t			*nl;
	size_t			 len;

	if ((events & EPOLLOUT) && ctl_flush_out(cl) == -1) {
		client_close(cl, "write error");
		return;
	}
	if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)) || read_input(cl) != 0)
		return;
	while (!cl->dead && (nl = memchr(buf_head(&cl->in), '\n', buf_avail(&cl->in))) != NULL) {
		len = (size_t)(nl - buf_head(&cl->in));
		handle_line(cl, (const char *)buf_head(&cl->in), len);
		if (!cl->dead)
			buf_consume(&cl->in, len + 1);
	}
	if (cl->dead)
		return;
	if (buf_avail(&cl->in) > CTL_LINE_MAX)
		client_close(cl, "sent an overlong line");
	else if (ctl_flush_out(cl) == -1)
		client_close(cl, "write error");
}

static void
accept_ready(struct ev_io *io, uint32_t events, void *arg)
{
	struct ctl_client	*cl;
	struct ucred		 cred;
	socklen_t		 len = sizeof(cred);
	int			 fd;

	while ((fd = accept4(ctl_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) != -1) {
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1) {
			log_warn("control: SO_PEERCRED");
			close(fd);
			continue;
		}
		if (cred.uid != 0 && cred.uid != geteuid()) {
			log_warnx("control: refusing pid %d of uid %u", (int)cred.pid,
			    (unsigned)cred.uid);
			close(fd);
			continue;
		}
		if (cred.pid != 0 && peerns_same_pid(cred.pid) == 0) {
			log_warnx("control: refusing pid %d of uid %u: another pid namespace",
			    (int)cred.pid, (unsigned)cred.uid);
			close(fd);
			continue;
		}
		if ((cl = calloc(1, sizeof(*cl))) == NULL) {
			log_warn("control");
			close(fd);
			continue;
		}
		cl->fd = fd;
		cl->uid = cred.uid;
		cl->pid = cred.pid;
		TAILQ_INIT(&cl->regs);
		if (ev_io_add(&cl->io, fd, EPOLLIN, client_io, cl) == -1) {
			close(fd);
			free(cl);
			continue;
		}
		TAILQ_INSERT_TAIL(&clients, cl, entry);
		log_info("control: client pid %d connected", (int)cred.pid);
	}
	if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
		log_warn("control: accept");
}

/* A socket left by a dead proxy is replaced; a live one is not. */
static int
clear_stale(const struct sockaddr_un *sun)
{
	struct stat	st;
	int		fd, r;

	if (lstat(sun->sun_path, &st) == -1)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISSOCK(st.st_mode)) {
		log_warnx("control: %s exists and is not a socket", sun->sun_path);
		return -1;
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	r = connect(fd, (const struct sockaddr *)sun, sizeof(*sun));
	close(fd);
	if (r == 0) {
		log_warnx("control: %s is in use by a running proxy", sun->sun_path);
		return -1;
	}
	return unlink(sun->sun_path);
}

/*
 * The key a client proves itself with, fresh at every start, in a file of
 * its own beside the socket (mode 0600; a stale one is replaced).
 */
static int
key_create(const char *path)
{
	unsigned char	raw[CTL_KEY_BYTES];
	char		line[sizeof(ctl_key) + 1];
	size_t		i;
	int		fd, e;

	snprintf(ctl_key_path, sizeof(ctl_key_path), "%s.key", path);
	if (RAND_bytes(raw, sizeof(raw)) != 1) {
		log_warnx("control: cannot make a key (RAND_bytes)");
		return -1;
	}
	for (i = 0; i < sizeof(raw); i++)
		snprintf(ctl_key + 2 * i, 3, "%02x", raw[i]);
	OPENSSL_cleanse(raw, sizeof(raw));
	snprintf(line, sizeof(line), "%s\n", ctl_key);
	if (unlink(ctl_key_path) == -1 && errno != ENOENT) {
		log_warn("control: unlink %s", ctl_key_path);
		return -1;
	}
	fd = open(ctl_key_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd == -1) {
		log_warn("control: %s", ctl_key_path);
		return -1;
	}
	e = fd_write_all(fd, line, strlen(line));
	OPENSSL_cleanse(line, sizeof(line));
	if (e != 0 || close(fd) == -1) {
		log_warnx("control: writing %s: %s", ctl_key_path, strerror(e ? e : errno));
		unlink(ctl_key_path);
		return -1;
	}
	return 0;
}

static void
key_remove(void)
{
	if (ctl_key_path[0] != '\0')
		unlink(ctl_key_path);
	ctl_key_path[0] = '\0';
	OPENSSL_cleanse(ctl_key, sizeof(ctl_key));
}

int
control_open(const char *path, struct proxy_env *e)
{
	struct sockaddr_un	sun = { .sun_family = AF_UNIX };
	mode_t			old;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		log_warnx("control: %s: path too long", path);
		return -1;
	}
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	/* the key is in place before the socket: a client that sees one finds both */
	if (clear_stale(&sun) == -1 || key_create(path) == -1)
		return -1;
	if ((ctl_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1) {
		log_warn("control: socket");
		key_remove();
		return -1;
	}
	old = umask(0177);
	if (bind(ctl_fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		umask(old);
		log_warn("control: bind %s", path);
		goto fail;
	}
	umask(old);
	if (chmod(path, 0600) == -1 || listen(ctl_fd, 64) == -1) {
		log_warn("control: %s", path);
		unlink(path);
		goto fail;
	}
	snprintf(ctl_path, sizeof(ctl_path), "%s", path);
	env = e;
	ctl_events_init();
	if (!ctl_reaper.cb)
		ev_timer_init(&ctl_reaper, reap, NULL);
	if (ev_io_add(&ctl_io, ctl_fd, EPOLLIN, accept_ready, NULL) == -1) {
		unlink(path);
		goto fail;
	}
	log_notice("control socket %s", path);
	return 0;
fail:
	close(ctl_fd);
	ctl_fd = -1;
	key_remove();
	return -1;
}

/*
 * A control connection made by whoever started us (execd's embedded
 * proxy: a socketpair on fd 0).  Nobody else holds it, so it needs no
 * key; when it ends, gone() is called (the proxy exits with its execd).
 */
int
control_adopt(int fd, struct proxy_env *e, void (*gone)(void))
{
	struct ctl_client	*cl;

	env = e;
	adopted_gone = gone;
	ctl_events_init();
	if (!ctl_reaper.cb)
		ev_timer_init(&ctl_reaper, reap, NULL);
	if (fcntl(fd, F_SETFL, O_NONBLOCK) == -1 || fcntl(fd, F_SETFD, FD_CLOEXEC) == -1 ||
	    (cl = calloc(1, sizeof(*cl))) == NULL) {
		log_warn("control: adopting fd %d", fd);
		return -1;
	}
	cl->fd = fd;
	cl->uid = geteuid();
	cl->pid = getppid();
	cl->authed = 1;
	cl->adopted = 1;
	TAILQ_INIT(&cl->regs);
	if (ev_io_add(&cl->io, fd, EPOLLIN, client_io, cl) == -1) {
		free(cl);
		return -1;
	}
	TAILQ_INSERT_TAIL(&clients, cl, entry);
	log_info("control: connection of pid %d on fd %d", (int)cl->pid, fd);
	return 0;
}

void
control_close(void)
{
	struct ctl_client *cl;

	adopted_gone = NULL;
	while ((cl = TAILQ_FIRST(&clients)) != NULL)
		client_close(cl, "closed at shutdown");
	reap(NULL, NULL);
	if (ctl_fd == -1)
		return;
	ev_timer_stop(&ctl_reaper);
	ev_io_del(&ctl_io);
	close(ctl_fd);
	ctl_fd = -1;
	unlink(ctl_path);
	key_remove();
}
