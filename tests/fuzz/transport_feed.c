/* Driving jsonl.c and ws.c as a peer would: a socket pair, pieces, EOF. */
#include "config.h"

#include <sys/socket.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "transport/conn.h"
#include "evloop.h"
#include "fuzz.h"
#include "rpc_stub.h"
#include "transport_feed.h"

#define FEED_TURNS	4000	/* loop turns after EOF before calling it a hang */

static void
send_piece(int peer, const uint8_t *p, size_t n)
{
	ssize_t	w;

	while (n > 0) {
		w = send(peer, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w <= 0) {
			/* the socket is full: let the transport read some */
			fuzz_drain(peer);
			fuzz_pump(0);
			if (w == -1 && stub.detaches > 0)
				return;
			continue;
		}
		p += w;
		n -= (size_t)w;
	}
}

void
feed_transport(feed_start_fn *start, const uint8_t *data, size_t size, size_t pre_len,
    size_t chunk)
{
	static struct conn	c;
	int			sv[2], turns;
	size_t			off;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1)
		abort();
	if (conn_open(&c, sv[0], sv[0]) == -1)
		abort();
	if (pre_len > size)
		pre_len = size;
	if (buf_append(&c.pre, data, pre_len) == -1)
		abort();
	if (start(&c) == -1) {
		conn_close(&c);
		close(sv[1]);
		return;
	}
	for (off = pre_len; off < size && !c.closed; off += chunk) {
		send_piece(sv[1], data + off, size - off < chunk ? size - off : chunk);
		fuzz_drain(sv[1]);
		fuzz_pump(0);
	}
	shutdown(sv[1], SHUT_WR);
	for (turns = 0; !c.closed && turns < FEED_TURNS; turns++) {
		fuzz_drain(sv[1]);
		fuzz_pump(turns < 100 ? 0 : 1);
	}
	if (!c.closed) {
		fprintf(stderr, "transport still open %d loop turns after the peer's EOF\n", turns);
		abort();
	}
	close(sv[1]);
}
