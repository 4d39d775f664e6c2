/*
 * A random value drawn from a provider's pattern, as the reference draws
 * its dummies: any branch of an alternation, any count a repetition allows
 * (up to SAMPLE_EXTRA more than its least for * + and {n,}), any member of
 * a class, letters in either case under (?i).  It reads the ERE that
 * netproxy_mask_re.c made of the pattern (that form only: literals, the
 * specials as [c] or \c, brackets of bytes and ranges, groups, | and the
 * repetitions; ^ $ \b \B as zero-width) and draws printable ASCII only, so
 * a dummy is a valid header value.  It owes nothing to the real value.
 * The caller checks the result against the compiled pattern: \b and \B
 * are not honoured here, so a draw can miss.
 */
#include "config.h"

#include <sys/random.h>

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "netproxy/netproxy_mask.h"

#define SAMPLE_EXTRA	40	/* most copies beyond the least of an open repetition */
#define SAMPLE_DEPTH	64
#define SAMPLE_STEPS	200000	/* atoms visited per draw: ((a{0})*)* draws nothing, forever */

struct gen {
	const char	*p;
	char		*out;
	size_t		 len, max, steps;
	int		 icase, depth;
};

static int	gen_alt(struct gen *, int on);

/* uniform in [0, n), from getrandom(2); -1 if it fails */
static long
rnd(unsigned long n)
{
	uint32_t	v;

	if (n <= 1)
		return 0;
	do {
		if (getrandom(&v, sizeof(v), 0) != sizeof(v))
			return -1;
	} while (v >= UINT32_MAX - UINT32_MAX % n);
	return (long)(v % n);
}

static int
put(struct gen *g, unsigned char c)
{
	long	flip = 0;

	if (g->len >= g->max || c < 0x20 || c >= 0x7f)
		return -1;	/* too long, or not printable ASCII */
	if (g->icase && isalpha(c) && (flip = rnd(2)) == -1)
		return -1;
	g->out[g->len++] = (char)(flip ? (islower(c) ? toupper(c) : tolower(c)) : c);
	return 0;
}

/* one printable member of the bracket at g->p ('[' ... ']'), or -1 */
static int
gen_bracket(struct gen *g, int on)
{
	unsigned char	set[256], pick[95];
	unsigned	c, lo, n = 0;
	long		r;

	memset(set, 0, sizeof(set));
	g->p++;
	if (*g->p == ']')
		set[(unsigned char)*g->p++] = 1;
	while (*g->p != '\0' && *g->p != ']') {
		lo = (unsigned char)*g->p++;
		if (g->p[0] == '-' && g->p[1] != ']' && g->p[1] != '\0') {
			for (c = lo; c <= (unsigned char)g->p[1]; c++)
				set[c] = 1;
			g->p += 2;
		} else
			set[lo] = 1;
	}
	if (*g->p++ != ']')
		return -1;
	if (!on)
		return 0;
	for (c = 0x20; c < 0x7f; c++)
		if (set[c])
			pick[n++] = (unsigned char)c;
	if (n == 0 || (r = rnd(n)) == -1)
		return -1;
	return put(g, pick[r]);
}

static int
gen_atom(struct gen *g, int on)
{
	unsigned char	c = (unsigned char)*g->p;
	long		r;

	if (++g->steps > SAMPLE_STEPS)
		return -1;
	switch (c) {
	case '(':
		g->p++;
		if (++g->depth > SAMPLE_DEPTH || gen_alt(g, on) == -1 || *g->p != ')')
			return -1;
		g->depth--;
		g->p++;
		return 0;
	case '[':
		return gen_bracket(g, on);
	case '.':
		g->p++;
		if (on && (r = rnd(0x7f - 0x20)) == -1)
			return -1;
		return on ? put(g, (unsigned char)(0x20 + r)) : 0;
	case '^': case '$':
		g->p++;
		return 0;
	case '\\':
		c = (unsigned char)g->p[1];
		if (c == '\0')
			return -1;
		g->p += 2;
		if (strchr("bB<>`'", c) != NULL)
			return 0;	/* zero width */
		return on ? put(g, c) : 0;
	case '\0': case ')': case '|': case '*': case '+': case '?': case '{':
		return -1;
	default:
		g->p++;
		return on ? put(g, c) : 0;
	}
}

/* the repetition after an atom: *lo, *hi (-1 open); g->p past it */
static int
quantifier(struct gen *g, unsigned long *lo, long *hi)
{
	char	*end;

	*lo = 1;
	*hi = 1;
	switch (*g->p) {
	case '*': *lo = 0; *hi = -1; g->p++; return 0;
	case '+': *lo = 1; *hi = -1; g->p++; return 0;
	case '?': *lo = 0; *hi = 1; g->p++; return 0;
	case '{':
		break;
	default:
		return 0;
	}
	*lo = strtoul(g->p + 1, &end, 10);
	*hi = (long)*lo;
	if (*end == ',') {
		*hi = isdigit((unsigned char)end[1]) ? strtol(end + 1, &end, 10) : -1;
		if (*hi == -1)
			end++;
	}
	if (*end != '}' || (*hi != -1 && (unsigned long)*hi < *lo))
		return -1;
	g->p = end + 1;
	return 0;
}

static int
gen_seq(struct gen *g, int on)
{
	const char	*start, *after;
	unsigned long	 lo, k, i;
	long		 hi, r = 0;

	while (*g->p != '\0' && *g->p != '|' && *g->p != ')') {
		start = g->p;
		if (gen_atom(g, 0) == -1 || quantifier(g, &lo, &hi) == -1)
			return -1;
		after = g->p;
		if (on && (r = rnd(hi == -1 ? SAMPLE_EXTRA + 1 : (unsigned long)hi - lo + 1)) == -1)
			return -1;
		k = on ? lo + (unsigned long)r : 0;
		for (i = 0; i < k; i++) {
			g->p = start;
			if (gen_atom(g, 1) == -1)
				return -1;
		}
		g->p = after;
	}
	return 0;
}

/* branches up to the ')' or the end: one drawn when on, the rest read past */
static int
gen_alt(struct gen *g, int on)
{
	const char	*start = g->p;
	unsigned long	 n = 1, i;
	long		 pick;

	if (gen_seq(g, 0) == -1)
		return -1;
	while (*g->p == '|') {
		g->p++;
		if (gen_seq(g, 0) == -1)
			return -1;
		n++;
	}
	if ((pick = on ? rnd(n) : -2) == -1)
		return -1;
	g->p = start;
	for (i = 0; i < n; i++) {
		if (i > 0)
			g->p++;		/* the '|' */
		if (gen_seq(g, (long)i == pick) == -1)
			return -1;
	}
	return 0;
}

char *
mask_re_sample(const char *ere, int icase, size_t max)
{
	struct gen	g;

	memset(&g, 0, sizeof(g));
	g.p = ere;
	g.icase = icase;
	g.max = max;
	if ((g.out = malloc(max + 1)) == NULL)
		return NULL;
	if (gen_alt(&g, 1) == -1 || *g.p != '\0') {
		free(g.out);
		return NULL;
	}
	g.out[g.len] = '\0';
	return g.out;
}
