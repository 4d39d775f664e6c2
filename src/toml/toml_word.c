/*
 * A value that is not a string, array or inline table: a "word", read as
 * the reference reads it.
 *
 * Why: the reference does not read a number or date character by
 * character from where it starts.  Its first pass (toml_shape.c) cuts the
 * value out whole: a run of anything but . = , [ ] { } blanks # CR LF,
 * joined to the runs after it by dots, and by blanks when another run
 * follows ("1979-05-27 07:32:00", "tru e").  Its second pass then decides
 * from the word's first characters what it must be (a sign, "0x", digits
 * then '-' or ':' for a date, '.' or 'e' for a float, t/f/i/n for a
 * symbol) and says what is wrong with the whole word in those terms: the
 * error for "0x1\"F" is at the quote, "invalid hexadecimal number".  This
 * file is that second pass, for one word; toml_number.c turns what it
 * decided into a value.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "toml/toml.h"
#include "toml/toml_int.h"

struct word {
	struct tparser	*P;
	const char	*s;		/* the whole word */
	size_t		 len;
};

enum wkind { W_INT, W_FLOAT, W_DATETIME, W_TRUE, W_FALSE, W_INF, W_NAN };

#define E_NOTHING	", expected nothing"

static int
is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int
is_hex(int c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* An error at the word's bytes [a, b) (one caret when empty). */
static int
werr(struct word *W, size_t a, size_t b, const char *msg, const char *exp)
{
	return tp_fail(W->P, W->s + a, b > a ? b - a : 1, "%s%s", msg, exp);
}

static int
contains(const char *s, size_t len, int c)
{
	return memchr(s, c, len) != NULL;
}

static int
ends_with(const struct word *W, const char *t)
{
	size_t	n = strlen(t);

	return W->len >= n && memcmp(W->s + W->len - n, t, n) == 0;
}

/* Not a number, date or symbol: a string without its quotes. */
static int
invalid(struct word *W)
{
	if (ends_with(W, "'''"))
		return werr(W, 0, 0, "missing opening quote", ", expected `'''`");
	if (ends_with(W, "\"\"\""))
		return werr(W, 0, 0, "missing opening quote", ", expected `\"\"\"`");
	if (ends_with(W, "'"))
		return werr(W, 0, 0, "missing opening quote", ", expected `'`");
	if (ends_with(W, "\""))
		return werr(W, 0, 0, "missing opening quote", ", expected `\"`");
	return werr(W, 0, W->len, "string values must be quoted", ", expected literal string");
}

/* Digits and underscores from *at; how many digits, the reference's checks. */
static int
dec_uint(struct word *W, size_t *at, int zero_ok, const char *what)
{
	size_t	start = *at, digits = 0;

	for (; *at < W->len && (is_digit((unsigned char)W->s[*at]) || W->s[*at] == '_'); (*at)++)
		digits += W->s[*at] != '_';
	if (digits == 0)
		return werr(W, start, start, what, ", expected digits");
	if (digits > 1 && W->s[start] == '0' && !zero_ok)
		return werr(W, start, start + 1, "unexpected leading zero", E_NOTHING);
	return 0;
}

/* mantissa [. fraction] [e [sign] exponent], from byte from, to the end. */
static int
ensure_float(struct word *W, size_t from)
{
	size_t	at = from;

	if (dec_uint(W, &at, 0, "invalid mantissa") == -1)
		return -1;
	if (at < W->len && W->s[at] == '.') {
		at++;
		if (dec_uint(W, &at, 1, "invalid fraction") == -1)
			return -1;
	}
	if (at < W->len && (W->s[at] == 'e' || W->s[at] == 'E')) {
		at++;
		if (at < W->len && (W->s[at] == '+' || W->s[at] == '-'))
			at++;
		if (dec_uint(W, &at, 1, "invalid exponent") == -1)
			return -1;
	}
	if (at < W->len)
		return werr(W, at, W->len, "invalid float", E_NOTHING);
	return 0;
}

/* Underscores only between digits, from byte from. */
static int
underscores(struct word *W, size_t from, int flt)
{
	size_t	i;
	int	before, after;

	for (i = from; i < W->len; i++) {
		if (W->s[i] != '_')
			continue;
		before = i > from ? (flt ? is_digit((unsigned char)W->s[i - 1]) :
		    is_hex((unsigned char)W->s[i - 1])) || W->s[i - 1] == '_' : 0;
		after = i + 1 < W->len && (flt ? is_digit((unsigned char)W->s[i + 1]) :
		    is_hex((unsigned char)W->s[i + 1]));
		if (!before || !after)
			return werr(W, i, i + 1, "`_` may only go between digits", E_NOTHING);
	}
	return 0;
}

static int
no_leading_zero(struct word *W, size_t at)
{
	if (at < W->len && W->s[at] == '0')
		return werr(W, at, at + 1, "unexpected leading zero", E_NOTHING);
	return 0;
}

/* The digits of a radix integer from byte from. */
static int
radixed(struct word *W, size_t from, int base)
{
	static const char	*bad[] = { "invalid binary number", "invalid octal number",
	    "invalid hexadecimal number" };
	const char		*why = bad[base == 2 ? 0 : base == 8 ? 1 : 2];
	size_t			 i;
	int			 c, ok;

	if (from < W->len && (W->s[from] == '+' || W->s[from] == '-')) {
		/* the reference points at the word's first sign */
		for (i = 0; W->s[i] != '+' && W->s[i] != '-'; i++)
			;
		return werr(W, i, i + 1, "unexpected sign", E_NOTHING);
	}
	for (i = from; i < W->len; i++) {
		c = (unsigned char)W->s[i];
		ok = base == 16 ? is_hex(c) : c >= '0' && c < '0' + base;
		if (!ok && c != '_')
			return werr(W, i, i, why, "");
	}
	return underscores(W, from, 0);
}

/* 0x, 0o, 0b (and 0d, which the reference names redundant) at byte at. */
static int
zero_prefix(struct word *W, size_t at, int sign, enum wkind *k, int *base, size_t *digits)
{
	static const char	lower[] = "xobd", upper[] = "XOBD";
	static const int	bases[] = { 16, 8, 2, 10 };
	static const char	*want[] = { ", expected `0x`", ", expected `0o`", ", expected `0b`" };
	const char		*hit;
	int			 r;

	if (at + 1 >= W->len) {		/* "0" alone */
		*k = W_INT;
		*digits = at;
		return 0;
	}
	if (W->s[at + 1] == '\0' ||
	    ((hit = strchr(lower, W->s[at + 1])) == NULL &&
	    (hit = strchr(upper, W->s[at + 1])) == NULL))
		return -2;	/* not a prefix: digits, a date or a float */
	r = (int)(hit - (hit >= upper && hit < upper + 4 ? upper : lower));
	if (contains(W->s + at, W->len - at, ' '))
		return invalid(W);
	if (sign)
		return werr(W, 0, 1, "integers with a radix cannot be signed", E_NOTHING);
	if (r == 3)
		return werr(W, 0, 2, "redundant integer number prefix", E_NOTHING);
	if (hit >= upper && hit < upper + 4)
		return werr(W, at, at + 2, "radix must be lowercase", want[r]);
	*k = W_INT;
	*base = bases[r];
	*digits = at + 2;
	return radixed(W, at + 2, bases[r]);
}

/* Digits, then what follows them says: a date, a float or an integer. */
static int
digits_first(struct word *W, size_t at, enum wkind *k, size_t *from)
{
	size_t	e = at;

	while (e < W->len && is_digit((unsigned char)W->s[e]))
		e++;
	*from = 0;
	if (e == W->len || (e < W->len && W->s[e] == '_' &&
	    !contains(W->s + e, W->len - e, ' ') && !contains(W->s + e, W->len - e, '.') &&
	    !contains(W->s + e, W->len - e, 'e') && !contains(W->s + e, W->len - e, 'E'))) {
		*k = W_INT;
		if (no_leading_zero(W, at) == -1)
			return -1;
		return underscores(W, 0, 0);
	}
	if (W->s[e] == '-' || W->s[e] == ':') {
		*k = W_DATETIME;
		return 0;
	}
	if (contains(W->s + e, W->len - e, ' '))
		return invalid(W);
	if (contains(W->s + e, W->len - e, '.') || contains(W->s + e, W->len - e, 'e') ||
	    contains(W->s + e, W->len - e, 'E')) {
		*k = W_FLOAT;
		if (ensure_float(W, at) == -1)
			return -1;
		return underscores(W, 0, 1);
	}
	return invalid(W);
}

/* true, false, inf, nan: the whole word or an error under it. */
static int
symbol(struct word *W, size_t at, const char *sym, const char *what)
{
	if (W->len - at == strlen(sym) && memcmp(W->s + at, sym, strlen(sym)) == 0)
		return 0;
	if (at == 0 && contains(W->s, W->len, ' '))
		return invalid(W);
	return tp_fail(W->P, W->s + at, W->len - at, "invalid %s, expected `%s`", what, sym);
}

/* After a sign (one; another is refused). */
static int
after_sign(struct word *W, enum wkind *k, int *base, size_t *digits)
{
	int	c, r;

	if (W->len < 2)
		return invalid(W);
	c = (unsigned char)W->s[1];
	if (c == '+' || c == '-')
		return werr(W, 1, 2, "redundant numeric sign", E_NOTHING);
	if (c == '0' && (r = zero_prefix(W, 1, 1, k, base, digits)) != -2)
		return r;
	if (is_digit(c) || c == '_')
		return digits_first(W, 1, k, digits);
	if (c == '.') {
		*k = W_FLOAT;
		if (ensure_float(W, 0) == -1)
			return -1;
		return underscores(W, 0, 1);
	}
	if (c == 'i' || c == 'I') {
		*k = W_INF;
		return symbol(W, 1, "inf", "float");
	}
	if (c == 'n' || c == 'N') {
		*k = W_NAN;
		return symbol(W, 1, "nan", "float");
	}
	return invalid(W);
}

/* What the word is, or the reference's first error about it. */
static int
decide(struct word *W, enum wkind *k, int *base, size_t *digits)
{
	int	c, r;

	*base = 10;
	*digits = 0;
	if (W->len == 0)
		return invalid(W);
	c = (unsigned char)W->s[0];
	if (!is_digit(c) && contains(W->s, W->len, ' '))
		return invalid(W);
	if (c == '+' || c == '-')
		return after_sign(W, k, base, digits);
	if (c == '0' && (r = zero_prefix(W, 0, 0, k, base, digits)) != -2)
		return r;
	if (is_digit(c) || c == '_')
		return digits_first(W, 0, k, digits);
	if (c == '.') {
		*k = W_FLOAT;
		if (ensure_float(W, 0) == -1)
			return -1;
		return underscores(W, 0, 1);
	}
	*k = c == 't' || c == 'T' ? W_TRUE : c == 'f' || c == 'F' ? W_FALSE :
	    c == 'i' || c == 'I' ? W_INF : W_NAN;
	if (*k == W_TRUE)
		return symbol(W, 0, "true", "boolean");
	if (*k == W_FALSE)
		return symbol(W, 0, "false", "boolean");
	if (c == 'i' || c == 'I')
		return symbol(W, 0, "inf", "float");
	if (c == 'n' || c == 'N')
		return symbol(W, 0, "nan", "float");
	return invalid(W);
}

/* The word without its underscores, malloc'd. */
static char *
plain(const struct word *W, size_t from)
{
	char	*t;
	size_t	 i, n = 0;

	if ((t = malloc(W->len - from + 1)) == NULL)
		return NULL;
	for (i = from; i < W->len; i++)
		if (W->s[i] != '_')
			t[n++] = W->s[i];
	t[n] = '\0';
	return t;
}

int
tp_word(struct tparser *P, const char *s, size_t len, struct toml_node **out)
{
	struct word	 W = { P, s, len };
	enum wkind	 k = W_INT;
	char		*t;
	size_t		 from;
	int		 base, rc;

	*out = NULL;
	if (decide(&W, &k, &base, &from) == -1)
		return -1;
	switch (k) {
	case W_DATETIME:
		return tp_datetime(P, s, len, out);
	case W_TRUE:
	case W_FALSE:
		if ((*out = calloc(1, sizeof(**out))) == NULL)
			return tp_oom(P);
		(*out)->kind = TOML_BOOL;
		(*out)->i = k == W_TRUE;
		return 0;
	case W_INT:
		if (from == 0 && len > 0 && (*s == '+' || *s == '-'))
			from = 1;
		return tp_int(P, s, len, s + from, len - from, base, out);
	default:
		if ((t = plain(&W, 0)) == NULL)
			return tp_oom(P);
		rc = tp_float(P, s, len, t, out);
		free(t);
		return rc;
	}
}
