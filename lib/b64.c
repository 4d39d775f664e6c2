#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"

static const char	b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t
b64_encode_to(char *dst, const void *src, size_t len)
{
	const unsigned char	*s = src;
	char			*d = dst;
	unsigned		 v;
	size_t			 i;

	for (i = 0; i + 3 <= len; i += 3, d += 4) {
		v = (unsigned)s[i] << 16 | (unsigned)s[i + 1] << 8 | s[i + 2];
		d[0] = b64_alphabet[v >> 18];
		d[1] = b64_alphabet[v >> 12 & 63];
		d[2] = b64_alphabet[v >> 6 & 63];
		d[3] = b64_alphabet[v & 63];
	}
	if (i < len) {
		v = (unsigned)s[i] << 16 | (i + 1 < len ? (unsigned)s[i + 1] << 8 : 0);
		d[0] = b64_alphabet[v >> 18];
		d[1] = b64_alphabet[v >> 12 & 63];
		d[2] = i + 1 < len ? b64_alphabet[v >> 6 & 63] : '=';
		d[3] = '=';
		d += 4;
	}
	*d = '\0';
	return (size_t)(d - dst);
}

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
	static int	ready;
	int			i;

	if (!ready) {
		memset(b64_table, -1, sizeof(b64_table));
		for (i = 0; i < 64; i++)
			b64_table[(unsigned char)b64_alphabet[i]] = (signed char)i;
		ready = 1;
	}
	return b64_table[c];
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
	(void)b64_value('A');	/* fills the table */
	for (i = 0; i < body; i++)
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

void *
b64_decode(const char *src, size_t len, size_t *outlen, char *err, size_t errlen)
{
	const unsigned char	*s = (const unsigned char *)src;
	unsigned char		*dst, *d;
	size_t			 npad, i;
	unsigned		 v;

	if (b64_check(s, len, &npad, err, errlen) == -1)
		return NULL;
	if ((dst = malloc(len / 4 * 3 + 1)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	/* checked: whole quads, padding only at the end (its symbols decode as 0) */
	for (i = 0, d = dst; i < len; i += 4, d += 3) {
		v = (unsigned)(b64_table[s[i]] & 63) << 18 | (unsigned)(b64_table[s[i + 1]] & 63) << 12 |
		    (unsigned)(b64_table[s[i + 2]] & 63) << 6 | (unsigned)(b64_table[s[i + 3]] & 63);
		d[0] = v >> 16;
		d[1] = v >> 8 & 0xff;
		d[2] = v & 0xff;
	}
	*outlen = (size_t)(d - dst) - npad;
	return dst;
}
