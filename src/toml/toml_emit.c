/*
 * The TOML writer, printing a tree as the reference re-serialises one:
 * a table's plain values first, then its tables as [sections] (inline
 * tables and dotted keys too) and arrays of tables as [[sections]], depth
 * first, a blank line before each header; a table holding only tables
 * gets no header of its own unless it is empty.  Floats are plain
 * decimals of the shortest digits that read back the same; each string
 * takes the first form that holds it without escaping a quote, a
 * backslash or a control character (basic, literal, multi-line basic,
 * multi-line literal), else an escaped basic one; a basic string always
 * shows a tab as \t.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toml/toml.h"

struct out {
	char	*s;
	size_t	 len, cap;
	int	 oom;
};

static void
put(struct out *o, const char *s, size_t n)
{
	char	*ns;
	size_t	 cap;

	if (o->oom)
		return;
	if (o->len + n + 1 > o->cap) {
		cap = o->cap != 0 ? o->cap : 256;
		while (cap < o->len + n + 1)
			cap *= 2;
		if ((ns = realloc(o->s, cap)) == NULL) {
			o->oom = 1;
			return;
		}
		o->s = ns;
		o->cap = cap;
	}
	memcpy(o->s + o->len, s, n);
	o->len += n;
	o->s[o->len] = '\0';
}

static void
puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* What a string holds, to choose its form. */
struct shape {
	int	ctl;		/* a control character other than tab and newline */
	int	bs, nl, dq;
	size_t	sq_run, dq_run;	/* longest runs of ' and " */
};

static void
shape_of(const char *s, size_t len, struct shape *sh)
{
	size_t	i, sq = 0, dq = 0;
	int	c;

	memset(sh, 0, sizeof(*sh));
	for (i = 0; i < len; i++) {
		c = (unsigned char)s[i];
		sq = c == '\'' ? sq + 1 : 0;
		dq = c == '"' ? dq + 1 : 0;
		if (sq > sh->sq_run)
			sh->sq_run = sq;
		if (dq > sh->dq_run)
			sh->dq_run = dq;
		if (c == '\n')
			sh->nl = 1;
		else if ((c < 0x20 && c != '\t') || c == 0x7F)
			sh->ctl = 1;
		sh->bs |= c == '\\';
		sh->dq |= c == '"';
	}
}

/*
 * A basic string's text: tab and control characters escaped, and in a
 * multi-line one the newlines kept and only a third quote in a row
 * escaped.
 */
static void
escaped(struct out *o, const char *s, size_t len, int ml)
{
	char	u[8];
	size_t	i, dq = 0;
	int	c;

	for (i = 0; i < len; i++) {
		c = (unsigned char)s[i];
		dq = c == '"' ? dq + 1 : 0;
		switch (c) {
		case '\b': puts_(o, "\\b"); break;
		case '\t': puts_(o, "\\t"); break;
		case '\f': puts_(o, "\\f"); break;
		case '\r': puts_(o, "\\r"); break;
		case '\\': puts_(o, "\\\\"); break;
		case '\n': puts_(o, ml ? "\n" : "\\n"); break;
		case '"':
			if (!ml || dq == 3) {
				puts_(o, "\\\"");
				dq = 0;
			} else
				puts_(o, "\"");
			break;
		default:
			if (c < 0x20 || c == 0x7F) {
				snprintf(u, sizeof(u), "\\u%04X", c);
				puts_(o, u);
			} else
				put(o, &s[i], 1);
		}
	}
}

static void
quoted(struct out *o, const char *open, const char *s, size_t len, int nl)
{
	puts_(o, open);
	if (nl)
		puts_(o, "\n");
	put(o, s, len);
	puts_(o, open);
}

/* A string value, or a key (key: one line only). */
static void
string(struct out *o, const char *s, size_t len, int key)
{
	struct shape	sh;
	int		ml;

	shape_of(s, len, &sh);
	ml = !key && sh.nl;
	if (!sh.ctl && !sh.bs && !sh.dq && !sh.nl)
		ml = 0;				/* plain basic */
	else if (!sh.ctl && sh.sq_run == 0 && !sh.nl) {
		quoted(o, "'", s, len, 0);
		return;
	} else if (!key && !sh.ctl && !sh.bs && sh.dq_run < 3) {
		puts_(o, "\"\"\"");
		puts_(o, sh.nl ? "\n" : "");
		escaped(o, s, len, 1);
		puts_(o, "\"\"\"");
		return;
	} else if (!key && !sh.ctl && sh.sq_run < 3) {
		quoted(o, "'''", s, len, sh.nl);
		return;
	}
	puts_(o, ml ? "\"\"\"\n" : "\"");
	escaped(o, s, len, ml);
	puts_(o, ml ? "\"\"\"" : "\"");
}

static void
key(struct out *o, const struct toml_key *k)
{
	size_t	i;

	for (i = 0; i < k->len; i++) {
		char	c = k->s[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '_' || c == '-'))
			break;
	}
	if (k->len > 0 && i == k->len)
		put(o, k->s, k->len);
	else
		string(o, k->s, k->len, 1);
}

