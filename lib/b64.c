#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "b64.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <tmmintrin.h>
#endif

static const char	b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The two symbols of every 12 bits, as they lie in memory: 3 bytes are 2 lookups. */
static uint16_t	b64_pairs[4096];

static size_t
b64_encode_scalar(char *dst, const void *src, size_t len)
{
	static int		 ready;
	const unsigned char	*s = src;
	char			*d = dst, two[2];
	uint32_t		 v;
	size_t			 i;
	int			 k;

	if (!ready) {
		for (k = 0; k < 4096; k++) {
			two[0] = b64_alphabet[k >> 6];
			two[1] = b64_alphabet[k & 63];
			memcpy(&b64_pairs[k], two, sizeof(two));
		}
		ready = 1;
	}
	for (i = 0; i + 3 <= len; i += 3, d += 4) {
		v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
		memcpy(d, &b64_pairs[v >> 12], 2);
		memcpy(d + 2, &b64_pairs[v & 0xfff], 2);
	}
	if (len - i > 0) {
		v = (uint32_t)s[i] << 16 | (len - i > 1 ? (uint32_t)s[i + 1] << 8 : 0);
		d[0] = b64_alphabet[v >> 18];
		d[1] = b64_alphabet[v >> 12 & 63];
		d[2] = len - i > 1 ? b64_alphabet[v >> 6 & 63] : '=';
		d[3] = '=';
		d += 4;
	}
	*d = '\0';
	return (size_t)(d - dst);
}

#if defined(__x86_64__) && defined(__GNUC__)
/*
 * process/output and fs/readFile encode every byte they send, and the
 * table above costs some 20 instructions a 3 bytes: with SSSE3 (every
 * x86-64 CPU since 2006, checked at run time) 12 bytes go to 16 symbols
 * at a time.  Each 32-bit lane gets its 3 bytes as b1 b0 b2 b1; two
 * 16-bit multiplies move the four 6-bit groups into a byte each; a
 * 16-entry shuffle adds to each value the offset of its alphabet range.
 */
__attribute__((target("ssse3"))) static size_t
b64_encode_ssse3(char *dst, const void *src, size_t len)
{
	const unsigned char	*s = src;
	char			*d = dst;
	size_t			 i;
	const __m128i		 spread = _mm_setr_epi8(1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7,
				    10, 9, 11, 10);
	const __m128i		 offsets = _mm_setr_epi8(71, -4, -4, -4, -4, -4, -4, -4, -4,
				    -4, -4, -19, -16, 65, 0, 0);
	__m128i			 in, hi, lo, v, r;

	for (i = 0; len - i >= 16; i += 12, d += 16) {
		in = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(s + i)), spread);
		hi = _mm_mulhi_epu16(_mm_and_si128(in, _mm_set1_epi32(0x0fc0fc00)),
		    _mm_set1_epi32(0x04000040));
		lo = _mm_mullo_epi16(_mm_and_si128(in, _mm_set1_epi32(0x003f03f0)),
		    _mm_set1_epi32(0x01000010));
		v = _mm_or_si128(hi, lo);
		/* 0: 26..51, 1..12: 52..63, 13: 0..25 */
		r = _mm_or_si128(_mm_subs_epu8(v, _mm_set1_epi8(51)),
		    _mm_and_si128(_mm_cmpgt_epi8(_mm_set1_epi8(26), v), _mm_set1_epi8(13)));
		_mm_storeu_si128((__m128i *)d, _mm_add_epi8(v, _mm_shuffle_epi8(offsets, r)));
	}
	return (size_t)(d - dst) + b64_encode_scalar(d, s + i, len - i);
}

size_t
b64_encode_to(char *dst, const void *src, size_t len)
{
	static int	ssse3 = -1;

	if (ssse3 == -1)
		ssse3 = __builtin_cpu_supports("ssse3") ? 1 : 0;
	return ssse3 && len >= 16 ? b64_encode_ssse3(dst, src, len) :
	    b64_encode_scalar(dst, src, len);
}
#else
size_t
b64_encode_to(char *dst, const void *src, size_t len)
{
	return b64_encode_scalar(dst, src, len);
}
#endif

char *
b64_encode(const void *src, size_t len, size_t *outlen)
{
	char	*dst;
	size_t	 n;

	if ((dst = malloc(B64_ENCLEN(len) + 1)) == NULL)
		return NULL;
	n = b64_encode_to(dst, src, len);
	if (outlen != NULL)
		*outlen = n;
	return dst;
}

static int
b64_bad(char *err, size_t errlen, unsigned char c, size_t at)
{
	snprintf(err, errlen, "Invalid symbol %u, offset %zu.", c, at);
	return -1;
}

/* The alphabet's values, -1 elsewhere: the check runs over every byte of a large write. */
static signed char	b64_table[256];

static int
b64_value(unsigned char c)
{
	static int		ready;
	int			i;

	if (!ready) {
		memset(b64_table, -1, sizeof(b64_table));
		for (i = 0; i < 64; i++)
			b64_table[(unsigned char)b64_alphabet[i]] = (signed char)i;
		ready = 1;
	}
	return b64_table[c];
}

#define B64_RUN	32

/* B64_RUN symbols of the alphabet: written so that the compiler checks many at once */
static int
b64_run_ok(const unsigned char *s)
{
	unsigned char	c, bad = 0;
	int		k;

	for (k = 0; k < B64_RUN; k++) {
		c = s[k];
		bad |= !(((unsigned char)(c - 'A') < 26) | ((unsigned char)(c - 'a') < 26) |
		    ((unsigned char)(c - '0') < 10) | (c == '+') | (c == '/'));
	}
	return bad == 0;
}

