/*
 * TOML strings, numbers, dates and times.  A date or time is kept as the
 * text the reference prints for it: `T` and `Z` upper case, a space
 * between date and time made a `T`, the fraction cut to nanoseconds
 * without trailing zeros.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "toml/toml.h"
#include "toml/toml_int.h"
#include "textx.h"

#define E_ESCAPE	"missing escaped value, expected `b`, `e`, `f`, `n`, `r`, `\\`, " \
			"`\"`, `x`, `u`, `U`"

struct sbuf {
	char	*s;
	size_t	 len, cap;
};

static int
sb_put(struct sbuf *b, const char *s, size_t n)
{
	char	*ns;
	size_t	 cap;

	if (b->len + n + 1 > b->cap) {
		cap = b->cap != 0 ? b->cap : 32;
		while (cap < b->len + n + 1)
			cap *= 2;
		if ((ns = realloc(b->s, cap)) == NULL)
			return -1;
		b->s = ns;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
	return 0;
}

static int
put_utf8(struct sbuf *b, unsigned long cp)
{
	char	u[4];
	size_t	n;

	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xC0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3F));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xE0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[2] = (char)(0x80 | (cp & 0x3F));
		n = 3;
	} else {
		u[0] = (char)(0xF0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[3] = (char)(0x80 | (cp & 0x3F));
		n = 4;
	}
	return sb_put(b, u, n);
}

/* The escape after a backslash at P->p (on its letter). */
static int
escape(struct tparser *P, struct sbuf *b)
{
	static const char	from[] = "btnfr\"\\e", to[] = "\b\t\n\f\r\"\\\x1b";
	const char		*hit, *at = P->p;
	unsigned long		 cp = 0;
	int			 n, i, h;

	if (P->p >= P->end)
		return tp_fail(P, at, 1, E_ESCAPE);
	if (*P->p != '\0' && (hit = strchr(from, *P->p)) != NULL) {
		P->p++;
		return sb_put(b, &to[hit - from], 1) == -1 ? tp_oom(P) : 0;
	}
	n = *P->p == 'x' ? 2 : *P->p == 'u' ? 4 : *P->p == 'U' ? 8 : 0;
	if (n == 0)
		return tp_fail(P, at, 1, E_ESCAPE);
	P->p++;
	for (i = 0; i < n; i++) {
		/* cut by the line's end: the reference misses the string's end */
		if (P->p >= P->end || tp_newline(P, P->p) > 0)
			return tp_fail(P, P->p, 1, P->in_key ? "key with no value, expected `=`" :
			    "invalid basic string, expected `\"`");
		if ((h = hex_digit((unsigned char)*P->p)) == -1)
			return tp_fail(P, P->p, 1, "too few unicode value digits, expected unicode "
			    "hexadecimal value");
		cp = cp * 16 + (unsigned long)h;
		P->p++;
	}
	if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return tp_fail(P, at + 1, 1, "invalid value, expected unicode hexadecimal value");
	return put_utf8(b, cp) == -1 ? tp_oom(P) : 0;
}

/* In a multi-line basic string, a backslash ending its line: to the next text. */
static int
line_end_backslash(struct tparser *P)
{
	const char	*q = P->p;
	int		 nl;

	while (q < P->end && (*q == ' ' || *q == '\t'))
		q++;
	if (tp_newline(P, q) == 0)
		return 0;
	while (q < P->end && ((nl = tp_newline(P, q)) > 0 || *q == ' ' || *q == '\t'))
		q += nl > 0 ? nl : 1;
	P->p = q;
	return 1;
}

/* The closing quotes of a string at P->p; 1 when it ended. */
static int
closing(struct tparser *P, struct sbuf *b, char q, int ml)
{
	size_t	run = 0;

	if (!ml) {
		P->p++;
		return 1;
	}
	while (P->p + run < P->end && P->p[run] == q)
		run++;
	if (run < 3) {
		P->p += run;
		return sb_put(b, P->p - run, run) == -1 ? tp_oom(P) : 0;
	}
	if (run > 5)		/* two quotes end the text; the rest follows the string */
		run = 5;
	if (sb_put(b, P->p, run - 3) == -1)
		return tp_oom(P);
	P->p += run;
	return 1;
}

