/*
 * SHA-1 and SHA-256 as FIPS 180-4 describes them: 64-byte blocks, the
 * message padded with 0x80, zeros and its length in bits, big-endian.
 * Neither is used where secrecy depends on it: SHA-1 only makes the
 * WebSocket accept key (RFC 6455), SHA-256 names session sockets.
 */
#include "config.h"

#include <string.h>

#include "util/sha.h"

#define ROL(x, n)	(((x) << (n)) | ((x) >> (32 - (n))))
#define ROR(x, n)	(((x) >> (n)) | ((x) << (32 - (n))))

static uint32_t
be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void
put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static void
sha1_block(uint32_t h[5], const uint8_t *p)
{
	uint32_t	w[80], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f, k, t;
	int		i;

	for (i = 0; i < 16; i++)
		w[i] = be32(p + 4 * i);
	for (; i < 80; i++)
		w[i] = ROL(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	for (i = 0; i < 80; i++) {
		if (i < 20) {
			f = (b & c) | (~b & d);
			k = 0x5a827999;
		} else if (i < 40) {
			f = b ^ c ^ d;
			k = 0x6ed9eba1;
		} else if (i < 60) {
			f = (b & c) | (b & d) | (c & d);
			k = 0x8f1bbcdc;
		} else {
			f = b ^ c ^ d;
			k = 0xca62c1d6;
		}
		t = ROL(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = ROL(b, 30);
		b = a;
		a = t;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
}

static const uint32_t sha256_k[64] = {
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
sha256_block(uint32_t h[8], const uint8_t *p)
{
	uint32_t	w[64], v[8], s0, s1, t1, t2;
	int		i;

	for (i = 0; i < 16; i++)
		w[i] = be32(p + 4 * i);
	for (; i < 64; i++) {
		s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
		s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	memcpy(v, h, sizeof(v));
	for (i = 0; i < 64; i++) {
		s1 = ROR(v[4], 6) ^ ROR(v[4], 11) ^ ROR(v[4], 25);
		t1 = v[7] + s1 + ((v[4] & v[5]) ^ (~v[4] & v[6])) + sha256_k[i] + w[i];
		s0 = ROR(v[0], 2) ^ ROR(v[0], 13) ^ ROR(v[0], 22);
		t2 = s0 + ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));
		memmove(v + 1, v, 7 * sizeof(v[0]));
		v[4] += t1;
		v[0] = t1 + t2;
	}
	for (i = 0; i < 8; i++)
		h[i] += v[i];
}

/* Every whole block, then the padded tail (one block or two). */
static void
digest(uint32_t *h, void (*block)(uint32_t *, const uint8_t *), const uint8_t *p, size_t len)
{
	uint8_t		tail[128];
	uint64_t	bits = (uint64_t)len * 8;
	size_t		rest, n;

	for (; len >= 64; p += 64, len -= 64)
		block(h, p);
	rest = len;
	memset(tail, 0, sizeof(tail));
	memcpy(tail, p, rest);
	tail[rest] = 0x80;
	n = rest + 1 + 8 <= 64 ? 64 : 128;
	put_be32(tail + n - 8, (uint32_t)(bits >> 32));
	put_be32(tail + n - 4, (uint32_t)bits);
	block(h, tail);
	if (n == 128)
		block(h, tail + 64);
}

void
sha1(const void *data, size_t len, uint8_t md[SHA1_LEN])
{
	uint32_t	h[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0 };
	int		i;

	digest(h, sha1_block, data, len);
	for (i = 0; i < 5; i++)
		put_be32(md + 4 * i, h[i]);
}

void
sha256(const void *data, size_t len, uint8_t md[SHA256_LEN])
{
	uint32_t	h[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
	    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
	int		i;

	digest(h, sha256_block, data, len);
	for (i = 0; i < 8; i++)
		put_be32(md + 4 * i, h[i]);
}

int
timingsafe_equal(const void *a, const void *b, size_t len)
{
	const unsigned char	*p = a, *q = b;
	volatile unsigned char	 diff = 0;
	size_t			 i;

	for (i = 0; i < len; i++)
		diff |= p[i] ^ q[i];
	return diff == 0;
}
