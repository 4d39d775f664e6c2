/*
 * serde_json's reader (de.rs and read.rs), walked over the bytes: the same
 * grammar, the same order of checks, and errors at the same read index, so
 * that texts and positions match the reference's.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "rpc/rpc_scan.h"
#include "rpc/rpc_scan_int.h"

/* serde_json's ErrorCode texts */
static const char *const scan_msgs[] = {
	[SE_NONE] = "",
	[SE_NOMEM] = "out of memory",
	[SE_EOF_LIST] = "EOF while parsing a list",
	[SE_EOF_OBJECT] = "EOF while parsing an object",
	[SE_EOF_STRING] = "EOF while parsing a string",
	[SE_EOF_VALUE] = "EOF while parsing a value",
	[SE_COLON] = "expected `:`",
	[SE_LIST_COMMA] = "expected `,` or `]`",
	[SE_OBJECT_COMMA] = "expected `,` or `}`",
	[SE_IDENT] = "expected ident",
	[SE_VALUE] = "expected value",
	[SE_ESCAPE] = "invalid escape",
	[SE_NUMBER] = "invalid number",
	[SE_UNICODE] = "invalid unicode code point",
	[SE_CONTROL] = "control character (\\u0000-\\u001F) found while parsing a string",
	[SE_KEY] = "key must be a string",
	[SE_LONE_SURROGATE] = "lone leading surrogate in hex escape",
	[SE_HEX_END] = "unexpected end of hex escape",
	[SE_TRAILING_COMMA] = "trailing comma",
	[SE_TRAILING] = "trailing characters",
	[SE_RECURSION] = "recursion limit exceeded",
	[SE_DUPLICATE] = "duplicate JSON object key",
	[SE_VALUES] = "JSON-RPC message exceeds the limit of 262144 JSON values",
};

/*
 * Where a value sits: the numbers the classifier judges as written, and
 * the method and the params' strings that rpc_parse() may keep out of jansson.
 */
enum watch { W_NONE, W_ROOT, W_ID, W_IN_ID, W_ERROR, W_CODE, W_METHOD, W_PARAMS, W_PARAM };

static int	scan_value(struct scan *, enum watch);

/* serde's peek_error(): one past the read index, the byte it looked at */
static int
scan_peek_error(struct scan *s, enum scan_err e)
{
	s->err = e;
	s->epos = s->i < s->len ? s->i + 1 : s->len;
	return -1;
}

static int
scan_peek(const struct scan *s)
{
	return s->i < s->len ? s->p[s->i] : -1;
}

static int
scan_skip_ws(struct scan *s)
{
	while (s->i < s->len && (s->p[s->i] == ' ' || s->p[s->i] == '\n' ||
	    s->p[s->i] == '\t' || s->p[s->i] == '\r'))
		s->i++;
	return scan_peek(s);
}

static int
scan_ident(struct scan *s, const char *rest)
{
	for (; *rest != '\0'; rest++) {
		if (s->i >= s->len)
			return scan_error(s, SE_EOF_VALUE);
		if (s->p[s->i++] != *rest)
			return scan_error(s, SE_IDENT);
	}
	return 0;
}

/* digits (no sign, no leading zero) <= max */
static int
digits_le(const uint8_t *d, size_t n, const char *max)
{
	size_t	mlen = strlen(max);

	return n < mlen || (n == mlen && memcmp(d, max, n) <= 0);
}

static enum scan_num
number_kind(const uint8_t *p, size_t n, int real)
{
	char	*tmp;
	double	 v;
	int	 neg = p[0] == '-';

	if (real) {
		if ((tmp = strndup((const char *)p, n)) == NULL)
			return NUM_NONE;
		v = strtod(tmp, NULL);
		free(tmp);
		return isinf(v) ? NUM_HUGE : NUM_REAL;
	}
	p += neg;
	n -= neg;
	if (digits_le(p, n, neg ? "9223372036854775808" : "9223372036854775807"))
		return NUM_I64;
	if (!neg && digits_le(p, n, "18446744073709551615"))
		return NUM_U64;
	if (!neg && digits_le(p, n, "340282366920938463463374607431768211455"))
		return NUM_U128;
	if (neg && digits_le(p, n, "170141183460469231731687303715884105728"))
		return NUM_I128;
	return NUM_HUGE;
}

