/*
 * execd-proxy's connection handling without its listening sockets: each
 * input is one client on a socket pair, handed to conn_new() as accept()
 * would.  Dials go nowhere: the harness runs in fuzz_sandbox(), whose
 * network namespace has only a loopback with nothing listening, and the
 * configured DNS server is that loopback too.
 */
#include "config.h"

#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evloop.h"
#include "log.h"
#include "proto/proto.h"
#include "relay/relay.h"
#include "policy/policy.h"
#include "fuzz.h"
#include "proxy_harness.h"

#define HARNESS_CONF	FUZZ_SCRATCH "/proxy.conf"
#define RUN_TURNS	3000	/* loop turns after EOF before calling it a hang */

static struct proxy_conf	*conf;

static const char conf_text[] =
	"listen http 127.0.0.1:3128\n"
	"listen socks5 127.0.0.1:1080\n"
	"dns-server 127.0.0.1:53\n"
	"dns-timeout 200ms\n"
	"connect-timeout 200ms\n"
	"header-timeout 500ms\n"
	"idle-timeout 500ms\n"
	"allow *.example.com example.org 127.0.0.1 localhost 10.1.2.3 ::1\n"
	"deny blocked.example.com\n"
	"allow-local yes\n"
	"socks5-udp yes\n"
	"audit none\n";

void
proxy_harness_init(void)
{
	char	 err[512];
	FILE	*f;

	fuzz_sandbox();
	log_init("execd-proxy-fuzz", LOG_DEST_STDERR, getenv("FUZZ_LOG") ? LOG_DEBUG : LOG_CRIT);
	signal(SIGPIPE, SIG_IGN);
	if ((f = fopen(HARNESS_CONF, "we")) == NULL || fputs(conf_text, f) == EOF ||
	    fclose(f) == EOF)
		abort();
	if ((conf = conf_load(HARNESS_CONF, err, sizeof(err))) == NULL) {
		fprintf(stderr, "harness configuration: %s\n", err);
		abort();
	}
	if (ev_init() == -1 || resolve_init(conf->dns_servers, conf->dns_ms) == -1)
		abort();
	audit_open(conf->audit, conf->audit_path, conf->audit_overflow);
	if (reg_create(NULL, NULL, NULL, FUZZ_CRED_ID, FUZZ_CRED_SECRET, err,
	    sizeof(err)) == NULL) {
		fprintf(stderr, "harness registration: %s\n", err);
		abort();
	}
}

static void
send_piece(int peer, const uint8_t *p, size_t n)
{
	ssize_t	w;
	int	tries;

	for (tries = 0; n > 0 && tries < 1000; tries++) {
		w = send(peer, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w <= 0) {
			if (conn_count() == 0)
				return;
			fuzz_drain(peer);
			fuzz_pump(0);
			continue;
		}
		p += w;
		n -= (size_t)w;
	}
}

void
proxy_harness_run(int socks, const uint8_t *data, size_t size, size_t chunk)
{
	struct sockaddr_storage	 peer;
	struct sockaddr_in	*sin = (struct sockaddr_in *)&peer;
	int			 sv[2], turns;
	size_t			 off;

	memset(&peer, 0, sizeof(peer));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(40000);
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == -1)
		abort();
	if (conn_new(socks ? &socks5_proto : &http_proto, conf, sv[0], &peer) == NULL)
		abort();
	for (off = 0; off < size && conn_count() > 0; off += chunk) {
		send_piece(sv[1], data + off, size - off < chunk ? size - off : chunk);
		fuzz_drain(sv[1]);
		fuzz_pump(0);
	}
	shutdown(sv[1], SHUT_WR);
	for (turns = 0; conn_count() > 0 && turns < RUN_TURNS; turns++) {
		fuzz_drain(sv[1]);
		fuzz_pump(turns < 100 ? 0 : 1);
	}
	if (conn_count() > 0) {
		fprintf(stderr, "connection still open %d loop turns after the client's EOF\n",
		    turns);
		abort();
	}
	close(sv[1]);
	/* let the reaper free what closed */
	fuzz_pump(0);
}
