/* One client connection of execd-proxy's listeners, fed by a fuzz target (proxy_harness.c). */
#ifndef EXECD_PROXY_HARNESS_H
#define EXECD_PROXY_HARNESS_H

#include <stddef.h>
#include <stdint.h>

/* A registration whose credentials the seed corpora use. */
#define FUZZ_CRED_ID		"x0123456789abcde"
#define FUZZ_CRED_SECRET	"0123456789abcdef0123456789abcdef"

/* In LLVMFuzzerInitialize: sandbox, configuration, event loop, resolver. */
void	proxy_harness_init(void);
/* data as what one client sends the HTTP (socks = 0) or SOCKS5 listener, in pieces */
void	proxy_harness_run(int socks, const uint8_t *data, size_t size, size_t chunk);

#endif
