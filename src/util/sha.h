/*
 * SHA-1 and SHA-256 (FIPS 180-4) of one buffer, for the WebSocket
 * handshake's accept key and the session sockets' names: small enough that
 * no instance loads a cryptography library for them; and the constant-time
 * comparison secrets need.
 */
#ifndef UTIL_SHA_H
#define UTIL_SHA_H

#include <stddef.h>
#include <stdint.h>

#define SHA1_LEN	20
#define SHA256_LEN	32

void	sha1(const void *data, size_t len, uint8_t md[SHA1_LEN]);
void	sha256(const void *data, size_t len, uint8_t md[SHA256_LEN]);
/* 1 if equal, in a time that does not depend on where they differ (tokens, ids) */
int	timingsafe_equal(const void *a, const void *b, size_t len);

#endif
