/*
 * WebSocket framing through wslay (ws.c) after a completed upgrade: client
 * frames of every kind, masked or not, fragmented, oversized, control
 * frames, close handshakes, garbage.  Byte 0: dispatcher knobs (rpc_stub.h)
 * and the message cap; byte 1: the piece size; the rest is what the client
 * sends after the HTTP head, the first quarter pipelined with the head.
 */
#include "config.h"

#include <signal.h>

#include "evloop.h"
#include "transport/ws.h"
#include "fuzz.h"
#include "rpc_stub.h"
#include "transport_feed.h"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (ev_init() == -1)
		return -1;
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t	caps[] = { 16, 256, 1024, 65536 };

	if (size < 2)
		return 0;
	rpc_stub_reset(data[0] & 7);
	stub.max_message = caps[(data[0] >> 4) & 3];
	ws_init(stub.max_message, 0);
	feed_transport(ws_start, data + 2, size - 2, (size - 2) / 4, 1 + data[1]);
	return 0;
}
