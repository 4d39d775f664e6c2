/*
 * serde_json's reader, the level below values: errors at the read index,
 * fix-ups for jansson, strings and their escapes, and the UTF-8 they are
 * checked as.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "rpc/rpc_scan.h"
#include "rpc/rpc_scan_int.h"

/* serde's error(): at the read index */
int
scan_error(struct scan *s, enum scan_err e)
{
	s->err = e;
	s->epos = s->i;
	return -1;
}

/* Replace bytes for jansson, keeping every offset. */
int
scan_fix(struct scan *s, size_t off, size_t n, const char *with)
{
	size_t	wlen = strlen(with);

	if (wlen > n)		/* not so: see scan_number() and scan_unicode_escape() */
		return 0;
	if (s->fixed == NULL) {
		if ((s->fixed = malloc(s->len)) == NULL)
			return scan_error(s, SE_NOMEM);
		memcpy(s->fixed, s->p, s->len);
	}
	memcpy(s->fixed + off, with, wlen);
	memset(s->fixed + off + wlen, ' ', n - wlen);
	return 0;
}

/* Strict UTF-8, as Rust's str::from_utf8. */
int
utf8_valid(const uint8_t *p, size_t n)
{
	size_t	i = 0, need;
	uint8_t	c, lo, hi;

	while (i < n) {
		if ((c = p[i++]) < 0x80)
			continue;
		lo = 0x80;
		hi = 0xbf;
		if (c >= 0xc2 && c <= 0xdf)
			need = 1;
		else if (c >= 0xe0 && c <= 0xef) {
			need = 2;
			lo = c == 0xe0 ? 0xa0 : lo;
			hi = c == 0xed ? 0x9f : hi;
		} else if (c >= 0xf0 && c <= 0xf4) {
			need = 3;
			lo = c == 0xf0 ? 0x90 : lo;
			hi = c == 0xf4 ? 0x8f : hi;
		} else
			return 0;
		for (; need > 0; need--, i++, lo = 0x80, hi = 0xbf)
			if (i >= n || p[i] < lo || p[i] > hi)
				return 0;
	}
	return 1;
}

/* The code point at p (valid UTF-8); *n gets its length. */
uint32_t
utf8_decode(const uint8_t *p, size_t *n)
{
	if (p[0] < 0x80) {
		*n = 1;
		return p[0];
	}
	if (p[0] < 0xe0) {
		*n = 2;
		return (uint32_t)(p[0] & 0x1f) << 6 | (p[1] & 0x3f);
	}
	if (p[0] < 0xf0) {
		*n = 3;
		return (uint32_t)(p[0] & 0x0f) << 12 | (uint32_t)(p[1] & 0x3f) << 6 |
		    (p[2] & 0x3f);
	}
	*n = 4;
	return (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3f) << 12 |
	    (uint32_t)(p[2] & 0x3f) << 6 | (p[3] & 0x3f);
}

int
utf8_put(struct buf *b, uint32_t cp)
{
	uint8_t	u[4];
	size_t	n;

	if (cp < 0x80) {
		u[0] = cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = 0xc0 | cp >> 6;
		u[1] = 0x80 | (cp & 0x3f);
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = 0xe0 | cp >> 12;
		u[1] = 0x80 | (cp >> 6 & 0x3f);
		u[2] = 0x80 | (cp & 0x3f);
		n = 3;
	} else {
		u[0] = 0xf0 | cp >> 18;
		u[1] = 0x80 | (cp >> 12 & 0x3f);
		u[2] = 0x80 | (cp >> 6 & 0x3f);
		u[3] = 0x80 | (cp & 0x3f);
		n = 4;
	}
	return buf_append(b, u, n);
}

static int
scan_hex4(struct scan *s, uint32_t *cp)
{
	size_t	k;
	int	c, bad = 0;

	if (s->len - s->i < 4) {
		s->i = s->len;
		return scan_error(s, SE_EOF_STRING);
	}
	for (*cp = 0, k = 0; k < 4; k++) {
		c = s->p[s->i + k];
		if (is_digit(c))
			*cp = *cp << 4 | (uint32_t)(c - '0');
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			*cp = *cp << 4 | (uint32_t)((c | 0x20) - 'a' + 10);
		else
			bad = 1;
	}
	s->i += 4;
	return bad ? scan_error(s, SE_ESCAPE) : 0;
}

