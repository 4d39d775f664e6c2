/*
 * Client strings in error messages, as the reference words them: Rust's
 * Debug form of a string (serde's "invalid type: string \"...\""), and
 * messages longer than a jx_err holds.  The reference echoes a client's
 * string whole, however long; a message cut to fit jx_err.msg (always at
 * a UTF-8 boundary, so that it can still be sent) is made whole again
 * when it is sent (jx_err_whole()).
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"

/*
 * What Rust's Debug escapes as \u{..}: controls, separators other than
 * ' ', format characters, private use, noncharacters, and the common
 * combining marks (Grapheme_Extend; the rarer scripts' ones are not listed).
 */
static const uint32_t rust_escaped[][2] = {
	{ 0x0000, 0x001f }, { 0x007f, 0x00a0 }, { 0x00ad, 0x00ad }, { 0x0300, 0x036f },
	{ 0x0483, 0x0489 }, { 0x0591, 0x05bd }, { 0x0600, 0x0605 }, { 0x061c, 0x061c },
	{ 0x064b, 0x065f }, { 0x06dd, 0x06dd }, { 0x070f, 0x070f }, { 0x1680, 0x1680 },
	{ 0x180e, 0x180e }, { 0x1ab0, 0x1aff }, { 0x1dc0, 0x1dff }, { 0x2000, 0x200f },
	{ 0x2028, 0x202f }, { 0x205f, 0x206f }, { 0x20d0, 0x20ff }, { 0x3000, 0x3000 },
	{ 0xd800, 0xf8ff }, { 0xfe00, 0xfe0f }, { 0xfe20, 0xfe2f }, { 0xfeff, 0xfeff },
	{ 0xfff0, 0xfffb }, { 0xfffe, 0xffff }, { 0xe0000, 0xe0fff }, { 0xf0000, 0x10ffff },
};

int
jx_rust_escaped(uint32_t cp)
{
	size_t	k;

	for (k = 0; k < sizeof(rust_escaped) / sizeof(rust_escaped[0]); k++)
		if (cp >= rust_escaped[k][0] && cp <= rust_escaped[k][1])
			return 1;
	return 0;
}

/*
 * The code point at p (left bytes); *n its length.  Bytes that are not
 * UTF-8 are U+FFFD, one byte each; C0 80 (a NUL as jx_id() keeps it) is 0.
 */
static uint32_t
next_cp(const unsigned char *p, size_t left, size_t *n)
{
	uint32_t	cp, min;
	size_t		len, i;

	*n = 1;
	if (p[0] < 0x80)
		return p[0];
	if (left >= 2 && p[0] == 0xc0 && p[1] == 0x80) {
		*n = 2;
		return 0;
	}
	if ((p[0] & 0xe0) == 0xc0) {
		len = 2, cp = p[0] & 0x1f, min = 0x80;
	} else if ((p[0] & 0xf0) == 0xe0) {
		len = 3, cp = p[0] & 0x0f, min = 0x800;
	} else if ((p[0] & 0xf8) == 0xf0) {
		len = 4, cp = p[0] & 0x07, min = 0x10000;
	} else
		return 0xfffd;
	if (len > left)
		return 0xfffd;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0xfffd;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0xfffd;
	*n = len;
	return cp;
}

int
jx_debug_str(struct buf *b, const char *s, size_t len)
{
	static const char	 from[] = "\"\\\t\r\n", to[] = "\"\\trn";
	const unsigned char	*p = (const unsigned char *)s;
	const char		*e;
	char			 esc[16];
	size_t			 i, n;
	uint32_t		 cp;
	int			 r;

	r = buf_append(b, "\"", 1);
	for (i = 0; i < len && r == 0; i += n) {
		cp = next_cp(p + i, len - i, &n);
		if (cp == 0)
			r = buf_append(b, "\\0", 2);
		else if (cp < 0x80 && (e = strchr(from, (int)cp)) != NULL) {
			esc[0] = '\\';
			esc[1] = to[e - from];
			r = buf_append(b, esc, 2);
		} else if (jx_rust_escaped(cp)) {
			snprintf(esc, sizeof(esc), "\\u{%x}", (unsigned)cp);
			r = buf_append(b, esc, strlen(esc));
		} else if (cp == 0xfffd && n == 1)
			r = buf_append(b, "\xef\xbf\xbd", 3);
		else
			r = buf_append(b, p + i, n);
	}
	return r == 0 ? buf_append(b, "\"", 1) : -1;
}

/* the last message jx_err_setn() cut, whole, and the length of its cut */
static char	*whole;
static size_t	 whole_cut;

void
jx_err_setn(struct jx_err *e, const void *text, size_t len)
{
	const unsigned char	*t = text;
	size_t			 n = len;

	if (n >= sizeof(e->msg)) {
		n = sizeof(e->msg) - 1;
		while (n > 0 && (t[n] & 0xc0) == 0x80)
			n--;
		free(whole);
		if ((whole = malloc(len + 1)) != NULL) {
			memcpy(whole, t, len);
			whole[len] = '\0';
			whole_cut = n;
		}
	}
	memcpy(e->msg, t, n);
	e->msg[n] = '\0';
}

const char *
jx_err_whole(const char *msg)
{
	if (whole != NULL && strlen(msg) == whole_cut && strncmp(msg, whole, whole_cut) == 0)
		return whole;
	return msg;
}

/* "invalid type: <what>, expected <expected>" with what a string's Debug form */
int
jx_type_error_str(struct jx_err *e, const char *pre, json_t *v, const char *post)
{
	struct buf	b = { 0 };

	if (buf_append(&b, pre, strlen(pre)) == -1 ||
	    jx_debug_str(&b, json_string_value(v), json_string_length(v)) == -1 ||
	    buf_append(&b, post, strlen(post)) == -1)
		snprintf(e->msg, sizeof(e->msg), "out of memory");
	else
		jx_err_setn(e, b.data, b.len);
	buf_free(&b);
	return -1;
}

char *
jx_utf8_lossy(const char *s)
{
	const unsigned char	*p = (const unsigned char *)s;
	struct buf		 b = { 0 };
	size_t			 i, n, len = strlen(s);
	uint32_t		 cp;

	for (i = 0; i < len; i += n) {
		cp = next_cp(p + i, len - i, &n);
		if (buf_append(&b, cp == 0xfffd && n == 1 ? (const void *)"\xef\xbf\xbd" :
		    (const void *)(p + i), cp == 0xfffd && n == 1 ? 3 : n) == -1) {
			buf_free(&b);
			return NULL;
		}
	}
	if (buf_append(&b, "", 1) == -1) {
		buf_free(&b);
		return NULL;
	}
	return (char *)b.data;
}