static int
scan_number(struct scan *s, enum watch w)
{
	size_t		start = s->i;
	int		real = 0, c;
	enum scan_num	k;

	if (s->p[s->i] == '-')
		s->i++;
	if (s->i >= s->len)
		return scan_error(s, SE_EOF_VALUE);
	c = s->p[s->i++];
	if (c == '0') {
		if (is_digit(scan_peek(s)))
			return scan_peek_error(s, SE_NUMBER);
	} else if (is_digit(c)) {
		while (is_digit(scan_peek(s)))
			s->i++;
	} else
		return scan_error(s, SE_NUMBER);
	if (scan_peek(s) == '.') {
		real = 1;
		s->i++;
		if (!is_digit(c = scan_peek(s)))
			return scan_peek_error(s, c == -1 ? SE_EOF_VALUE : SE_NUMBER);
		while (is_digit(scan_peek(s)))
			s->i++;
	}
	if (scan_peek(s) == 'e' || scan_peek(s) == 'E') {
		real = 1;
		s->i++;
		if (scan_peek(s) == '+' || scan_peek(s) == '-')
			s->i++;
		if (s->i >= s->len)
			return scan_error(s, SE_EOF_VALUE);
		if (!is_digit(s->p[s->i++]))
			return scan_error(s, SE_NUMBER);
		while (is_digit(scan_peek(s)))
			s->i++;
	}
	if ((k = number_kind(s->p + start, s->i - start, real)) == NUM_NONE)
		return scan_error(s, SE_NOMEM);
	if (w == W_ID)
		s->id_kind = k;
	else if (w == W_CODE)
		s->code_kind = k;
	/* serde buffers an untagged enum's input, and has no room for 128 bits */
	if ((w == W_ID || w == W_IN_ID) && s->id_wide == NUM_NONE &&
	    (k == NUM_U128 || k == NUM_I128)) {
		s->id_wide = k;
		s->id_off = start;
		s->id_len = s->i - start;
	}
	if (k == NUM_U64)
		return scan_fix(s, start, s->i - start, "9223372036854775807");
	if (k != NUM_I64 && k != NUM_REAL)
		return scan_fix(s, start, s->i - start, s->p[start] == '-' ? "-1e308" : "1e308");
	return 0;
}

/* serde's check_recursion, on the bracket */
static int
scan_enter(struct scan *s)
{
	if (--s->depth == 0)
		return scan_peek_error(s, SE_RECURSION);
	s->i++;
	return 0;
}

/* What a member (key) or element (key NULL, at index) of a watched value is. */
static enum watch
scan_child_watch(enum watch w, const struct buf *key, size_t index)
{
	if (w == W_ID || w == W_IN_ID)
		return W_IN_ID;
	if (key == NULL)	/* the error object's tuple form starts with its code */
		return w == W_ERROR && index == 0 ? W_CODE : W_NONE;
	if (w == W_PARAMS)
		return W_PARAM;
	if (w == W_ROOT && key->len == 6 && memcmp(key->data, "method", 6) == 0)
		return W_METHOD;
	if (w == W_ROOT && key->len == 6 && memcmp(key->data, "params", 6) == 0)
		return W_PARAMS;
	if (w == W_ROOT && key->len == 2 && memcmp(key->data, "id", 2) == 0)
		return W_ID;
	if (w == W_ROOT && key->len == 5 && memcmp(key->data, "error", 5) == 0)
		return W_ERROR;
	if (w == W_ERROR && key->len == 4 && memcmp(key->data, "code", 4) == 0)
		return W_CODE;
	return W_NONE;
}

static int
scan_array(struct scan *s, enum watch w)
{
	size_t	n;
	int	c;

	if (scan_enter(s) == -1)
		return -1;
	for (n = 0; (c = scan_skip_ws(s)) != ']'; n++) {
		if (c == -1)
			return scan_peek_error(s, SE_EOF_LIST);
		if (n > 0) {
			if (c != ',')
				return scan_peek_error(s, SE_LIST_COMMA);
			s->i++;
			if ((c = scan_skip_ws(s)) == ']')
				return scan_peek_error(s, SE_TRAILING_COMMA);
			if (c == -1)
				return scan_peek_error(s, SE_EOF_VALUE);
		}
		if (scan_value(s, scan_child_watch(w, NULL, n)) == -1)
			return -1;
	}
	s->i++;
	s->depth++;
	return 0;
}

/* One member after a '"'; seen holds the keys so far. */
static int
scan_member(struct scan *s, json_t *seen, enum watch w)
{
	const char	*k;
	enum watch	 child;
	int		 c;

	s->i++;
	buf_reset(&s->key);
	if (scan_string(s, &s->key) == -1)
		return -1;
	k = s->key.len > 0 ? (const char *)s->key.data : "";
	if (json_object_getn(seen, k, s->key.len) != NULL)
		return scan_error(s, SE_DUPLICATE);
	if (json_object_setn_new_nocheck(seen, k, s->key.len, json_null()) == -1)
		return scan_error(s, SE_NOMEM);
	child = scan_child_watch(w, &s->key, 0);
	if ((c = scan_skip_ws(s)) != ':')
		return scan_peek_error(s, c == -1 ? SE_EOF_OBJECT : SE_COLON);
	s->i++;
	return scan_value(s, child);
}

