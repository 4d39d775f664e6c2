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

/* A string's content: from P->p to end, its quotes already checked. */
struct content {
	struct tparser	*P;
	struct sbuf	*b;
	const char	*end;
	const char	*kind;		/* "basic", "multi-line basic", ... */
};

/* What a basic string holds as it is: tab, visible ASCII but " and \, non-ASCII. */
static int
basic_plain(int c)
{
	return c == '\t' || (c >= 0x20 && c <= 0x7E && c != '"' && c != '\\') || c >= 0x80;
}

/* What a literal string holds: tab, visible ASCII but ', non-ASCII. */
static int
literal_plain(int c)
{
	return c == '\t' || (c >= 0x20 && c <= 0x7E && c != '\'') || c >= 0x80;
}

/* The escape after a backslash, at P->p (on its letter). */
static int
escape(struct content *C)
{
	static const char	from[] = "btnfr\"\\e", to[] = "\b\t\n\f\r\"\\\x1b";
	struct tparser		*P = C->P;
	const char		*hit, *digits;
	unsigned long		 cp = 0;
	int			 n, i, h;

	if (P->p >= C->end || *P->p == '\0' || ((hit = strchr(from, *P->p)) == NULL &&
	    *P->p != 'x' && *P->p != 'u' && *P->p != 'U'))
		return tp_fail(P, P->p, 1, E_ESCAPE);
	if (hit != NULL) {
		P->p++;
		return sb_put(C->b, &to[hit - from], 1) == -1 ? tp_oom(P) : 0;
	}
	n = *P->p == 'x' ? 2 : *P->p == 'u' ? 4 : 8;
	digits = ++P->p;
	for (i = 0; i < n; i++, P->p++) {
		if (P->p >= C->end || (h = hex_digit((unsigned char)*P->p)) == -1)
			return tp_fail(P, P->p, 1, "too few unicode value digits, expected unicode "
			    "hexadecimal value");
		cp = cp * 16 + (unsigned long)h;
	}
	if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return tp_fail(P, digits, 1, "invalid value, expected unicode hexadecimal value");
	return put_utf8(C->b, cp) == -1 ? tp_oom(P) : 0;
}

/* In a multi-line basic string, a backslash before blanks and a line's end. */
static int
escaped_newline(struct content *C)
{
	struct tparser	*P = C->P;
	const char	*start;

	while (P->p < C->end && (*P->p == ' ' || *P->p == '\t'))
		P->p++;
	if (P->p < C->end && *P->p == '\r' && !(P->p + 1 < C->end && P->p[1] == '\n'))
		return tp_fail(P, P->p + 1, 1,
		    "carriage return must be followed by newline, expected newline");
	if (P->p >= C->end || (*P->p != '\n' && *P->p != '\r'))
		return tp_fail(P, P->p, 1, "invalid multi-line basic string, expected newline");
	P->p += *P->p == '\r' ? 2 : 1;
	do {
		start = P->p;
		while (P->p < C->end && (*P->p == ' ' || *P->p == '\t' || *P->p == '\n'))
			P->p++;
		if (P->p < C->end && *P->p == '\r') {
			if (!(P->p + 1 < C->end && P->p[1] == '\n'))
				return tp_fail(P, P->p + 1, 1, "carriage return must be followed by "
				    "newline, expected newline");
			P->p += 2;
		}
	} while (P->p != start);
	return 0;
}

/* A run of bytes a string may not hold: the reference's words, at its start. */
static int
bad_run(struct content *C, int ml, int basic)
{
	struct tparser	*P = C->P;
	const char	*s = P->p;
	size_t		 n = 0;
	int		 c;

	if (!basic)
		return tp_fail(P, s, 1, "invalid %s string, expected non-single-quote%s characters",
		    C->kind, ml ? "" : " visible");
	for (; s + n < C->end; n++) {
		c = (unsigned char)s[n];
		if (basic_plain(c) || c == '\\' || (ml && (c == '"' || c == '\n' || c == '\r')))
			break;
	}
	if (ml)
		return tp_fail(P, s, n, "invalid multi-line basic string, expected `\\`, characters");
	return tp_fail(P, s, n, "invalid basic string, expected non-double-quote visible "
	    "characters, `\\`");
}

/* The content of a string of quote q, as the reference decodes it. */
static int
content(struct content *C, char q, int ml)
{
	struct tparser	*P = C->P;
	int		 c, basic = q == '"';

	while (P->p < C->end) {
		c = (unsigned char)*P->p;
		if (ml && c == '\r') {
			if (!(P->p + 1 < C->end && P->p[1] == '\n'))
				return tp_fail(P, P->p + 1, 1, "carriage return must be followed by "
				    "newline, expected newline");
			/* kept as written, CRLF too, as the reference keeps it */
			if (sb_put(C->b, P->p, 2) == -1)
				return tp_oom(P);
			P->p += 2;
		} else if (basic && c == '\\') {
			P->p++;
			if (ml && P->p < C->end && (*P->p == ' ' || *P->p == '\t' || *P->p == '\n' ||
			    *P->p == '\r')) {
				if (escaped_newline(C) == -1)
					return -1;
			} else if (escape(C) == -1) {
				return -1;
			}
		} else if ((basic ? basic_plain(c) : literal_plain(c)) ||
		    (ml && (c == q || c == '\n'))) {
			if (sb_put(C->b, P->p++, 1) == -1)
				return tp_oom(P);
		} else {
			return bad_run(C, ml, basic);
		}
	}
	return 0;
}

/*
 * A quoted string of any of the four kinds.  The reference cuts the whole
 * string out first (a one-line string stops before its line's end) and
 * says first whether its closing quotes are there, at its end; only then
 * what is inside it.
 */
int
tp_string(struct tparser *P, char **out, size_t *outlen)
{
	struct sbuf	 b = { NULL, 0, 0 };
	struct content	 C;
	char		 q = *P->p, delim[4];
	const char	*e, *cs;
	size_t		 n;
	int		 ml;

	ml = P->p + 2 < P->end && P->p[1] == q && P->p[2] == q;
	n = ml ? 3 : 1;
	memset(delim, q, 3);
	delim[n] = '\0';
	e = P->buf + toml_string_end(P->buf, (size_t)(P->end - P->buf), (size_t)(P->p - P->buf));
	cs = P->p + n;
	if (ml)
		cs += tp_newline(P, cs);
	C.kind = ml ? (q == '"' ? "multi-line basic" : "multi-line literal") :
	    (q == '"' ? "basic" : "literal");
	if (cs > e || (size_t)(e - cs) < n || memcmp(e - n, delim, n) != 0)
		return tp_fail(P, e, 1, "invalid %s string, expected `%c`", C.kind, q);
	if (sb_put(&b, "", 0) == -1)
		return tp_oom(P);
	C.P = P;
	C.b = &b;
	C.end = e - n;
	P->p = cs;
	if (content(&C, q, ml) == -1) {
		free(b.s);
		return -1;
	}
	P->p = e;
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
