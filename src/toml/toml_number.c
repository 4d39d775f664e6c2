/*
 * TOML integers, floats, dates and times, from a value's word once
 * toml_word.c has said which it is: what they hold, and the reference's
 * words when they hold nothing (toml_scalar.c has the strings).
 *
 * A date or time is read as the reference's date-time reader reads it:
 * the text cut into runs of digits and single signs (- : . T space Z +),
 * the parts taken in order, each missing or wrong one named ("invalid
 * time, expected minute"), the lengths checked after the shape, the
 * ranges after the lengths.  It is kept as the text the reference prints:
 * `T` and `Z` upper case, seconds always, the fraction cut to nanoseconds
 * without trailing zeros, a zero offset as +00:00.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toml/toml.h"
#include "toml/toml_int.h"

enum dk { D_DIGITS, D_DASH, D_COLON, D_DOT, D_T, D_SPACE, D_Z, D_PLUS, D_OTHER, D_END };

struct dlex {
	const char	*p, *end;
	const char	*raw;		/* the last token */
	size_t		 len;
};

static int
is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static enum dk
dpeek(const struct dlex *L, size_t *n)
{
	static const char	one[] = "-:.TtZz +";
	static const enum dk	kinds[] = { D_DASH, D_COLON, D_DOT, D_T, D_T, D_Z, D_Z, D_SPACE,
	    D_PLUS };
	const char		*hit;

	*n = 0;
	if (L->p >= L->end)
		return D_END;
	if (is_digit((unsigned char)*L->p)) {
		while (L->p + *n < L->end && is_digit((unsigned char)L->p[*n]))
			(*n)++;
		return D_DIGITS;
	}
	if (*L->p != '\0' && (hit = strchr(one, *L->p)) != NULL) {
		*n = 1;
		return kinds[hit - one];
	}
	*n = (size_t)(L->end - L->p);	/* anything else: the rest of the text */
	return D_OTHER;
}

static enum dk
dnext(struct dlex *L)
{
	size_t	n;
	enum dk	k = dpeek(L, &n);

	L->raw = L->p;
	L->len = n;
	L->p += n;
	return k;
}

/* The next token must be want: else "invalid <what>, expected <exp>". */
static int
dwant(struct tparser *P, struct dlex *L, enum dk want, const char *s, size_t len,
    const char *what, const char *exp)
{
	if (dnext(L) == want)
		return 0;
	return tp_fail(P, s, len, "invalid %s, expected %s", what, exp);
}

static int
num(const char *s, size_t n)
{
	int	v = 0;

	while (n-- > 0)
		v = v * 10 + (*s++ - '0');
	return v;
}

static int
days_in(int y, int m)
{
	static const int	days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };

	if (m == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))
		return 29;
	return days[m - 1];
}

/* YYYY-MM-DD, the year's digits already read; appended to text. */
static int
date_part(struct tparser *P, struct dlex *L, const char *s, size_t len, const char *year,
    size_t ylen, char *text, size_t cap)
{
	const char	*mo, *d;
	size_t		 molen;
	int		 y, m, day;

	if (dwant(P, L, D_DIGITS, s, len, "date", "month") == -1)
		return -1;
	mo = L->raw;
	molen = L->len;
	if (dwant(P, L, D_DASH, s, len, "date", "`-` (MM-DD)") == -1 ||
	    dwant(P, L, D_DIGITS, s, len, "date", "day") == -1)
		return -1;
	d = L->raw;
	if (ylen != 4)
		return tp_fail(P, s, len, "invalid date, expected a four-digit year (YYYY)");
	if (molen != 2)
		return tp_fail(P, s, len, "invalid date, expected a two-digit month (MM)");
	if (L->len != 2)
		return tp_fail(P, s, len, "invalid date, expected a two-digit day (DD)");
	y = num(year, 4);
	m = num(mo, 2);
	day = num(d, 2);
	if (m < 1 || m > 12)
		return tp_fail(P, s, len, "invalid date, expected month between 01 and 12");
	if (day < 1 || day > days_in(y, m))
		return tp_fail(P, s, len, "invalid date, expected day between 01 and %d",
		    days_in(y, m));
	snprintf(text, cap, "%04d-%02d-%02d", y, m, day);
	return 0;
}

