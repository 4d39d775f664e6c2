#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fdio.h"
#include "log.h"
#include "transport/conn.h"
#include "transport/http_upgrade.h"
#include "transport/jsonl.h"
#include "transport/sniff.h"
#include "transport/ws.h"

static struct conn		client;
static struct ev_timer		head_timer;
static int			http_mode;
static struct transport_conf	tconf;

void
transport_init(const struct transport_conf *tc)
{
	tconf = *tc;
	jsonl_init(tc->max_message);
	ws_init(tc->max_message, tc->ws_ping_ms);
	http_upgrade_init(tc->token, tc->jwt);
}

static int
need_auth(const struct conn *c)
{
	if (tconf.no_auth)
		return 0;
	/* ssh pipes and Unix sockets are authenticated by whoever made them */
	return c->is_inet || tconf.token != NULL || tconf.jwt != NULL;
}

static void
sniff_abort(struct conn *c, const char *why)
{
	log_info("%s: %s", c->peer, why);
	ev_timer_stop(&head_timer);
	conn_close(c);
}

static void
sniff_head_timeout(struct ev_timer *t, void *arg)
{
	sniff_abort(&client, "no complete request in time: closing");
}

static void
sniff_http(struct conn *c)
{
	struct http_result	r;

	http_upgrade_parse((const char *)buf_head(&c->pre), buf_avail(&c->pre),
	    need_auth(c), &r);
	if (r.verdict == HTTP_INCOMPLETE)
		return;
	ev_timer_stop(&head_timer);
	if (r.verdict == HTTP_RESPOND) {
		/* small replies on a fresh socket: the kernel buffer takes them whole */
		(void)fd_write_all(c->out_fd, r.resp, r.resp_len);
		log_info("%s: HTTP %d", c->peer, r.status);
		conn_shutdown_write(c);
		conn_close(c);
		return;
	}
	buf_consume(&c->pre, r.head_len);
	log_info("%s: websocket connection", c->peer);
	/* the 101 leaves with the answers to the frames sent along with the request */
	if (ws_start_after(c, r.resp, r.resp_len) == -1)
		conn_close(c);
}

static void
sniff_jsonl(struct conn *c)
{
	static const char refused[] = "{\"error\":{\"code\":-32600,\"message\":"
	    "\"authentication required: use the WebSocket transport with a token\"},"
	    "\"id\":-1}\n";

	ev_timer_stop(&head_timer);
	if (need_auth(c)) {
		(void)fd_write_all(c->out_fd, refused, sizeof(refused) - 1);
		sniff_abort(c, "newline-JSON from the network needs auth: refused");
		return;
	}
	if (jsonl_start(c) == -1)
		conn_close(c);
}

/*
 * An HTTP request line starts with a method; hyper takes one in any case.
 * A JSON value never starts with an upper-case letter, but a line of bad
 * JSON may start with a lower-case word ("not json", "nul"): such a word is
 * a method only when a request target follows it ("get / HTTP/1.1", "get
 * http://..."), else the line is JSON-RPC's to refuse.  1: HTTP, 0: not,
 * -1: the bytes so far cannot tell.
 */
static int
looks_http(const uint8_t *p, size_t len)
{
	static const char	abs[] = "http";
	size_t			i, j;

	if (!isalpha(p[0]))
		return 0;
	if (isupper(p[0]))
		return 1;
	for (i = 0; i < len && i < 32 && isalpha(p[i]); i++)
		;
	if (i == len)
		return i < 32 ? -1 : 0;
	if (p[i] != ' ')
		return 0;
	if (++i == len)
		return -1;
	if (p[i] == '/' || p[i] == '*')
		return 1;
	for (j = 0; j < sizeof(abs) - 1; j++, i++) {
		if (i == len)
			return -1;
		if (tolower(p[i]) != abs[j])
			return 0;
	}
	return 1;
}

static void
sniff_read(struct conn *c)
{
	const uint8_t	*p;
	ssize_t		 n;
	size_t		 i;
	int		 http = 0;

	if (buf_reserve(&c->pre, 4096) == -1) {
		sniff_abort(c, "out of memory");
		return;
	}
	n = read(c->in_fd, c->pre.data + c->pre.len, 4096);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		sniff_abort(c, "closed before a request");
		return;
	}
	c->pre.len += (size_t)n;
	if (http_mode) {
		sniff_http(c);
		return;
	}
	p = buf_head(&c->pre);
	for (i = 0; i < buf_avail(&c->pre) && isspace(p[i]); i++)
		;
	if (i == buf_avail(&c->pre)) {
		if (i > HTTP_HEAD_MAX)
			sniff_abort(c, "only white space: closing");
		return;
	}
	if (i == 0 && (http = looks_http(p, buf_avail(&c->pre))) == -1)
		return;		/* a lower-case word: more of the line decides */
	if (i == 0 && http) {
		http_mode = 1;
		sniff_http(c);
	} else
		sniff_jsonl(c);
}

int
sniff_start(int in_fd, int out_fd)
{
	if (conn_open(&client, in_fd, out_fd) == -1)
		return -1;
	conn_set_handlers(&client, sniff_read, NULL, NULL);
	ev_timer_init(&head_timer, sniff_head_timeout, NULL);
	/* bound a slow or silent network client (slowloris) */
	if (client.is_inet)
		ev_timer_start(&head_timer, tconf.header_timeout_ms);
	conn_want(&client, 1, 0);
	return 0;
}
