/*
 * execd-proxy: the managed network proxy sidecar of execd.  Start-up,
 * signals and configuration reloads; the work happens in the modules.
 */
#include "config.h"

#include <sys/resource.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netinet/in.h>

#include "log.h"
#include "front/front.h"
#include "proto/proto.h"
#include "relay/relay.h"
#include "policy/policy.h"
#include "tls/tls.h"

#define DEFAULT_CONF	SYSCONFDIR "/execd-proxy.conf"

static const char	*conf_path = DEFAULT_CONF;
static int		 embedded;	/* -e: execd's own, on fd 0 */
static struct listener	 http_listener = { .fd = -1 }, socks_listener = { .fd = -1 };
/* the live configuration and what the modules below were opened with */
static struct proxy_env	 env = {
	.generation = 1,
	.http = &http_listener,
	.socks = &socks_listener,
};

static void
usage(void)
{
	fprintf(stderr, "usage: execd-proxy [-dnv] [-f file] [-s control-socket]\n"
	    "       execd-proxy -e [-dv] [-f file]\n");
	exit(1);
}

/* Thousands of relays take descriptors: go as far as the hard limit allows. */
static void
raise_nofile(void)
{
	struct rlimit	rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1 || rl.rlim_cur >= rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) == -1)
		log_warn("setrlimit RLIMIT_NOFILE");
}

static int
same_addr(const struct sockaddr_storage *a, int ha, const struct sockaddr_storage *b, int hb)
{
	return ha == hb && (!ha || memcmp(a, b, sizeof(*a)) == 0);
}

