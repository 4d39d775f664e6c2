#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "b64.h"

size_t
b64_encode_to(char *dst, const void *src, size_t len)
{
	size_t	done = 0, step, out = 0;

	/* EVP_EncodeBlock takes an int length: go in bounded steps of 3n bytes. */
	while (done < len) {
		step = len - done;
		if (step > 3 * 1024 * 1024)
			step = 3 * 1024 * 1024;
		out += (size_t)EVP_EncodeBlock((unsigned char *)dst + out,
		    (const unsigned char *)src + done, (int)step);
		done += step;
	}
	dst[out] = '\0';
	return out;
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
b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/*
 * Validation follows the reference's decoder (canonical padding required):
 * it reports the first offending byte, then length, then the last symbol's
 * unused bits, then padding.
 */
static int
b64_check(const unsigned char *s, size_t len, size_t *npad, char *err, size_t errlen)
{
	size_t	i, data = len, pad = 0;
	int	v;

	while (data > 0 && s[data - 1] == '=' && pad < 2) {
		data--;
		pad++;
	}
	for (i = 0; i < data; i++) {
		if (b64_value(s[i]) < 0) {
			snprintf(err, errlen, "Invalid symbol %u, offset %zu.", s[i], i);
			return -1;
		}
	}
	/* '=' after a whole quad is not padding but a stray symbol */
	if (pad > 0 && data % 4 == 0) {
		snprintf(err, errlen, "Invalid symbol %u, offset %zu.", '=', data);
		return -1;
	}
	if (data % 4 == 1) {
		snprintf(err, errlen, "Invalid input length.");
		return -1;
	}
	if (data > 0) {
		v = b64_value(s[data - 1]);
		if ((data % 4 == 2 && (v & 0x0f)) || (data % 4 == 3 && (v & 0x03))) {
			snprintf(err, errlen, "Invalid last symbol %u, offset %zu.",
			    s[data - 1], data - 1);
			return -1;
		}
	}
	if ((data + pad) % 4 != 0 || (data % 4 == 0 && pad != 0)) {
		snprintf(err, errlen, "Invalid padding");
		return -1;
	}
	*npad = pad;
	return 0;
}

void *
b64_decode(const char *src, size_t len, size_t *outlen, char *err, size_t errlen)
{
	const unsigned char	*s = (const unsigned char *)src;
	unsigned char		*dst;
	size_t			 npad, done = 0, out = 0, step;
	int			 n;

	if (b64_check(s, len, &npad, err, errlen) == -1)
		return NULL;
	if ((dst = malloc(len / 4 * 3 + 1)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	while (done < len) {
		step = len - done;
		if (step > 4 * 1024 * 1024)
			step = 4 * 1024 * 1024;
		n = EVP_DecodeBlock(dst + out, s + done, (int)step);
		if (n < 0) {
			free(dst);
			snprintf(err, errlen, "Invalid input length.");
			return NULL;
		}
		out += (size_t)n;
		done += step;
	}
	*outlen = out - npad;
	return dst;
}