/* The keys seen so far in the object read at this depth; sets are reused. */
static json_t *
scan_seen(struct scan *s)
{
	json_t	**set = &s->seen[s->depth];

	if (*set == NULL)
		return *set = json_object();
	json_object_clear(*set);
	return *set;
}

static int
scan_object(struct scan *s, enum watch w)
{
	json_t	*seen;
	size_t	 n;
	int	 c;

	if (scan_enter(s) == -1)
		return -1;
	if ((seen = scan_seen(s)) == NULL)
		return scan_error(s, SE_NOMEM);
	for (n = 0; (c = scan_skip_ws(s)) != '}'; n++) {
		if (c == -1)
			return scan_peek_error(s, SE_EOF_OBJECT);
		if (n > 0) {
			if (c != ',')
				return scan_peek_error(s, SE_OBJECT_COMMA);
			s->i++;
			c = scan_skip_ws(s);
		}
		if (c != '"')
			return scan_peek_error(s, c == '}' ? SE_TRAILING_COMMA :
			    c == -1 ? SE_EOF_VALUE : SE_KEY);
		if (scan_member(s, seen, w) == -1)
			return -1;
	}
	s->i++;
	s->depth++;
	return 0;
}

/* A string value after its opening quote: root.method and a long params member noted. */
static int
scan_string_value(struct scan *s, enum watch w)
{
	size_t	start = s->i, len;

	if (scan_string(s, NULL) == -1)
		return -1;
	len = s->i - 1 - start;
	if (s->escaped)
		return 0;
	if (w == W_METHOD) {
		s->method_off = start;
		s->method_len = len;
	} else if (w == W_PARAM && len >= SCAN_BLOB_MIN && len > s->blob_len) {
		buf_reset(&s->blob_key);
		if (s->key.len > 0 && buf_append(&s->blob_key, s->key.data, s->key.len) == -1)
			return scan_error(s, SE_NOMEM);
		s->blob_off = start;
		s->blob_len = len;
	}
	return 0;
}

/*
 * The reference counts each value as it begins, before looking at it: the
 * one past the limit is refused at its first byte, even at the end of input.
 */
static int
scan_value(struct scan *s, enum watch w)
{
	int	c = scan_skip_ws(s);

	if (++s->values > RPC_MAX_VALUES)
		return scan_error(s, SE_VALUES);
	switch (c) {
	case -1:
		return scan_peek_error(s, SE_EOF_VALUE);
	case 'n':
		s->i++;
		return scan_ident(s, "ull");
	case 't':
		s->i++;
		return scan_ident(s, "rue");
	case 'f':
		s->i++;
		return scan_ident(s, "alse");
	case '"':
		s->i++;
		return scan_string_value(s, w);
	case '[':
		return scan_array(s, w);
	case '{':
		return scan_object(s, w);
	case '-':
		return scan_number(s, w);
	default:
		if (is_digit(scan_peek(s)))
			return scan_number(s, w);
		return scan_peek_error(s, SE_VALUE);
	}
}

int
scan_json(struct scan *s, const uint8_t *p, size_t len)
{
	memset(s, 0, sizeof(*s));
	s->p = p;
	s->len = len;
	s->depth = SERDE_DEPTH;
	return scan_value(s, W_ROOT);
}

int
scan_trailing(struct scan *s)
{
	if (scan_skip_ws(s) != -1)
		return scan_peek_error(s, SE_TRAILING);
	return 0;
}

/* Lines and columns counted in bytes, the column being the index's offset in its line. */
int
scan_error_text(const struct scan *s, struct buf *out)
{
	size_t	k, line = 1, start = 0;
	char	pos[64];

	if (buf_append(out, scan_msgs[s->err], strlen(scan_msgs[s->err])) == -1)
		return -1;
	if (s->err == SE_DUPLICATE && (buf_append(out, " `", 2) == -1 ||
	    buf_append(out, s->key.data, s->key.len) == -1 || buf_append(out, "`", 1) == -1))
		return -1;
	if (s->err == SE_NOMEM)
		return 0;
	for (k = 0; k < s->epos; k++)
		if (s->p[k] == '\n') {
			line++;
			start = k + 1;
		}
	snprintf(pos, sizeof(pos), " at line %zu column %zu", line, s->epos - start);
	return buf_append(out, pos, strlen(pos));
}

void
scan_free(struct scan *s)
{
	size_t	k;

	for (k = 0; k < SERDE_DEPTH; k++)
		json_decref(s->seen[k]);
	free(s->fixed);
	s->fixed = NULL;
	buf_free(&s->key);
	buf_free(&s->blob_key);
}
