/*
 * The newline-JSON reader (jsonl.c) on a byte stream: line splitting, CR
 * stripping, blank lines, over-long lines, pausing and resuming, EOF.
 * Byte 0: dispatcher knobs (rpc_stub.h) and the message cap; byte 1: the
 * piece size; the rest is the stream, its first quarter already read.
 */
#include "config.h"

#include "evloop.h"
#include "transport/jsonl.h"
#include "fuzz.h"
#include "rpc_stub.h"
#include "transport_feed.h"

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
	rpc_stub_reset(data[0] & 7);
	stub.max_message = caps[(data[0] >> 4) & 3];
	jsonl_init(stub.max_message);
	stub.check_lines = 1;
	feed_transport(jsonl_start, data + 2, size - 2, (size - 2) / 4, 1 + data[1]);
	return 0;
}