/* After "\u"; surrogates as serde_json pairs them. */
static int
scan_unicode_escape(struct scan *s, struct buf *key)
{
	uint32_t	cp, lo;
	size_t		hex = s->i;

	if (scan_hex4(s, &cp) == -1)
		return -1;
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return scan_error(s, SE_LONE_SURROGATE);
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (s->i >= s->len)
			return scan_error(s, SE_EOF_STRING);
		if (s->p[s->i++] != '\\')
			return scan_error(s, SE_HEX_END);
		if (s->i >= s->len)
			return scan_error(s, SE_EOF_STRING);
		if (s->p[s->i++] != 'u')
			return scan_error(s, SE_HEX_END);
		if (scan_hex4(s, &lo) == -1)
			return -1;
		if (lo < 0xdc00 || lo > 0xdfff)
			return scan_error(s, SE_LONE_SURROGATE);
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	if (key == NULL)
		return 0;
	/*
	 * jansson's reader refuses NUL in keys: U+FFFF stands in, and
	 * rpc_parse() puts the NULs back once the tree is built.
	 */
	if (cp == 0) {
		if (scan_fix(s, hex, 4, "ffff") == -1)
			return -1;
		s->key_nul = 1;
	}
	return utf8_put(key, cp) == -1 ? scan_error(s, SE_NOMEM) : 0;
}

static int
scan_escape(struct scan *s, struct buf *key)
{
	static const char	 from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char		*e;
	int			 c;

	if (s->i >= s->len)
		return scan_error(s, SE_EOF_STRING);
	if ((c = s->p[s->i++]) == 'u')
		return scan_unicode_escape(s, key);
	if (c == '\0' || (e = strchr(from, c)) == NULL)
		return scan_error(s, SE_ESCAPE);
	if (key != NULL && utf8_put(key, (uint8_t)to[e - from]) == -1)
		return scan_error(s, SE_NOMEM);
	return 0;
}

/*
 * 8 bytes none of which ends a plain run: no control byte, quote,
 * backslash or byte of a multi-byte character (a long base64 string is
 * read 8 bytes a step).
 */
static int
plain8(const uint8_t *p)
{
	const uint64_t	ones = 0x0101010101010101ULL, highs = ones << 7;
	uint64_t	w, q, b;

	memcpy(&w, p, sizeof(w));
	q = w ^ ones * '"';
	b = w ^ ones * '\\';
	/* a zero byte in q or b, a byte below 0x20 in w, a high bit in w */
	return (((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w) | w) &
	    highs ? 0 : 1;
}

/*
 * After the opening quote.  serde checks a string's UTF-8 only once it has
 * read the closing quote; key, when not NULL, gets the decoded string.
 * s->escaped tells whether the text held an escape.
 */
int
scan_string(struct scan *s, struct buf *key)
{
	size_t	run = s->i;
	int	bad = 0, high = 0, c;

	s->escaped = 0;
	for (;;) {
		while (s->len - s->i >= 8 && plain8(s->p + s->i))
			s->i += 8;
		if (s->i >= s->len)
			return scan_error(s, SE_EOF_STRING);
		c = s->p[s->i];
		if (c == '"' || c == '\\') {
			/* a run of ASCII is UTF-8 */
			bad |= high && !utf8_valid(s->p + run, s->i - run);
			if (key != NULL && buf_append(key, s->p + run, s->i - run) == -1)
				return scan_error(s, SE_NOMEM);
			s->i++;
			if (c == '"')
				return bad ? scan_error(s, SE_UNICODE) : 0;
			s->escaped = 1;
			if (scan_escape(s, key) == -1)
				return -1;
			run = s->i;
			high = 0;
		} else {
			s->i++;
			if (c < 0x20)
				return scan_error(s, SE_CONTROL);
			high |= c >= 0x80;
		}
	}
}

int
unicode_blank(const uint8_t *p, size_t len)
{
	size_t		i, n;
	uint32_t	c;

	for (i = 0; i < len; i += n) {
		c = utf8_decode(p + i, &n);
		if (!((c >= 0x09 && c <= 0x0d) || c == 0x20 || c == 0x85 || c == 0xa0 ||
		    c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 ||
		    c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000))
			return 0;
	}
	return 1;
}