/* The shortest digits that read back as v, as a plain decimal. */
static void
floating(struct out *o, double v)
{
	char	e[40], digs[24], text[400];
	int	prec, exp, nd, i, n = 0;
	char	*p;

	if (isnan(v)) {
		puts_(o, "nan");
		return;
	}
	if (isinf(v)) {
		puts_(o, v < 0 ? "-inf" : "inf");
		return;
	}
	for (prec = 1; prec <= 17; prec++) {
		snprintf(e, sizeof(e), "%.*e", prec - 1, v);
		if (strtod(e, NULL) == v)
			break;
	}
	p = e;
	if (*p == '-')
		text[n++] = *p++;
	for (nd = 0; *p != 'e' && nd < (int)sizeof(digs) - 1; p++)
		if (*p != '.')
			digs[nd++] = *p;
	exp = atoi(p + 1);
	while (nd > 1 && digs[nd - 1] == '0')
		nd--;
	if (exp < 0) {
		n += snprintf(text + n, sizeof(text) - n, "0.");
		for (i = 0; i < -exp - 1; i++)
			text[n++] = '0';
		memcpy(text + n, digs, nd);
		n += nd;
	} else {
		for (i = 0; i <= exp || i < nd; i++) {
			if (i == exp + 1)
				text[n++] = '.';
			text[n++] = i < nd ? digs[i] : '0';
		}
		if (nd <= exp + 1)
			n += snprintf(text + n, sizeof(text) - n, ".0");
	}
	put(o, text, n);
}

static int	is_aot(const struct toml_node *);
static void	value(struct out *, const struct toml_node *);

static void
inline_table(struct out *o, const struct toml_node *t)
{
	size_t	i;

	if (t->n == 0) {
		puts_(o, "{}");
		return;
	}
	puts_(o, "{ ");
	for (i = 0; i < t->n; i++) {
		if (i > 0)
			puts_(o, ", ");
		key(o, &t->key[i]);
		puts_(o, " = ");
		value(o, t->kid[i]);
	}
	puts_(o, " }");
}

static void
value(struct out *o, const struct toml_node *v)
{
	char	buf[32];
	size_t	i;

	switch (v->kind) {
	case TOML_STRING:
		string(o, v->str, v->len, 0);
		break;
	case TOML_INT:
		snprintf(buf, sizeof(buf), "%lld", v->i);
		puts_(o, buf);
		break;
	case TOML_FLOAT:
		floating(o, v->f);
		break;
	case TOML_BOOL:
		puts_(o, v->i ? "true" : "false");
		break;
	case TOML_DATETIME:
		put(o, v->str, v->len);
		break;
	case TOML_ARRAY:
		puts_(o, "[");
		for (i = 0; i < v->n; i++) {
			if (i > 0)
				puts_(o, ", ");
			value(o, v->kid[i]);
		}
		puts_(o, "]");
		break;
	case TOML_TABLE:
		inline_table(o, v);
		break;
	}
}

/* An array of tables only (not empty) is printed as [[sections]]. */
static int
is_aot(const struct toml_node *v)
{
	size_t	i;

	if (v->kind != TOML_ARRAY || v->n == 0)
		return 0;
	for (i = 0; i < v->n; i++)
		if (v->kid[i]->kind != TOML_TABLE)
			return 0;
	return 1;
}

/* The chain of keys from the root to the table being printed. */
struct path {
	const struct toml_key	*k[TOML_MAX_DEPTH * 3 + 2];
	size_t			 n;
};

static void
section_header(struct out *o, const struct path *p, int aot)
{
	size_t	i;

	if (o->len > 0)
		puts_(o, "\n");
	puts_(o, aot ? "[[" : "[");
	for (i = 0; i < p->n; i++) {
		if (i > 0)
			puts_(o, ".");
		key(o, p->k[i]);
	}
	puts_(o, aot ? "]]\n" : "]\n");
}

static void
table(struct out *o, const struct toml_node *t, struct path *p, int aot)
{
	size_t	i, j, plain = 0;

	for (i = 0; i < t->n; i++)
		if (t->kid[i]->kind != TOML_TABLE && !is_aot(t->kid[i]))
			plain++;
	if (p->n > 0 && (aot || plain > 0 || t->n == 0))
		section_header(o, p, aot);
	for (i = 0; i < t->n; i++) {
		if (t->kid[i]->kind == TOML_TABLE || is_aot(t->kid[i]))
			continue;
		key(o, &t->key[i]);
		puts_(o, " = ");
		value(o, t->kid[i]);
		puts_(o, "\n");
	}
	if (p->n >= sizeof(p->k) / sizeof(p->k[0]))
		return;
	for (i = 0; i < t->n; i++) {
		p->k[p->n++] = &t->key[i];
		if (t->kid[i]->kind == TOML_TABLE)
			table(o, t->kid[i], p, 0);
		else if (is_aot(t->kid[i]))
			for (j = 0; j < t->kid[i]->n; j++)
				table(o, t->kid[i]->kid[j], p, 1);
		p->n--;
	}
}

char *
toml_emit(const struct toml_node *root, size_t *len)
{
	struct out	o = { NULL, 0, 0, 0 };
	struct path	p;

	p.n = 0;
	put(&o, "", 0);
	table(&o, root, &p, 0);
	if (o.oom) {
		free(o.s);
		return NULL;
	}
	*len = o.len;
	return o.s;
}

char *
toml_float_text(double v)
{
	struct out	o = { NULL, 0, 0, 0 };

	floating(&o, v);
	put(&o, "", 1);		/* its NUL */
	if (o.oom) {
		free(o.s);
		return NULL;
	}
	return o.s;
}
