/*
 * A credential provider's `patterns` are Rust regex syntax in the
 * reference.  glibc reads POSIX EREs, so each pattern is translated: the
 * Rust forms a credential pattern plausibly uses (\d \w \s and their
 * negations, escapes inside classes, (?:...), named groups, a leading
 * (?i), lazy repetitions, \A \z, \xHH, [[:name:]] and [[:^name:]]) become
 * their ERE equivalents.  Anything else Rust has (Unicode classes \p,
 * class set operations, inline flags elsewhere, non-ASCII in classes) is
 * refused with a reason instead of being read as something else: the
 * provider's variables then run unmasked, as they do in the reference when
 * it cannot use a pattern.  Classes work on bytes, so a negated class
 * counts a multi-byte character as several; credentials are ASCII.
 */
#include "config.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "netproxy/netproxy_mask.h"

/*
 * glibc expands counted repetitions when it compiles, so a pattern from a
 * request could ask for an enormous automaton ((a{999}){999}).  Each
 * group's expanded size is counted and a pattern over RX_SIZE_MAX atoms,
 * or nested deeper than RX_DEPTH_MAX, is refused.
 */
#define RX_SIZE_MAX	20000
#define RX_DEPTH_MAX	32
#define RX_REPEAT_MAX	1000

struct rx {
	const char	*p, *end, *start;
	struct buf	 out;
	int		 icase;
	const char	*why;
	int		 depth;
	int		 repeated;	/* the last atom has its repetition */
	size_t		 size[RX_DEPTH_MAX + 1];	/* a group's expanded atoms so far */
	size_t		 last[RX_DEPTH_MAX + 1];	/* those of its last atom */
};

/* one more atom of n expanded atoms at this depth */
static int
grow(struct rx *x, size_t n)
{
	x->repeated = 0;
	x->last[x->depth] = n;
	x->size[x->depth] += n;
	if (x->size[x->depth] > RX_SIZE_MAX) {
		x->why = "a pattern too large once its repetitions are expanded";
		return -1;
	}
	return 0;
}

typedef uint8_t byteset[32];

static void
set_add(byteset s, unsigned c)
{
	s[c / 8] |= (uint8_t)(1u << (c % 8));
}

static int
set_has(const byteset s, unsigned c)
{
	return (s[c / 8] >> (c % 8)) & 1;
}

static void
set_range(byteset s, unsigned lo, unsigned hi)
{
	for (; lo <= hi; lo++)
		set_add(s, lo);
}

static void
set_invert(byteset s)
{
	size_t	i;

	for (i = 0; i < sizeof(byteset); i++)
		s[i] = (uint8_t)~s[i];
}

static int
emit(struct rx *x, const char *s, size_t n)
{
	if (buf_append(&x->out, s, n) == -1) {
		x->why = "out of memory";
		return -1;
	}
	return 0;
}

static int
fail(struct rx *x, const char *why)
{
	x->why = why;
	return -1;
}

/* One literal byte outside a class. */
static int
emit_literal(struct rx *x, unsigned char c)
{
	char	tmp[4];

	if (c == '^')
		return emit(x, "\\^", 2);
	if (strchr(".[]()*+?{}|$\\", c) != NULL && c != '\0') {
		snprintf(tmp, sizeof(tmp), "[%c]", c);
		return emit(x, tmp, 3);
	}
	return emit(x, (const char *)&c, 1);
}

/* one byte, or lo-hi when the run is longer than two */
static int
emit_run(struct rx *x, unsigned lo, unsigned hi)
{
	char	r[3] = { (char)lo, (char)(lo + 1), (char)hi };

	if (hi == lo)
		return emit(x, r, 1);
	if (hi == lo + 1)
		return emit(x, r, 2);
	r[1] = '-';
	return emit(x, r, 3);
}

/*
 * A byte set as an ERE bracket: ']' first, '-' last, '^' never first, '['
 * only where no ':', '.' or '=' can follow it.  NUL is never in a value.
 */
