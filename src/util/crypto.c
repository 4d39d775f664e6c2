/*
 * SHA-1 and SHA-256 (FIPS 180-4), HMAC-SHA256 (RFC 2104) and a
 * constant-time comparison, one message at a time.
 *
 * Every WebSocket handshake needs a SHA-1 (RFC 6455's accept key), every
 * initialize a SHA-256 (the name of the session's socket, resume.c) and
 * every token check a comparison.  From libcrypto (dlopen()ed at the first
 * call, or by a listener before it forked), each instance paid for its
 * code pages, its provider tables and their reference counts, and a
 * listener carried the library and its set-up into every fork: about 0.2
 * ms of CPU and 40 KiB of PSS a session.  These few lines do the same work
 * in the instance's own pages.  The digests carry no secret (the accept key
 * is public, the socket name a one-way function of a random id); the HMAC
 * key and the compared tokens are, so nothing here branches on data or
 * indexes memory by it.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "util/crypto.h"

#define ROTL(x, n)	(((x) << (n)) | ((x) >> (32 - (n))))
#define ROTR(x, n)	(((x) >> (n)) | ((x) << (32 - (n))))

static uint32_t
be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void
put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static void
sha1_block(uint32_t *h, const unsigned char *blk)
{
	uint32_t	w[80], a, b, c, d, e, f, k, t;
	int		i;

	for (i = 0; i < 16; i++)
		w[i] = be32(blk + 4 * i);
	for (; i < 80; i++)
		w[i] = ROTL(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
	for (i = 0; i < 80; i++) {
		if (i < 20)
			f = (b & c) | (~b & d), k = 0x5a827999;
		else if (i < 40)
			f = b ^ c ^ d, k = 0x6ed9eba1;
		else if (i < 60)
			f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdc;
		else
			f = b ^ c ^ d, k = 0xca62c1d6;
		t = ROTL(a, 5) + f + e + k + w[i];
		e = d, d = c, c = ROTL(b, 30), b = a, a = t;
	}
	h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
}

static const uint32_t	sha256_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static void
sha256_block(uint32_t *h, const unsigned char *blk)
{
	uint32_t	w[64], v[8], s0, s1, t1, t2;
	int		i;

	for (i = 0; i < 16; i++)
		w[i] = be32(blk + 4 * i);
	for (; i < 64; i++) {
		s0 = ROTR(w[i - 15], 7) ^ ROTR(w[i - 15], 18) ^ (w[i - 15] >> 3);
		s1 = ROTR(w[i - 2], 17) ^ ROTR(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	memcpy(v, h, sizeof(v));
	for (i = 0; i < 64; i++) {
		s1 = ROTR(v[4], 6) ^ ROTR(v[4], 11) ^ ROTR(v[4], 25);
		t1 = v[7] + s1 + ((v[4] & v[5]) ^ (~v[4] & v[6])) + sha256_k[i] + w[i];
		s0 = ROTR(v[0], 2) ^ ROTR(v[0], 13) ^ ROTR(v[0], 22);
		t2 = s0 + ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));
		memmove(v + 1, v, 7 * sizeof(v[0]));
		v[4] += t1;
		v[0] = t1 + t2;
	}
	for (i = 0; i < 8; i++)
		h[i] += v[i];
}

/*
 * The message's whole blocks, then the tail with the padding: 0x80, zeros,
 * and the length in bits (big-endian, 64 bits) ending the last block.
 */
static void
digest(uint32_t *h, size_t nh, void (*block)(uint32_t *, const unsigned char *),
    const void *data, size_t len, unsigned char *md)
{
	const unsigned char	*p = data;
	unsigned char		 tail[128];
	uint64_t		 bits = (uint64_t)len * 8;
	size_t			 rest, tlen, i;

	for (rest = len; rest >= 64; rest -= 64, p += 64)
		block(h, p);
	memset(tail, 0, sizeof(tail));
	if (rest > 0)
		memcpy(tail, p, rest);
	tail[rest] = 0x80;
	tlen = rest < 56 ? 64 : 128;
	for (i = 0; i < 8; i++)
		tail[tlen - 1 - i] = (unsigned char)(bits >> (8 * i));
	block(h, tail);
	if (tlen == 128)
		block(h, tail + 64);
	for (i = 0; i < nh; i++)
		put_be32(md + 4 * i, h[i]);
}

int
crypto_sha1(const void *data, size_t len, unsigned char md[SHA1_LEN])
{
	uint32_t	h[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0 };

	digest(h, 5, sha1_block, data, len, md);
	return 0;
}

int
crypto_sha256(const void *data, size_t len, unsigned char md[SHA256_LEN])
{
	uint32_t	h[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
			    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };

	digest(h, 8, sha256_block, data, len, md);
	return 0;
}

/*
 * HMAC(K, m) = H((K ^ opad) || H((K ^ ipad) || m)), a key longer than a
 * block hashed first.
 */
int
crypto_hmac_sha256(const void *key, size_t keylen, const void *data, size_t len,
    unsigned char md[SHA256_LEN])
{
	unsigned char	 k[64], outer[64 + SHA256_LEN], *inner;
	size_t		 i;

	if (len > SIZE_MAX - sizeof(k) || (inner = malloc(sizeof(k) + len)) == NULL) {
		log_warnx("HMAC-SHA256: out of memory");
		return -1;
	}
	memset(k, 0, sizeof(k));
	if (keylen > sizeof(k))
		crypto_sha256(key, keylen, k);
	else if (keylen > 0)
		memcpy(k, key, keylen);
	for (i = 0; i < sizeof(k); i++) {
		inner[i] = k[i] ^ 0x36;
		outer[i] = k[i] ^ 0x5c;
	}
	if (len > 0)
		memcpy(inner + sizeof(k), data, len);
	crypto_sha256(inner, sizeof(k) + len, outer + sizeof(k));
	crypto_sha256(outer, sizeof(outer), md);
	explicit_bzero(k, sizeof(k));
	explicit_bzero(inner, sizeof(k));
	explicit_bzero(outer, sizeof(outer));
	free(inner);
	return 0;
}

/* Every byte looked at, whatever differs first: the compiler may not stop early. */
int
crypto_equal(const void *a, const void *b, size_t len)
{
	const volatile unsigned char	*x = a, *y = b;
	unsigned char			 d = 0;
	size_t				 i;

	for (i = 0; i < len; i++)
		d |= x[i] ^ y[i];
	return d == 0;
}
