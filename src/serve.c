#include "config.h"

#include <sys/random.h>

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <jansson.h>

#include "b64.h"
#include "evloop.h"
#include "log.h"
#include "execd.h"
#include "transport/conn.h"
#include "discovery/discovery.h"
#include "envconfig/envconfig.h"
#include "fs/fs.h"
#include "fs/fs_watch.h"
#include "http/http_req.h"
#include "netproxy/netproxy.h"
#include "proc/proc.h"
#include "proc/proc_rpc.h"
#include "proc/proc_net.h"
#include "session/session.h"
#include "session/resume.h"
#include "rpc/rpc.h"
#include "serve.h"
#include "serve_proxy.h"
#include "sandbox/sandbox.h"
#include "transport/sniff.h"
#include "spawn/spawner.h"
#include "transport/ws.h"
#include "util/crypto.h"

static struct conn	resumed;	/* a connection handed over by a new instance */

static void
serve_stop(int signo, void *arg)
{
	struct rpc_transport	*t = rpc_transport();

	log_info("signal %d: ending the session", signo);
	resume_cleanup();
	proc_end_session();
	/* the connection goes too: the client may hold its end open for ever */
	if (t != NULL)
		t->close(t->ctx);
	rpc_detach();
}

/* The client is gone: the session may come back within its TTL; else it ends now. */
static void
serve_detached(void)
{
	if (!resume_detached())
		proc_end_session();
}

/* A client comes back through a new instance: it spoke WebSocket there. */
static int
serve_take_over(int fd, const char **peer)
{
	if (conn_open(&resumed, fd, fd) == -1 || ws_start(&resumed) == -1)
		return -1;
	*peer = resumed.peer;
	return 0;
}

/*
 * Each instance's first encoding and decoding would fill the base64 tables
 * in its own copy of the pages, and its first calls into jansson would bind
 * jansson's calls into libc (jansson is linked for lazy binding: a symbol
 * lookup through every library and a write to its GOT, a page copied).  No
 * JSON object is made here: jansson seeds its hash function at the first,
 * and each instance seeds its own (serve_prepare).  Where execd-proxy is
 * (readlink, access) does not change while the listener runs.  Where
 * tokens are checked, libcrypto.so.3 is loaded, relocated and its EVP set
 * up here once for every instance's HMAC (the digests are linked,
 * util/crypto.c).
 */
void
serve_warm(void)
{
	static const char	 sample[] = "[\"s\\u00e9\",-1,2.5,true,false,null,[]]";
	char			 enc[B64_ENCLEN(3) + 1], err[64], *text;
	unsigned char		 mac[SHA256_LEN];
	json_t			*v;

	(void)b64_encode_to(enc, "abc", 3);
	(void)b64_valid(enc, 4, err, sizeof(err));
	if ((v = json_loads(sample, 0, NULL)) != NULL &&
	    (text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY)) != NULL)
		free(text);
	json_decref(v);
	if (conf.proxy_control == NULL && !conf.no_embedded_proxy)
		(void)serve_proxy_find();
	if (conf.jwt != NULL && crypto_hmac_sha256("k", 1, "", 0, mac) == -1)
		log_warnx("libcrypto: HMAC-SHA256 set-up failed");
}

/*
 * jansson's hash seed, ours and from getrandom(2): it would read
 * /dev/urandom (an open, a read, a close) at the first object.
 */
static void
seed_json(void)
{
	uint32_t	seed = 0;

	while (seed == 0)
		if (getrandom(&seed, sizeof(seed), 0) != (ssize_t)sizeof(seed))
			return;	/* jansson seeds itself */
	json_object_seed(seed);
}