static int
emit_set(struct rx *x, const byteset s)
{
	unsigned	c, run;
	int		emitted = 0;

	for (c = 1; c < 256 && !(set_has(s, c) && c != '^'); c++)
		;
	if (c == 256 && set_has(s, '^'))
		return emit(x, "\\^", 2);	/* only '^' */
	if (emit(x, "[", 1) == -1 || (set_has(s, ']') && emit(x, "]", 1) == -1))
		return -1;
	emitted = set_has(s, ']');
	for (c = 1; c < 256; c++) {
		if (!set_has(s, c) || strchr("]-^[", (int)c) != NULL)
			continue;
		for (run = c; run + 1 < 256 && set_has(s, run + 1) &&
		    strchr("]-^[", (int)(run + 1)) == NULL; run++)
			;
		if (emit_run(x, c, run) == -1)
			return -1;
		emitted = 1;
		c = run;
	}
	if (set_has(s, '[')) {
		if (emit(x, "[", 1) == -1)
			return -1;
		emitted = 1;
	}
	if (set_has(s, '^') && !emitted)
		return emit(x, "-^]", 3);	/* '^' and '-' only */
	if (set_has(s, '^') && emit(x, "^", 1) == -1)
		return -1;
	if (set_has(s, '-') && emit(x, "-", 1) == -1)
		return -1;
	return emit(x, "]", 1);
}

/* \d \w \s and the negations into s; 0 when c names none of them */
static int
perl_class(unsigned char c, byteset s)
{
	byteset	t;

	memset(t, 0, sizeof(t));
	switch (tolower(c)) {
	case 'd':
		set_range(t, '0', '9');
		break;
	case 'w':
		set_range(t, '0', '9');
		set_range(t, 'A', 'Z');
		set_range(t, 'a', 'z');
		set_add(t, '_');
		break;
	case 's':
		set_range(t, '\t', '\r');
		set_add(t, ' ');
		break;
	default:
		return 0;
	}
	if (isupper(c))
		set_invert(t);
	for (c = 0; c < sizeof(byteset); c++)
		s[c] |= t[c];
	return 1;
}