static int
str_eq(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* Listeners and the control socket stay as they are until a restart. */
static void
keep_sockets(struct proxy_conf *nc, const struct proxy_conf *oc)
{
	if (!same_addr(&nc->http_addr, nc->has_http, &oc->http_addr, oc->has_http) ||
	    !same_addr(&nc->socks_addr, nc->has_socks, &oc->socks_addr, oc->has_socks))
		log_warnx("reload: listener changes take effect at the next restart");
	if (!str_eq(nc->control_path, oc->control_path))
		log_warnx("reload: control socket changes take effect at the next restart");
	nc->http_addr = oc->http_addr;
	nc->has_http = oc->has_http;
	nc->socks_addr = oc->socks_addr;
	nc->has_socks = oc->has_socks;
	free(nc->control_path);
	nc->control_path = strdup(oc->control_path);
}

static void
reload(int signo, void *arg)
{
	struct proxy_conf	*nc, *oc = env.conf;
	char			 err[512];

	if ((nc = conf_load(conf_path, err, sizeof(err))) == NULL) {
		log_warnx("reload failed, keeping the running configuration: %s", err);
		return;
	}
	keep_sockets(nc, oc);
	if (nc->control_path == NULL) {
		log_warnx("reload failed: out of memory");
		conf_unref(nc);
		return;
	}
	if (!str_eq(nc->dns_servers, oc->dns_servers) || nc->dns_ms != oc->dns_ms) {
		if (resolve_set_servers(nc->dns_servers, nc->dns_ms) == -1)
			log_warnx("reload: resolver setup failed; lookups fail until fixed");
	}
	/* reopened every time: this is also how a rotated audit file is picked up */
	audit_open(nc->audit, nc->audit_path, nc->audit_overflow);
	nc->generation = ++env.generation;
	env.conf = nc;
	conf_unref(oc);
	log_notice("configuration reloaded from %s (generation %u)",
	    conf_path ? conf_path : "built in", env.generation);
}

static void
stop(int signo, void *arg)
{
	log_notice("%s: shutting down", strsignal(signo));
	ev_break();
}

/* -e: the control connection ended, so did the execd that started us. */
static void
owner_gone(void)
{
	log_info("the execd that started us is gone: shutting down");
	ev_break();
}

/* -e: a path execd gives in the environment replaces the built-in one. */
static void
embedded_path(char **field, const char *name)
{
	const char	*v = getenv(name);
	char		*copy;

	if (v == NULL || *v != '/')
		return;
	if ((copy = strdup(v)) == NULL) {
		log_warn("%s", name);
		return;
	}
	free(*field);
	*field = copy;
}

/*
 * -e: listeners on ports the kernel picks, so that any number of instances
 * can run; and on the built-in configuration, local access as far as the
 * global policy goes: each process's own policy (its networkProxy) decides,
 * as the reference builds its proxy from that alone.
 */
static void
embedded_conf(struct proxy_conf *c)
{
	struct sockaddr_in	*sin;

	if (conf_path == NULL)
		c->policy.allow_local = 1;
	/*
	 * execd names the places: the CA and its key in a directory only it
	 * and we see (sandboxes do not), the bundle where its processes can
	 * read it; the upstream CA is what execd's own environment says.
	 */
	embedded_path(&c->state_dir, "EXECD_PROXY_STATE_DIR");
	embedded_path(&c->bundle_dir, "EXECD_PROXY_BUNDLE_DIR");
	embedded_path(&c->upstream_ca, "EXECD_PROXY_UPSTREAM_CA");
	memset(&c->http_addr, 0, sizeof(c->http_addr));
	sin = (struct sockaddr_in *)&c->http_addr;
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c->socks_addr = c->http_addr;
	c->has_http = c->has_socks = 1;
}

static int
start(const char *control_override)
{
	if (control_override != NULL) {
		free(env.conf->control_path);
		if ((env.conf->control_path = strdup(control_override)) == NULL)
			return -1;
	}
	if (ev_init() == -1 || resolve_init(env.conf->dns_servers, env.conf->dns_ms) == -1)
		return -1;
	tls_init(env.conf);	/* on failure, limited mode refuses HTTPS as before */
	audit_set_resume(conn_resume_all);
	audit_open(env.conf->audit, env.conf->audit_path, env.conf->audit_overflow);
	if (env.conf->has_http &&
	    listener_open(&http_listener, &http_proto, &env.conf->http_addr, &env) == -1)
		return -1;
	if (env.conf->has_socks &&
	    listener_open(&socks_listener, &socks5_proto, &env.conf->socks_addr,
	    &env) == -1)
		return -1;
	if (embedded ? control_adopt(STDIN_FILENO, &env, owner_gone) == -1 :
	    control_open(env.conf->control_path, &env) == -1)
		return -1;
	if (ev_signal(SIGHUP, reload, NULL) == -1 || ev_signal(SIGTERM, stop, NULL) == -1 ||
	    ev_signal(SIGINT, stop, NULL) == -1)
		return -1;
	return 0;
}

static void
finish(void)
{
	listener_close(&http_listener);
	listener_close(&socks_listener);
	control_close();
	conn_close_all();
	tls_shutdown();
	resolve_shutdown();
	audit_close();
	conf_unref(env.conf);
	env.conf = NULL;
	ev_free();
}

int
main(int argc, char *argv[])
{
	const char	*control = NULL;
	char		 err[512];
	int		 ch, check = 0, level = LOG_NOTICE, conf_given = 0;

	log_init("execd-proxy", LOG_DEST_STDERR, LOG_NOTICE);
	while ((ch = getopt(argc, argv, "def:ns:v")) != -1) {
		switch (ch) {
		case 'e':
			embedded = 1;
			break;
		case 'd':
			level = LOG_DEBUG;
			break;
		case 'f':
			conf_path = optarg;
			conf_given = 1;
			break;
		case 'n':
			check = 1;
			break;
		case 's':
			control = optarg;
			break;
		case 'v':
			level = level == LOG_NOTICE ? LOG_INFO : LOG_DEBUG;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || (embedded && (control != NULL || check)))
		usage();
	log_setlevel(level);
	/* no -f and no file where it would be: run on the built-in configuration */
	if (!conf_given && (embedded || (access(conf_path, F_OK) == -1 && errno == ENOENT)))
		conf_path = NULL;
	if ((env.conf = conf_load(conf_path, err, sizeof(err))) == NULL) {
		fprintf(stderr, "execd-proxy: %s\n", err);
		return 1;
	}
	if (embedded)
		embedded_conf(env.conf);
	if (check) {
		fprintf(stderr, "execd-proxy: configuration OK\n");
		conf_unref(env.conf);
		return 0;
	}
	signal(SIGPIPE, SIG_IGN);
	raise_nofile();
	if (start(control) == -1) {
		log_warnx("start-up failed");
		finish();
		return 1;
	}
	log_notice("ready (configuration %s)", conf_path ? conf_path : "built in");
	ev_run();
	finish();
	return 0;
}