/* HH:MM[:SS[.frac]]; appended to text. */
static int
time_part(struct tparser *P, struct dlex *L, const char *s, size_t len, char *text, size_t cap)
{
	const char	*h, *mi, *sec = NULL, *frac = NULL;
	size_t		 hlen, milen, slen = 0, flen = 0, n, i;
	char		 f[10];
	enum dk		 k;

	if (dwant(P, L, D_DIGITS, s, len, "time", "hour") == -1)
		return -1;
	h = L->raw;
	hlen = L->len;
	if (dwant(P, L, D_COLON, s, len, "time", "`:` (HH:MM)") == -1 ||
	    dwant(P, L, D_DIGITS, s, len, "time", "minute") == -1)
		return -1;
	mi = L->raw;
	milen = L->len;
	if (dpeek(L, &n) == D_COLON) {
		dnext(L);
		if (dwant(P, L, D_DIGITS, s, len, "time", "second") == -1)
			return -1;
		sec = L->raw;
		slen = L->len;
		if ((k = dpeek(L, &n)) == D_DOT) {
			dnext(L);
			if (dwant(P, L, D_DIGITS, s, len, "time", "nanosecond") == -1)
				return -1;
			frac = L->raw;
			flen = L->len;
		}
	}
	if (hlen != 2)
		return tp_fail(P, s, len, "invalid time, expected a two-digit hour (HH)");
	if (milen != 2)
		return tp_fail(P, s, len, "invalid time, expected a two-digit minute (MM)");
	if (sec != NULL && slen != 2)
		return tp_fail(P, s, len, "invalid time, expected a two-digit second (SS)");
	if (num(h, 2) > 23)
		return tp_fail(P, s, len, "invalid time, expected hour between 00 and 23");
	if (num(mi, 2) > 59)
		return tp_fail(P, s, len, "invalid time, expected minute between 00 and 59");
	if (sec != NULL && num(sec, 2) > 60)
		return tp_fail(P, s, len, "invalid time, expected second between 00 and 60");
	for (i = 0; i < flen && i < 9; i++)
		f[i] = frac[i];
	while (i > 0 && f[i - 1] == '0')
		i--;
	f[i] = '\0';
	snprintf(text + strlen(text), cap - strlen(text), "%02d:%02d:%02d%s%s", num(h, 2),
	    num(mi, 2), sec != NULL ? num(sec, 2) : 0, i > 0 ? "." : "", f);
	return 0;
}

/* Z, +HH:MM or -HH:MM after a date and time; appended to text. */
static int
offset_part(struct tparser *P, struct dlex *L, const char *s, size_t len, char *text,
    size_t cap)
{
	enum dk	k = dnext(L);
	size_t	hlen;
	int	sign, h, m, total;

	if (k == D_END)
		return 0;
	if (k == D_Z) {
		snprintf(text + strlen(text), cap - strlen(text), "Z");
		return 0;
	}
	if (k != D_PLUS && k != D_DASH)
		return tp_fail(P, s, len, "invalid offset, expected `Z`, +OFFSET, -OFFSET");
	sign = k == D_PLUS ? 1 : -1;
	if (dwant(P, L, D_DIGITS, s, len, "offset", "hour") == -1)
		return -1;
	h = L->len == 2 ? num(L->raw, 2) : 0;
	hlen = L->len;
	if (dwant(P, L, D_COLON, s, len, "offset", "`:` (HH:MM)") == -1 ||
	    dwant(P, L, D_DIGITS, s, len, "offset", "minute") == -1)
		return -1;
	if (hlen != 2)
		return tp_fail(P, s, len, "invalid offset, expected a two-digit hour (HH)");
	if (L->len != 2)
		return tp_fail(P, s, len, "invalid offset, expected a two-digit minute (MM)");
	m = num(L->raw, 2);
	if (h > 23)
		return tp_fail(P, s, len, "invalid offset, expected hours between 00 and 23");
	if (m > 59)
		return tp_fail(P, s, len, "invalid offset, expected minutes between 00 and 59");
	total = sign * (h * 60 + m);
	snprintf(text + strlen(text), cap - strlen(text), "%c%02d:%02d", total < 0 ? '-' : '+',
	    h, m);
	return 0;
}