/*
 * Validation follows the reference's decoder (Rust's base64, canonical
 * padding) step by step, so that errors are the same: a stray byte after
 * the last whole quad first, then the quads before the final one, then the
 * final quad's padding, length, padding count and unused bits.
 */
static int
b64_check(const unsigned char *s, size_t len, size_t *npad, char *err, size_t errlen)
{
	size_t	rem = len % 4, body, i, pad = 0, first_pad = 0, morsels = 0;
	int	v, last = 0;

	if (rem == 1 && s[len - 1] != '=' && b64_value(s[len - 1]) < 0)
		return b64_bad(err, errlen, s[len - 1], len - 1);
	/* the last quad, even a whole one, may carry padding: kept for the end */
	body = len - rem;
	body = rem == 0 && body >= 4 ? body - 4 : body;
	for (i = 0; i + B64_RUN <= body && b64_run_ok(s + i); i += B64_RUN)
		;
	(void)b64_value('A');	/* fills the table */
	for (; i < body; i++)
		if (b64_table[s[i]] < 0)
			return b64_bad(err, errlen, s[i], i);
	for (i = body; i < len; i++) {
		if (s[i] == '=') {
			if (i - body < 2)
				return b64_bad(err, errlen, '=', i);
			if (pad++ == 0)
				first_pad = i;
			continue;
		}
		if (pad > 0)
			return b64_bad(err, errlen, '=', first_pad);
		if ((v = b64_value(s[i])) < 0)
			return b64_bad(err, errlen, s[i], i);
		last = v;
		morsels++;
	}
	if (len > 0 && morsels < 2) {
		snprintf(err, errlen, "Invalid input length: %zu", body + morsels);
		return -1;
	}
	if ((pad + morsels) % 4 != 0) {
		snprintf(err, errlen, "Invalid padding");
		return -1;
	}
	/* bits of the last symbol that no output byte uses must be zero */
	if ((morsels == 2 && (last & 0x0f)) || (morsels == 3 && (last & 0x03))) {
		snprintf(err, errlen, "Invalid last symbol %u, offset %zu.", s[body + morsels - 1],
		    body + morsels - 1);
		return -1;
	}
	*npad = pad;
	return 0;
}

ssize_t
b64_valid(const char *src, size_t len, char *err, size_t errlen)
{
	size_t	npad;

	if (b64_check((const unsigned char *)src, len, &npad, err, errlen) == -1)
		return -1;
	/* checked input is whole quads, padding only in the last one */
	return (ssize_t)(len / 4 * 3 - npad);
}

/* The last quad of checked input, padded; returns the bytes written. */
static size_t
b64_quad(unsigned char *dst, const unsigned char *s, size_t n)
{
	uint32_t	v = 0;
	size_t		k, m = 0;

	for (k = 0; k < n && k < 4 && s[k] != '='; k++, m++)
		v |= (uint32_t)b64_table[s[k]] << (18 - 6 * k);
	dst[0] = v >> 16;
	if (m > 2)
		dst[1] = v >> 8 & 0xff;
	if (m > 3)
		dst[2] = v & 0xff;
	return m - 1;
}

/*
 * Per position in a quad, each symbol's bits placed in the 3 bytes out as
 * they lie in memory (a fourth byte zero): a quad is 4 lookups, 3 ORs and
 * one 4-byte store.
 */
static uint32_t	b64_quad_bits[4][256];

static void
b64_quad_init(void)
{
	unsigned char	b[4] = { 0 };
	uint32_t	v;
	int		c, k, x;

	(void)b64_value('A');	/* fills the table */
	for (k = 0; k < 4; k++)
		for (c = 0; c < 256; c++) {
			if ((x = b64_table[c]) < 0)
				continue;
			v = (uint32_t)x << (18 - 6 * k);
			b[0] = v >> 16;
			b[1] = v >> 8 & 0xff;
			b[2] = v & 0xff;
			memcpy(&b64_quad_bits[k][c], b, sizeof(uint32_t));
		}
}

size_t
b64_decode_to(unsigned char *dst, const char *src, size_t len)
{
	static int		 ready;
	const unsigned char	*s = (const unsigned char *)src;
	unsigned char		*d = dst;
	uint32_t		 v;
	size_t			 i = 0;

	if (!ready) {
		b64_quad_init();
		ready = 1;
	}
	/* while another quad follows, the fourth byte stored is overwritten by it */
	for (; i + 8 <= len; i += 4, d += 3) {
		v = b64_quad_bits[0][s[i]] | b64_quad_bits[1][s[i + 1]] |
		    b64_quad_bits[2][s[i + 2]] | b64_quad_bits[3][s[i + 3]];
		memcpy(d, &v, sizeof(v));
	}
	if (i < len)
		d += b64_quad(d, s + i, len - i);
	return (size_t)(d - dst);
}

void *
b64_decode(const char *src, size_t len, size_t *outlen, char *err, size_t errlen)
{
	unsigned char	*dst;
	ssize_t		 n;

	if ((n = b64_valid(src, len, err, errlen)) == -1)
		return NULL;
	if ((dst = malloc((size_t)n + 1)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	*outlen = b64_decode_to(dst, src, len);
	return dst;
}
