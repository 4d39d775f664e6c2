/*
 * Hashing, HMAC and constant-time comparison from OpenSSL's libcrypto: the
 * digests and the comparison linked, HMAC loaded by soname at its first
 * call (crypto.c says why).  Every call fails closed: -1 when libcrypto
 * cannot be loaded or a digest fails.
 */
#ifndef UTIL_CRYPTO_H
#define UTIL_CRYPTO_H

#include <stddef.h>

#define SHA1_LEN	20
#define SHA256_LEN	32

int	crypto_sha1(const void *data, size_t len, unsigned char md[SHA1_LEN]);
int	crypto_sha256(const void *data, size_t len, unsigned char md[SHA256_LEN]);
int	crypto_hmac_sha256(const void *key, size_t keylen, const void *data, size_t len,
	    unsigned char md[SHA256_LEN]);
/* 1 if equal, in a time that does not depend on where they differ; 0 otherwise */
int	crypto_equal(const void *a, const void *b, size_t len);

#endif