int
tp_datetime(struct tparser *P, const char *s, size_t len, struct toml_node **out)
{
	struct dlex	 L = { s, s + len, NULL, 0 };
	char		 text[80] = "";
	const char	*first;
	size_t		 flen, n;
	enum dk		 k;
	int		 date = 0, time = 0;

	if (dnext(&L) != D_DIGITS)
		return tp_fail(P, s, len, "invalid datetime, expected year or hour");
	first = L.raw;
	flen = L.len;
	k = dnext(&L);
	if (k == D_DASH) {
		if (date_part(P, &L, s, len, first, flen, text, sizeof(text)) == -1)
			return -1;
		date = 1;
		k = dpeek(&L, &n);
		if (k != D_END && k != D_T && k != D_SPACE)
			return tp_fail(P, s, len,
			    "invalid date-time, expected `T` between date and time");
		if (k != D_END) {
			dnext(&L);
			strcat(text, "T");
			time = 1;
		}
	} else if (k == D_COLON) {
		L.p = s;
		time = 1;
	} else {
		return tp_fail(P, s, len, "invalid datetime, expected `-` (YYYY-MM) or `:` (HH:MM)");
	}
	if (time && time_part(P, &L, s, len, text, sizeof(text)) == -1)
		return -1;
	if (date && time && offset_part(P, &L, s, len, text, sizeof(text)) == -1)
		return -1;
	if (L.p < L.end)
		return tp_fail(P, s, len, "invalid datetime");
	if ((*out = calloc(1, sizeof(**out))) == NULL || ((*out)->str = strdup(text)) == NULL)
		return tp_oom(P);
	(*out)->kind = TOML_DATETIME;
	(*out)->len = strlen(text);
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
digit_value(int c)
{
	return is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10;
}

/*
 * A value its type cannot hold: the reference finds that when it builds
 * the tables, after the text's syntax and its duplicate keys, so it waits
 * (its caret under the whole value).  The first one counts.
 */
static void
late(struct tparser *P, const char *s, size_t len, const char *why)
{
	if (P->late_at != NULL)
		return;
	P->late_at = s;
	P->late_span = len;
	snprintf(P->late_why, sizeof(P->late_why), "%s", why);
}

int
tp_int(struct tparser *P, const char *s, size_t len, const char *digits, size_t nd, int base,
    struct toml_node **out)
{
	static const char	 i128[] = "invalid type: integer `%s%s` as i128, expected any "
	    "valid TOML value";
	char			 buf[64];
	unsigned __int128	 mag = 0, cap = (unsigned __int128)1 << 127;
	size_t			 i;
	int			 neg = len > 0 && *s == '-';

	for (i = 0; i < nd && mag <= cap; i++)
		if (digits[i] != '_')
			mag = mag * (unsigned)base + (unsigned)digit_value((unsigned char)digits[i]);
	for (i = 0; i < nd; i++)
		if (digits[i] != '_' && (digit_value((unsigned char)digits[i]) >= base ||
		    !((digits[i] >= '0' && digits[i] <= '9') || ((digits[i] | 0x20) >= 'a' &&
		    (digits[i] | 0x20) <= 'f'))))
			break;
	/* no digits ("0x") or others ("1_0x"): the reference's number reader fails, later */
	if (nd == 0 || i < nd) {
		late(P, s, len, "integer number overflowed");
		mag = 0;
	}
	if (P->late_at == NULL && (neg ? mag > (unsigned __int128)INT64_MAX + 1 :
	    mag > INT64_MAX)) {
		late(P, s, len, "");
		if (neg || mag > UINT64_MAX)
			snprintf(P->late_why, sizeof(P->late_why), i128, neg ? "-" : "",
			    decimal(mag, buf, sizeof(buf)));
		else
			snprintf(P->late_why, sizeof(P->late_why), "u64 value was too large");
	}
	if (neg ? mag > (unsigned __int128)INT64_MAX + 1 : mag > INT64_MAX)
		mag = 0;
	if ((*out = calloc(1, sizeof(**out))) == NULL)
		return tp_oom(P);
	(*out)->kind = TOML_INT;
	(*out)->i = neg ? (mag == (unsigned __int128)INT64_MAX + 1 ? INT64_MIN :
	    -(long long)mag) : (long long)mag;
	return 0;
}

int
tp_float(struct tparser *P, const char *s, size_t len, const char *text,
    struct toml_node **out)
{
	double	v = strtod(text, NULL);

	if (isinf(v) && strstr(text, "inf") == NULL) {
		late(P, s, len, "floating-point number overflowed");
		v = 0;
	}
	if ((*out = calloc(1, sizeof(**out))) == NULL)
		return tp_oom(P);
	(*out)->kind = TOML_FLOAT;
	(*out)->f = v;
	return 0;
}
