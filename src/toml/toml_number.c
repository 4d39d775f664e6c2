/*
 * TOML integers, floats, dates and times (toml_scalar.c has the strings).
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toml/toml.h"
#include "toml/toml_int.h"

#define E_UNQUOTED	"string values must be quoted, expected literal string"
#define E_FLOAT		"invalid float, expected nothing"

static int
is_digit(int c)
{
	return c >= '0' && c <= '9';
}

/* n decimal digits at s, or -1. */
static int
digits(const char *s, size_t n)
{
	int	v = 0;
	size_t	i;

	for (i = 0; i < n; i++) {
		if (!is_digit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

static int
hexval_digit(int c)
{
	return is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10;
}

static struct toml_node *
node(enum toml_kind kind)
{
	struct toml_node	*n;

	if ((n = calloc(1, sizeof(*n))) != NULL)
		n->kind = kind;
	return n;
}

/*
 * HH:MM[:SS[.frac]] at s (len bytes; seconds may be left out, as TOML 1.1
 * and the reference allow); its length, or 0 with *why.  The normal form,
 * seconds always, is appended to out.
 */
static size_t
time_part(const char *s, size_t len, char *out, size_t outlen, const char **why)
{
	char	frac[10];
	size_t	n = 5, f = 0;
	int	h, m, sec = 0;

	*why = len == 0 ? "hour" : "a two-digit hour (HH)";
	if (len < 2 || (h = digits(s, 2)) < 0)
		return 0;
	*why = "`:` (HH:MM)";
	if (len < 3 || s[2] != ':')
		return 0;
	*why = "a two-digit minute (MM)";
	if (len < 5 || (m = digits(s + 3, 2)) < 0)
		return 0;
	if (len > 5 && s[5] == ':') {
		*why = "a two-digit second (SS)";
		if (len < 8 || (sec = digits(s + 6, 2)) < 0)
			return 0;
		n = 8;
	}
	if (h > 23 || m > 59 || sec > 60) {
		*why = h > 23 ? "hour between 00 and 23" : m > 59 ? "minute between 00 and 59" :
		    "second between 00 and 60";
		return 0;
	}
	if (n == 8 && n < len && s[n] == '.') {
		for (n++; n < len && is_digit((unsigned char)s[n]); n++)
			if (f < 9)
				frac[f++] = s[n];
		*why = "fraction";
		if (s[n - 1] == '.')
			return 0;
	}
	while (f > 0 && frac[f - 1] == '0')
		f--;
	frac[f] = '\0';
	snprintf(out + strlen(out), outlen - strlen(out), "%02d:%02d:%02d%s%s", h, m, sec,
	    f > 0 ? "." : "", frac);
	return n;
}

static int
days_in(int y, int m)
{
	static const int	days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };

	if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		return 29;
	return days[m - 1];
}

static int
datetime(struct tparser *P, const char *s, size_t len, struct toml_node **out)
{
	char	text[64] = "";
	size_t	n = 0;
	int	y, mo, d, oh, om, need_time = 1;

	if (len >= 10 && s[4] == '-') {
		if ((y = digits(s, 4)) < 0 || s[7] != '-' || (mo = digits(s + 5, 2)) < 0 ||
		    (d = digits(s + 8, 2)) < 0)
			return tp_fail(P, s, 1, "invalid date");
		if (mo < 1 || mo > 12)
			return tp_fail(P, s, 1, "invalid date, expected month between 01 and 12");
		if (d < 1 || d > days_in(y, mo))
			return tp_fail(P, s, 1, "invalid date, expected day between 01 and %d",
			    days_in(y, mo));
		snprintf(text, sizeof(text), "%04d-%02d-%02d", y, mo, d);
		n = 10;
		need_time = n < len;
		if (n < len) {
			if (s[n] != 'T' && s[n] != 't' && s[n] != ' ')
				return tp_fail(P, s, len,
				    "invalid date-time, expected `T` between date and time");
			text[10] = 'T';
			text[11] = '\0';
			n++;
		}
	}
	if (need_time) {
		const char	*why = NULL;
		size_t		 t = time_part(s + n, len - n, text, sizeof(text), &why);

		if (t == 0)
			return tp_fail(P, s, len, "invalid time, expected %s", why);
		n += t;
		if (n < len && (s[n] == 'Z' || s[n] == 'z') && s[0] != ':' && len > 10 &&
		    s[4] == '-') {
			snprintf(text + strlen(text), sizeof(text) - strlen(text), "Z");
			n++;
		} else if (n < len && (s[n] == '+' || s[n] == '-') && len > 10 && s[4] == '-') {
			/* the reference's caret runs under the whole date-time */
			if (len - n < 2 || !is_digit((unsigned char)s[n + 1]))
				return tp_fail(P, s, len, "invalid offset, expected hour");
			if (len - n < 4 || digits(s + n + 1, 2) < 0 || s[n + 3] != ':')
				return tp_fail(P, s, len, "invalid offset, expected `:` (HH:MM)");
			if (len - n != 6 || s[n + 3] != ':' || (oh = digits(s + n + 1, 2)) < 0 ||
			    (om = digits(s + n + 4, 2)) < 0)
				return tp_fail(P, s, 1, "invalid offset");
			if (oh > 23 || om > 59)
				return tp_fail(P, s, 1, "invalid offset, expected %s", oh > 23 ?
				    "hours between 00 and 23" : "minutes between 00 and 59");
			/* a zero offset has no sign: "-00:00" is printed "+00:00" */
			snprintf(text + strlen(text), sizeof(text) - strlen(text), "%c%02d:%02d",
			    oh == 0 && om == 0 ? '+' : s[n], oh, om);
			n += 6;
		}
	}
	if (n != len)
		return tp_fail(P, s + n, 1, "invalid date-time");
	if ((*out = node(TOML_DATETIME)) == NULL || ((*out)->str = strdup(text)) == NULL)
		return tp_oom(P);
	(*out)->len = strlen(text);
	return 0;
}

/*
 * Digits of base with single underscores between them, from s to end,
 * into buf without the underscores; 0, or -1 with the reference's words
 * (what: the part of a number they are, for "invalid <what>").
 */
static int
digit_run(struct tparser *P, const char *s, const char *end, int base, char *buf,
    size_t *blen, size_t cap, const char *what, const char *bad)
{
	const char	*q;
	int		 c, ok;

	if (s >= end)
		return tp_fail(P, s, 1, "invalid %s, expected digits", what);
	for (q = s; q < end; q++) {
		c = (unsigned char)*q;
		if (c == '_') {
			if (q == s || q + 1 == end || q[1] == '_')
				return tp_fail(P, q, 1,
				    "`_` may only go between digits, expected nothing");
			continue;
		}
		ok = base == 16 ? (is_digit(c) || (c >= 'a' && c <= 'f') ||
		    (c >= 'A' && c <= 'F')) : (c >= '0' && c < '0' + base);
		if (!ok)
			return tp_fail(P, q, 1, "%s", bad);
		if (*blen + 1 >= cap)
			return tp_fail(P, s, 1, "number too long");
		buf[(*blen)++] = (char)c;
	}
	buf[*blen] = '\0';
	return 0;
}

/* mag in decimal, in buf. */
static const char *
decimal(unsigned __int128 mag, char *buf, size_t len)
{
	char	*p = buf + len;

	*--p = '\0';
	do {
		*--p = (char)('0' + (int)(mag % 10));
		mag /= 10;
	} while (mag > 0 && p > buf);
	return p;
}

static int
integer(struct tparser *P, const char *s, size_t len, struct toml_node **out)
{
	static const char	 i128[] = "invalid type: integer `%s%s` as i128, expected any "
	    "valid TOML value";
	char			 buf[128];
	const char		*d = s, *end = s + len, *bad = "invalid integer";
	size_t			 blen = 0, i;
	int			 base = 10, neg = 0;
	unsigned __int128	 mag = 0, cap = (unsigned __int128)1 << 127;

	if (*d == '+' || *d == '-')
		neg = *d++ == '-';
	if (end - d >= 2 && d[0] == '0' && (d[1] == 'x' || d[1] == 'o' || d[1] == 'b')) {
		if (d != s)
			return tp_fail(P, s, 1,
			    "integers with a radix cannot be signed, expected nothing");
		base = d[1] == 'x' ? 16 : d[1] == 'o' ? 8 : 2;
		bad = base == 16 ? "invalid hexadecimal number" : base == 8 ?
		    "invalid octal number" : "invalid binary number";
		if ((d += 2) == end)	/* the reference's words for "0x" */
			return tp_fail(P, s, 1, "integer number overflowed");
	}
	if (digit_run(P, d, end, base, buf, &blen, sizeof(buf), "integer", bad) == -1)
		return -1;
	if (base == 10 && blen > 1 && buf[0] == '0')
		return tp_fail(P, d, 1, "unexpected leading zero, expected nothing");
	for (i = 0; i < blen && mag <= cap; i++)
		mag = mag * (unsigned)base + (unsigned)hexval_digit(buf[i]);
	/*
	 * Too big for its type: the reference finds that when it builds the
	 * tables, after the text's syntax and its duplicate keys, so it waits
	 * (its caret under the whole number).
	 */
	if (P->late_at == NULL && (neg ? mag > (unsigned __int128)INT64_MAX + 1 :
	    mag > INT64_MAX)) {
		P->late_at = s;
		P->late_span = len;
		if (neg || mag > UINT64_MAX)
			snprintf(P->late_why, sizeof(P->late_why), i128, neg ? "-" : "",
			    decimal(mag, buf, sizeof(buf)));
		else
			snprintf(P->late_why, sizeof(P->late_why), "u64 value was too large");
	}
	if (neg ? mag > (unsigned __int128)INT64_MAX + 1 : mag > INT64_MAX)
		mag = 0;
	if ((*out = node(TOML_INT)) == NULL)
		return tp_oom(P);
	(*out)->i = neg ? (mag == (unsigned __int128)INT64_MAX + 1 ? INT64_MIN :
	    -(long long)mag) : (long long)mag;
	return 0;
}

static int
floating(struct tparser *P, const char *s, size_t len, struct toml_node **out)
{
	char		 buf[512];
	size_t		 blen = 0;
	const char	*q = s, *end = s + len, *part;
	double		 v;

	if (*q == '+' || *q == '-')
		buf[blen++] = *q++;
	if (end - q == 3 && (memcmp(q, "inf", 3) == 0 || memcmp(q, "nan", 3) == 0)) {
		memcpy(buf + blen, q, 3);
		buf[blen + 3] = '\0';
	} else {
		for (part = q; q < end && *q != '.' && *q != 'e' && *q != 'E'; q++)
			;
		if (digit_run(P, part, q, 10, buf, &blen, sizeof(buf), "mantissa", E_FLOAT) == -1)
			return -1;
		if (q - part > 1 && *part == '0')
			return tp_fail(P, part, 1, "unexpected leading zero, expected nothing");
		if (q < end && *q == '.') {
			buf[blen++] = *q++;
			for (part = q; q < end && *q != 'e' && *q != 'E'; q++)
				;
			if (digit_run(P, part, q, 10, buf, &blen, sizeof(buf), "fraction", E_FLOAT) == -1)
				return -1;
		}
		if (q < end) {
			buf[blen++] = *q++;
			if (q < end && (*q == '+' || *q == '-'))
				buf[blen++] = *q++;
			if (digit_run(P, q, end, 10, buf, &blen, sizeof(buf), "exponent", E_FLOAT) == -1)
				return -1;
		}
	}
	v = strtod(buf, NULL);
	if (isinf(v) && strstr(buf, "inf") == NULL)
		return tp_fail(P, s, 1, "floating-point number overflowed");
	if ((*out = node(TOML_FLOAT)) == NULL)
		return tp_oom(P);
	(*out)->f = v;
	return 0;
}

static int
token_char(int c)
{
	return is_digit(c) || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    c == '_' || c == '+' || c == '-' || c == '.' || c == ':';
}

int
tp_scalar(struct tparser *P, struct toml_node **out)
{
	const char	*s = P->p, *q = s, *t;
	size_t		 len, k;
	int		 c = (unsigned char)*s;

	/* "_0": a number's underscore before any digit */
	if (c == '_' && s + 1 < P->end && is_digit((unsigned char)s[1]))
		return tp_fail(P, s, 1, "`_` may only go between digits, expected nothing");
	if (!is_digit(c) && c != '+' && c != '-' && c != 'i' && c != 'n' && c != '.')
		return tp_fail(P, s, 1, E_UNQUOTED);
	while (q < P->end && token_char((unsigned char)*q))
		q++;
	/* "1979-05-27 07:32:00": a space may join a date and a time */
	if (q - s == 10 && s[4] == '-' && q + 2 < P->end && *q == ' ' &&
	    is_digit((unsigned char)q[1]) && is_digit((unsigned char)q[2]))
		for (q++; q < P->end && token_char((unsigned char)*q); q++)
			;
	len = (size_t)(q - s);
	P->p = q;
	t = s + (*s == '+' || *s == '-');
	/* "979-05-27": a date whose year is not four digits */
	for (k = 0; k < len && is_digit((unsigned char)s[k]); k++)
		;
	if (k > 0 && k != 4 && k + 3 < len && s[k] == '-' && digits(s + k + 1, 2) >= 0 &&
	    s[k + 3] == '-')
		return tp_fail(P, s, len, "invalid date, expected a four-digit year (YYYY)");
	/* a date cut short: the reference names the part it missed, under the token */
	if (len >= 5 && s[4] == '-' && digits(s, 4) >= 0) {
		if (len == 5)
			return tp_fail(P, s, len, "invalid date, expected month");
		if (len < 7 || digits(s + 5, 2) < 0)
			return tp_fail(P, s, len, "invalid date, expected a two-digit month (MM)");
		if (len < 8 || s[7] != '-')
			return tp_fail(P, s, len, "invalid date, expected `-` (MM-DD)");
		if (len < 10 || digits(s + 8, 2) < 0)
			return tp_fail(P, s, len, "invalid date, expected a two-digit day (DD)");
	}
	if ((len >= 10 && s[4] == '-' && is_digit(c)) || (len >= 3 && s[2] == ':'))
		return datetime(P, s, len, out);
	if (q - t == 3 && (memcmp(t, "inf", 3) == 0 || memcmp(t, "nan", 3) == 0))
		return floating(P, s, len, out);
	if (t < q && (*t == 'i' || *t == 'n'))
		return tp_fail(P, t, 1, "invalid float, expected `%s`", *t == 'i' ? "inf" : "nan");
	if (t >= q)
		return tp_fail(P, s, 1, E_UNQUOTED);
	if (*t == '.')
		return tp_fail(P, t, 1, "invalid mantissa, expected digits");
	if (!is_digit((unsigned char)*t))
		return tp_fail(P, s, 1, E_UNQUOTED);
	if (!(len > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o' || s[1] == 'b')) &&
	    (memchr(s, '.', len) != NULL || memchr(s, 'e', len) != NULL ||
	    memchr(s, 'E', len) != NULL))
		return floating(P, s, len, out);
	return integer(P, s, len, out);
}
