/*
 * The upstream proxy side of a dial: which one a connection takes (the
 * proxy's configured upstream, or for raw TCP a process's own, execd's
 * --tcp-upstream-proxy), what such a route refuses, and the HTTP CONNECT
 * handshake with it.
 */
#include "config.h"

#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "relay/relay.h"
#include "relay/dial_int.h"
#include "policy/policy.h"

/*
 * A process's SOCKS5 TCP flows take its own upstream (execd's
 * --tcp-upstream-proxy) and nothing else; other flows the proxy's.
 */
void
dial_pick_upstream(struct conn *c)
{
	const struct policy	*pol = c->reg != NULL ? c->reg->policy : NULL;

	c->tcp_route = c->raw_tcp && pol != NULL && pol->tcp_upstream != NULL;
	c->up = c->tcp_route ? pol->tcp_upstream : c->conf->upstream;
}

/*
 * What 0.171.0 does not send to its TCP upstream, after the policy allowed
 * it (so the decision is recorded as such): any flow when the launch
 * config forbids upstream proxies, and an address that is not public
 * ("IP destination cannot use the TCP upstream proxy"); neither is
 * dialled directly instead.
 */
int
dial_up_refuses(struct conn *c)
{
	size_t	i;

	if (!c->reg->policy->tcp_upstream_allowed) {
		log_info("%s: %s: the TCP upstream is required and not allowed", c->client,
		    c->host);
		return 1;
	}
	if (!c->is_literal && strcmp(c->host, "localhost") != 0)
		return 0;
	for (i = 0; i < c->naddrs; i++)
		if (!addr_is_public((const struct sockaddr *)&c->addrs[i])) {
			log_info("%s: %s: an address that is not public cannot use the TCP "
			    "upstream", c->client, c->host);
			return 1;
		}
	return 0;
}

int
dial_up_send(struct conn *c)
{
	char		 req[PROXY_HOST_MAX + 512];
	int		 n;
	const char	*lb = strchr(c->host, ':') ? "[" : "", *rb = *lb ? "]" : "";

	n = snprintf(req, sizeof(req), "CONNECT %s%s%s:%u HTTP/1.1\r\nHost: %s%s%s:%u\r\n"
	    "%s%s%s\r\n", lb, c->host, rb, c->port, lb, c->host, rb, c->port,
	    c->up->auth ? "Proxy-Authorization: Basic " : "",
	    c->up->auth ? c->up->auth : "",
	    c->up->auth ? "\r\n" : "");
	if (n < 0 || (size_t)n >= sizeof(req) || write(c->ufd, req, (size_t)n) != n)
		return -1;
	return 0;
}

/* The upstream's answer to our CONNECT; 1 when more is needed. */
int
dial_up_reply(struct conn *c)
{
	struct buf	*b = &c->u2c.acc;
	ssize_t		 n;
	uint8_t		*end;
	int		 status;

	if (buf_reserve(b, 4096) == -1)
		return -1;
	n = read(c->ufd, b->data + b->len, b->cap - b->len);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return 1;
	if (n <= 0)
		return -1;
	b->len += (size_t)n;
	end = memmem(buf_head(b), buf_avail(b), "\r\n\r\n", 4);
	if (end == NULL)
		return buf_avail(b) > PROXY_HEAD_MAX ? -1 : 1;
	if (buf_avail(b) < 12 || sscanf((char *)buf_head(b), "HTTP/1.%*c %3d", &status) != 1 ||
	    status != 200) {
		log_info("%s: upstream proxy refused CONNECT %s:%u", c->client, c->host, c->port);
		return -1;
	}
	/* bytes after the head already belong to the tunnel */
	buf_consume(b, (size_t)(end + 4 - buf_head(b)));
	if (buf_avail(b) > 0 && buf_append(&c->u2c.pend, buf_head(b), buf_avail(b)) == -1)
		return -1;
	buf_reset(b);
	return 0;
}
