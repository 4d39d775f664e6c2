/*
 * execd-proxy's HTTP listener: request heads (absolute-URI forwarding and
 * CONNECT), Proxy-Authorization, policy checks, what follows the head.
 * Byte 0: the piece size; the rest is what the client sends.
 */
#include "config.h"

#include "fuzz.h"
#include "proxy_harness.h"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	proxy_harness_init();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	proxy_harness_run(0, data + 1, size - 1, 1 + (size_t)data[0] * 4);
	return 0;
}
