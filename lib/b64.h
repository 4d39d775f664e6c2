/* Standard padded base64 (RFC 4648 §4). */
#ifndef EXECD_B64_H
#define EXECD_B64_H

#include <stddef.h>
#include <sys/types.h>

/* Returns a NUL-terminated malloc'd string, NULL on allocation failure. */
char	*b64_encode(const void *src, size_t len, size_t *outlen);
/* Into caller storage of at least B64_ENCLEN(len) + 1 bytes; returns length. */
#define B64_ENCLEN(n)	((((n) + 2) / 3) * 4)
size_t	 b64_encode_to(char *dst, const void *src, size_t len);
/*
 * Strict decode. On bad input returns NULL with err holding the same text as
 * the reference's decoder ("Invalid symbol 33, offset 0.").  *outlen is set
 * on success; the result is malloc'd (at least one byte, even when empty).
 */
void	*b64_decode(const char *src, size_t len, size_t *outlen, char *err, size_t errlen);

/* The length b64_decode() would give, or -1 with err set as it would. */
ssize_t	 b64_valid(const char *src, size_t len, char *err, size_t errlen);
/*
 * Decode src, which b64_valid() accepted or is a stretch of whole quads of
 * such input, into dst (len / 4 * 3 bytes); returns the bytes written.
 */
size_t	 b64_decode_to(unsigned char *dst, const char *src, size_t len);

#endif