int
serve_prepare(void)
{
	static struct proc_limits	limits;
	struct transport_conf		transport;
	const char *const		*cap;

	transport = (struct transport_conf){
		.max_message = conf.max_message,
		.header_timeout_ms = conf.header_timeout_ms,
		.ws_ping_ms = conf.ws_ping_ms,
		.token = conf.token,
		.jwt = conf.jwt,
		.no_auth = conf.no_auth,
	};
	transport_init(&transport);
	limits = (struct proc_limits){
		.max_stdin = conf.max_message,
		.retention_bytes = conf.retention_bytes,
		.retention_chunks = conf.retention_chunks,
		.kill_grace_ms = conf.kill_grace_ms,
		.closed_keep_ms = conf.closed_keep_ms,
		.detached_keep_ms = conf.resume_ttl_ms,
	};
	signal(SIGPIPE, SIG_IGN);
	seed_json();
	/* before anything else is open, and before the filter it must not inherit */
	if (spawner_start() == -1)
		return -1;
	sandbox_set_ns_probe(spawner_probe_ns);
	sandbox_set_closer(spawner_close_later);
	sandbox_set_state_dir(conf.state_dir);
	if (ev_init() == -1)
		return -1;
	rpc_init(conf.concurrency);
	rpc_set_gate(&session_lifecycle);
	rpc_register(session_methods);
	rpc_register(proc_methods);
	rpc_register(fs_methods);
	rpc_register(discovery_methods);
	rpc_register(fs_watch_methods);
	rpc_register(http_methods);
	rpc_register(envconfig_methods);
	proc_rpc_init(&limits);
	rpc_on_detach(serve_detached);
	resume_init(conf.state_dir, conf.resume_ttl_ms, proc_end_session, serve_take_over);
	http_req_init(conf.max_message);
	if (conf.proxy_control != NULL) {
		if (netproxy_init(conf.proxy_control) == -1)
			return -1;
	} else if (!conf.no_embedded_proxy && serve_proxy_find() == 0 &&
	    netproxy_init_embedded(serve_proxy_launch) == -1)
		return -1;
	netproxy_set_events(&proc_net_events);
	if (netproxy_enabled()) {
		session_set_capability("networkProxyLaunch", 1);
		/* network/policyRequest is answered (proc/proc_net.c) */
		session_set_capability("networkProxyReviewDomains", 1);
		/* masked by netproxy/netproxy_mask.c, put back by execd-proxy */
		session_set_capability("credentialMasking", 1);
		session_set_capability("credentialMaskingCustomProviders", 1);
	} else {
		session_set_capability("networkProxyLaunch", 0);
		session_set_capability("networkProxyReviewDomains", 0);
		session_set_capability("credentialMasking", 0);
		session_set_capability("credentialMaskingCustomProviders", 0);
	}
	for (cap = sandbox_capabilities; *cap != NULL; cap++)
		session_set_capability(*cap, 1);
	/* 0.171.0's transparent TCP: the proxy's SOCKS5 and a kernel that can swap sockets */
	session_set_capability("networkProxyTransparentTcp", netproxy_enabled() &&
	    sandbox_transparent_supported());
	/* Windows' native MXC level: refused here, as a Linux reference refuses it */
	session_set_capability("windowsMxc", 0);
	fs_init();
	discovery_init();
	fs_watch_init();
	envconfig_init();
	if (ev_signal(SIGTERM, serve_stop, NULL) == -1 ||
	    ev_signal(SIGINT, serve_stop, NULL) == -1 ||
	    ev_signal(SIGHUP, serve_stop, NULL) == -1)
		return -1;
	/* from here on, only the calls sandbox_self.c lists */
	if (sandbox_self_narrow() == -1)
		fatalx("cannot narrow execd's own privileges");
	return 0;
}

int
serve_run(int in_fd, int out_fd)
{
	if (sniff_start(in_fd, out_fd) == -1)
		return 1;
	ev_run();
	http_req_shutdown();
	netproxy_shutdown();
	resume_cleanup();
	proc_final_sweep();
	spawner_stop();
	ev_free();
	return 0;
}

int
serve_connection(int in_fd, int out_fd)
{
	if (serve_prepare() == -1)
		return 1;
	return serve_run(in_fd, out_fd);
}