static int
bad_char(struct tparser *P, char q, int ml)
{
	const char	*kind = q == '"' ? "basic" : "literal";

	/* a header's key cut short: the reference misses the header's end */
	if (P->in_header && (P->p >= P->end || (!ml && tp_newline(P, P->p) > 0)))
		return tp_fail(P, P->p, 1, P->in_header == 2 ?
		    "unclosed array table, expected `]]`" : "unclosed table, expected `]`");
	if (P->in_key && (P->p >= P->end || (!ml && tp_newline(P, P->p) > 0)))
		return tp_fail(P, P->p, 1, "key with no value, expected `=`");
	if (P->p >= P->end || (!ml && tp_newline(P, P->p) > 0))
		return tp_fail(P, P->p, 1, "invalid %s%s string, expected `%s`",
		    ml ? "multi-line " : "", kind, q == '"' ? "\"" : "'");
	/* the reference words the multi-line forms apart */
	if (ml)
		return tp_fail(P, P->p, 1, q == '"' ?
		    "invalid multi-line basic string, expected `\\`, characters" :
		    "invalid multi-line literal string, expected non-single-quote characters");
	return tp_fail(P, P->p, 1, "invalid %s string, expected non-%s-quote visible "
	    "characters%s", kind, q == '"' ? "double" : "single", q == '"' ? ", `\\`" : "");
}

int
tp_string(struct tparser *P, char **out, size_t *outlen)
{
	struct sbuf	 b = { NULL, 0, 0 };
	char		 q = *P->p;
	int		 ml, nl, rc;
	unsigned char	 c;

	ml = P->p + 2 < P->end && P->p[1] == q && P->p[2] == q;
	P->p += ml ? 3 : 1;
	if (ml)
		P->p += tp_newline(P, P->p);
	if (sb_put(&b, "", 0) == -1)
		return tp_oom(P);
	for (rc = 0; rc == 0; ) {
		if (P->p >= P->end) {
			rc = bad_char(P, q, ml);
			break;
		}
		c = (unsigned char)*P->p;
		if (c == (unsigned char)q) {
			rc = closing(P, &b, q, ml);
		} else if (ml && (nl = tp_newline(P, P->p)) > 0) {
			/* kept as written, CRLF too, as the reference keeps it */
			rc = sb_put(&b, P->p, (size_t)nl) == -1 ? tp_oom(P) : 0;
			P->p += nl;
		} else if (c == '\\' && q == '"') {
			P->p++;
			if (!ml || !line_end_backslash(P))
				rc = escape(P, &b);
		} else if ((c < 0x20 && c != '\t') || c == 0x7F) {
			rc = bad_char(P, q, ml);
		} else {
			P->p++;
			rc = sb_put(&b, (const char *)&c, 1) == -1 ? tp_oom(P) : 0;
		}
	}
	if (rc == -1) {
		free(b.s);
		return -1;
	}
	*out = b.s;
	*outlen = b.len;
	return 0;
}

/*
 * How long the invalid sequence at p is, as Rust's from_utf8 counts it:
 * 0 when the text ends inside a sequence that could still be valid.
 */
static size_t
bad_seq(const unsigned char *p, const unsigned char *end, size_t *ok)
{
	size_t	n, i;
	int	lo = 0x80, hi = 0xBF;

	if (*p < 0x80) {
		*ok = 1;
		return SIZE_MAX;
	}
	if (*p >= 0xC2 && *p <= 0xDF)
		n = 2;
	else if (*p >= 0xE0 && *p <= 0xEF)
		n = 3;
	else if (*p >= 0xF0 && *p <= 0xF4)
		n = 4;
	else
		return 1;
	if (*p == 0xE0)
		lo = 0xA0;
	else if (*p == 0xED)
		hi = 0x9F;
	else if (*p == 0xF0)
		lo = 0x90;
	else if (*p == 0xF4)
		hi = 0x8F;
	for (i = 1; i < n; i++) {
		if (p + i >= end)
			return 0;
		if (p[i] < (i == 1 ? lo : 0x80) || p[i] > (i == 1 ? hi : 0xBF))
			return i;
	}
	*ok = n;
	return SIZE_MAX;
}

int
toml_utf8_check(const char *s, size_t len, size_t *at, size_t *seqlen)
{
	const unsigned char	*p = (const unsigned char *)s, *end = p + len;
	size_t			 ok, bad;

	while (p < end) {
		if ((bad = bad_seq(p, end, &ok)) != SIZE_MAX) {
			*at = (size_t)(p - (const unsigned char *)s);
			*seqlen = bad;
			return -1;
		}
		p += ok;
	}
	return 0;
}
