/*
 * The only place the WebSocket JWT check touches libcrypto, so the library
 * can be loaded lazily behind these two calls.
 */
#ifndef EXECD_CRYPTO_HMAC_H
#define EXECD_CRYPTO_HMAC_H

#include <stddef.h>

#define HMAC_SHA256_LEN	32

/* HMAC-SHA256(key, msg) into out; 0 or -1 */
int	hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
	    unsigned char out[HMAC_SHA256_LEN]);
/* 1 when a and b hold the same n bytes, in time independent of the bytes */
int	ct_equal(const void *a, const void *b, size_t n);

#endif