static int
hexval(int c)
{
	if (isdigit(c))
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* \xHH or \x{H...} after the 'x'; the byte, or -1 (not ASCII or malformed) */
static int
hex_escape(struct rx *x)
{
	long	v = 0;
	int	d, n = 0, braced = x->p < x->end && *x->p == '{';

	if (braced)
		x->p++;
	while (x->p < x->end && (d = hexval((unsigned char)*x->p)) != -1 &&
	    (braced || n < 2) && n < 8) {
		v = v * 16 + d;
		x->p++;
		n++;
	}
	if (n == 0 || (!braced && n != 2) || (braced && (x->p >= x->end || *x->p++ != '}')))
		return fail(x, "a malformed \\x escape");
	if (v == 0 || v > 0x7f)
		return fail(x, "a \\x escape outside ASCII (Unicode is not supported)");
	return (int)v;
}

/*
 * The byte an escape stands for (x->p just after the backslash), or -1;
 * *set filled instead (return -2) for \d \w \s and their negations.
 */
static int
escape(struct rx *x, byteset set)
{
	unsigned char	c;

	if (x->p >= x->end)
		return fail(x, "a trailing backslash");
	c = (unsigned char)*x->p++;
	if (perl_class(c, set))
		return -2;
	switch (c) {
	case 'n': return '\n';
	case 't': return '\t';
	case 'r': return '\r';
	case 'f': return '\f';
	case 'v': return '\v';
	case 'a': return '\a';
	case 'x': return hex_escape(x);
	case 'p': case 'P': case 'u': case 'U':
		return fail(x, "Unicode classes (\\p, \\P) or escapes");
	}
	if (isalnum(c) || c >= 0x80)
		return fail(x, "an escape Rust's regex syntax does not have or execd does not "
		    "translate");
	return c;	/* escaped punctuation is itself */
}

static int
posix_class(struct rx *x, byteset s)
{
	static const char *const names[] = { "alnum", "alpha", "ascii", "blank", "cntrl",
	    "digit", "graph", "lower", "print", "punct", "space", "upper", "word", "xdigit",
	    NULL };
	const char	*close;
	byteset		 t;
	size_t		 i, n;
	int		 neg, c;

	x->p += 2;	/* "[:" */
	neg = x->p < x->end && *x->p == '^';
	x->p += neg;
	if ((close = strstr(x->p, ":]")) == NULL || close > x->end)
		return fail(x, "an unterminated [: class");
	n = (size_t)(close - x->p);
	for (i = 0; names[i] != NULL; i++)
		if (strlen(names[i]) == n && strncmp(x->p, names[i], n) == 0)
			break;
	if (names[i] == NULL)
		return fail(x, "an unknown [:name:] class");
	memset(t, 0, sizeof(t));
	for (c = 1; c < 128; c++) {
		switch (i) {
		case 0: if (isalnum(c)) set_add(t, c); break;
		case 1: if (isalpha(c)) set_add(t, c); break;
		case 2: set_add(t, c); break;
		case 3: if (c == ' ' || c == '\t') set_add(t, c); break;
		case 4: if (iscntrl(c)) set_add(t, c); break;
		case 5: if (isdigit(c)) set_add(t, c); break;
		case 6: if (isgraph(c)) set_add(t, c); break;
		case 7: if (islower(c)) set_add(t, c); break;
		case 8: if (isprint(c)) set_add(t, c); break;
		case 9: if (ispunct(c)) set_add(t, c); break;
		case 10: if (isspace(c)) set_add(t, c); break;
		case 11: if (isupper(c)) set_add(t, c); break;
		case 12: if (isalnum(c) || c == '_') set_add(t, c); break;
		case 13: if (isxdigit(c)) set_add(t, c); break;
		}
	}
	if (neg)
		set_invert(t);
	for (i = 0; i < sizeof(byteset); i++)
		s[i] |= t[i];
	x->p = close + 2;
	return 0;
}

/* One class item's byte (or -2 with a set merged into s), or -1. */
static int
class_atom(struct rx *x, byteset s)
{
	unsigned char	c = (unsigned char)*x->p;

	if (c == '\\') {
		x->p++;
		return escape(x, s);
	}
	if (c >= 0x80)
		return fail(x, "non-ASCII in a class (Unicode is not supported)");
	if (c == '[')
		return fail(x, "a nested class or class set operation");
	if (x->p + 1 < x->end && strchr("&-~", c) != NULL && x->p[1] == (char)c)
		return fail(x, "a class set operation (&&, --, ~~)");
	x->p++;
	return c;
}

static int
class(struct rx *x)
{
	byteset	s;
	int	neg, lo, hi, first = 1;

	memset(s, 0, sizeof(s));
	x->p++;		/* '[' */
	if ((neg = x->p < x->end && *x->p == '^'))
		x->p++;
	for (;;) {
		if (x->p >= x->end)
			return fail(x, "an unterminated class");
		if (*x->p == ']' && !first)
			break;
		if (x->p + 1 < x->end && x->p[0] == '[' && x->p[1] == ':') {
			if (posix_class(x, s) == -1)
				return -1;
			first = 0;
			continue;
		}
		if (first && *x->p == ']') {
			x->p++;
			lo = ']';
		} else if ((lo = class_atom(x, s)) == -1)
			return -1;
		first = 0;
		if (lo == -2)
			continue;
		hi = lo;
		if (x->p + 1 < x->end && *x->p == '-' && x->p[1] != ']') {
			x->p++;
			if ((hi = class_atom(x, s)) < 0)
				return hi == -2 ? fail(x, "a range ending in a class") : -1;
			if (hi < lo)
				return fail(x, "a class range out of order");
		}
		set_range(s, (unsigned)lo, (unsigned)hi);
	}
	x->p++;		/* ']' */
	if (neg)
		set_invert(s);
	s[0] &= (uint8_t)~1u;	/* no NUL */
	return emit_set(x, s);
}

/* "(?..." after the '(' */
static int
group_open(struct rx *x)
{
	const char	*q = x->p + 1;

	if (q < x->end && *q == ':') {
		x->p = q + 1;
		return emit(x, "(", 1);
	}
	if (q < x->end && (*q == '<' || (*q == 'P' && q + 1 < x->end && q[1] == '<'))) {
		while (q < x->end && *q != '>')
			q++;
		if (q >= x->end)
			return fail(x, "an unterminated group name");
		x->p = q + 1;
		return emit(x, "(", 1);
	}
	if (x->p - 1 == x->start && q + 1 < x->end && q[0] == 'i' && q[1] == ')') {
		x->icase = 1;
		x->p = q + 2;
		return 0;
	}
	return fail(x, "inline flags other than a leading (?i)");
}

/* a group opens: its atoms are counted apart */
static int
push(struct rx *x)
{
	if (x->depth >= RX_DEPTH_MAX)
		return fail(x, "groups nested too deep");
	x->depth++;
	x->size[x->depth] = x->last[x->depth] = 0;
	return 0;
}

/* it closes: one atom of its size in the group around it */
static int
pop(struct rx *x)
{
	size_t	n;

	if (x->depth == 0)
		return fail(x, "an unopened group");
	n = x->size[x->depth--];
	return grow(x, n);
}

/*
 * The last atom repeated: glibc makes k copies of it (a+ is aa*, a{2,5}
 * five).  Rust refuses a repetition of nothing or of a repetition (a**,
 * a++), and so does execd: glibc would double the copies at each one.
 */
static int
repeat_last(struct rx *x, size_t k)
{
	size_t	last = x->last[x->depth];

	if (last == 0 || x->repeated)
		return fail(x, "a repetition of nothing or of a repetition");
	if (k > 1 && grow(x, last * (k - 1)) == -1)
		return -1;
	x->last[x->depth] = last * (k ? k : 1);
	x->repeated = 1;
	return 0;
}

/* {n}, {n,}, {n,m} between p and q ('}'): the last atom counted that often */
static int
repeat(struct rx *x, const char *p, const char *q)
{
	unsigned long	 n = 0, m;

	while (p < q && (isdigit((unsigned char)*p) || *p == ' ')) {
		if (isdigit((unsigned char)*p))
			n = n * 10 + (unsigned long)(*p - '0');
		if (n > RX_REPEAT_MAX)
			return fail(x, "a repetition count over 1000");
		p++;
	}
	m = n + 1;
	if (p < q && *p == ',') {
		for (p++; p < q && *p == ' '; p++)
			;
		if (p < q)
			m = 0;
		for (; p < q; p++) {
			if (isdigit((unsigned char)*p))
				m = m * 10 + (unsigned long)(*p - '0');
			if (m > RX_REPEAT_MAX)
				return fail(x, "a repetition count over 1000");
		}
		if (m < n && m != n + 1)
			return fail(x, "a repetition whose bounds are out of order");
	} else
		m = n;
	return repeat_last(x, m);
}

/* {n}, {n,} or {n,m}, copied; anything else is an error in Rust too */
static int
counted(struct rx *x)
{
	const char	*q = x->p + 1;
	int		 digits = 0;

	while (q < x->end && (isdigit((unsigned char)*q) || *q == ',' || *q == ' ')) {
		digits += isdigit((unsigned char)*q) != 0;
		q++;
	}
	if (q >= x->end || *q != '}' || digits == 0 || x->p[1] == ',')
		return fail(x, "a malformed {} repetition");
	if (repeat(x, x->p + 1, q) == -1)
		return -1;
	for (; x->p <= q; x->p++)
		if (*x->p != ' ' && emit(x, x->p, 1) == -1)
			return -1;
	return 0;
}

static int
atom(struct rx *x)
{
	byteset		s;
	unsigned char	c = (unsigned char)*x->p;
	int		b;

	switch (c) {
	case '[':
		return grow(x, 1) == -1 ? -1 : class(x);
	case '(':
		x->p++;
		if (x->p < x->end && *x->p == '?' && (x->p + 2 >= x->end || x->p[1] != 'i' ||
		    x->p[2] != ')'))
			return push(x) == -1 ? -1 : group_open(x);
		if (x->p < x->end && *x->p == '?')
			return group_open(x);
		return push(x) == -1 ? -1 : emit(x, "(", 1);
	case ')':
		x->p++;
		return pop(x) == -1 ? -1 : emit(x, ")", 1);
	case '|': case '^': case '$':
		x->p++;
		x->last[x->depth] = 0;
		return emit(x, (const char *)&c, 1);
	case '*': case '+': case '?':
		x->p++;
		if (x->p < x->end && *x->p == '?')
			x->p++;		/* lazy: the same whole-value matches */
		if (repeat_last(x, c == '+' ? 2 : 1) == -1)
			return -1;
		return emit(x, (const char *)&c, 1);
	case '{':
		if (counted(x) == -1)
			return -1;
		if (x->p < x->end && *x->p == '?')
			x->p++;
		return 0;
	case '.':
		if (grow(x, 1) == -1)
			return -1;
		memset(s, 0xff, sizeof(s));
		s[0] &= (uint8_t)~1u;
		s['\n' / 8] &= (uint8_t)~(1u << ('\n' % 8));
		x->p++;
		return emit_set(x, s);
	case '\\':
		x->p++;
		if (grow(x, 1) == -1)
			return -1;
		if (x->p < x->end && strchr("bBAz", *x->p) != NULL && *x->p != '\0') {
			c = (unsigned char)*x->p++;
			return c == 'A' ? emit(x, "^", 1) : c == 'z' ? emit(x, "$", 1) :
			    emit(x, c == 'b' ? "\\b" : "\\B", 2);
		}
		memset(s, 0, sizeof(s));
		if ((b = escape(x, s)) == -1)
			return -1;
		return b == -2 ? emit_set(x, s) : emit_literal(x, (unsigned char)b);
	}
	x->p++;
	return grow(x, 1) == -1 ? -1 : emit_literal(x, c);
}

int
mask_re_translate(const char *pattern, regex_t *re, char **ere, int *icase, char *why,
    size_t whylen)
{
	struct rx	x;
	int		rc;

	memset(&x, 0, sizeof(x));
	if (strlen(pattern) > MASK_PATTERN_MAX) {
		snprintf(why, whylen, "the pattern exceeds %d bytes", MASK_PATTERN_MAX);
		return -1;
	}
	x.start = x.p = pattern;
	x.end = pattern + strlen(pattern);
	rc = emit(&x, "^(", 2);
	while (rc == 0 && x.p < x.end)
		rc = atom(&x);
	if (rc == 0)
		rc = emit(&x, ")$", 3);		/* with the NUL */
	if (rc == 0 && regcomp(re, (char *)x.out.data, REG_EXTENDED | REG_NOSUB |
	    (x.icase ? REG_ICASE : 0)) != 0) {
		x.why = "not a valid pattern";
		rc = -1;
	}
	if (rc == 0 && ere != NULL && (*ere = strdup((char *)x.out.data)) == NULL) {
		regfree(re);
		x.why = "out of memory";
		rc = -1;
	}
	if (icase != NULL)
		*icase = x.icase;
	buf_free(&x.out);
	if (rc == 0 && regexec(re, "", 0, NULL, 0) == 0) {
		regfree(re);
		if (ere != NULL) {
			free(*ere);
			*ere = NULL;
		}
		x.why = "the pattern matches an empty value";
		rc = -1;
	}
	if (rc == -1)
		snprintf(why, whylen, "%s", x.why ? x.why : "not a valid pattern");
	return rc;
}
