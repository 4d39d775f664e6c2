/*
 * The newline-JSON reader (jsonl.c) on a byte stream: line splitting, CR
 * stripping, blank lines, over-long lines, pausing and resuming, EOF.
 * Byte 0: dispatcher knobs (rpc_stub.h) and the message cap; byte 1: the
 * piece size; the rest is the stream, its first quarter already read.
 */
#include "config.h"

#include "evloop.h"
#include "execd.h"
#include "transport/jsonl.h"
#include "fuzz.h"
#include "rpc_stub.h"
#include "transport_feed.h"

struct execd_conf conf = {
	.max_message = 1024,
	.header_timeout_ms = 10000,
};

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
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
	conf.max_message = caps[(data[0] >> 4) & 3];
	rpc_stub_reset(data[0] & 7);
	stub.check_lines = 1;
	feed_transport(jsonl_start, data + 2, size - 2, (size - 2) / 4, 1 + data[1]);
	return 0;
}
