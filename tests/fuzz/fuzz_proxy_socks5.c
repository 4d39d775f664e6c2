/*
 * execd-proxy's SOCKS5 listener: greeting, username/password
 * authentication, CONNECT / UDP ASSOCIATE / BIND requests, every address
 * type.  Byte 0: the piece size; the rest is what the client sends.
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
	proxy_harness_run(1, data + 1, size - 1, 1 + (size_t)data[0] % 64);
	return 0;
}
