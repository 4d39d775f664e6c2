/*
 * The TOML reader: a document into a toml_node tree.  Errors carry the
 * reference's wording and position where this reader knows it (the
 * common mistakes: an unquoted value, an unclosed string, array or inline
 * table, a duplicate key, a bad escape, trailing text), so that what a
 * user sees names the same line and column.
 */
#include "config.h"

#include <stdio.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "toml/toml.h"
#include "toml/toml_int.h"

#define E_DUP		"duplicate key"
#define E_BAREKEY	"invalid unquoted key, expected letters, numbers, `-`, `_`"

#define MAX_KEY_PARTS	TOML_MAX_DEPTH

struct keypart {
	char		*s;
	size_t		 len;
	const char	*at;		/* where it starts, for errors */
	const char	*end;		/* and where it ends */
};

struct dotted {
	struct keypart	part[MAX_KEY_PARTS];
	size_t		n;
};

static int	parse_value(struct tparser *, struct toml_node **);

/*
 * Text the shape pass (toml_shape.c) would have refused first: never met
 * after it passed, but refused all the same if it were.
 */
static int
shape_slip(struct tparser *P)
{
	return tp_fail(P, P->p, 1, "unexpected content, expected nothing");
}

/*
 * A duplicate key is reported only when the document has no syntax error,
 * as the reference reports it: the first one is noted, and what it would
 * have defined goes to a table that is thrown away.
 */
static struct toml_node *
duplicate(struct tparser *P, const struct keypart *k, const char *why)
{
	struct toml_node	*t;

	if (P->dup_at == NULL) {
		P->dup_at = k->at;
		P->dup_why = why;
		/* the reference reports it once the key's value is read */
		P->dup_order = P->p;
		/* the reference's caret runs under the whole key's bytes */
		P->dup_span = (size_t)(k->end - k->at);
	}
	if ((t = toml_table_new()) == NULL || toml_table_add(P->sink, "", 0, t) == -1) {
		tp_oom(P);
		return NULL;
	}
	return t;
}

static void
dotted_free(struct dotted *k)
{
	size_t	i;

	for (i = 0; i < k->n; i++)
		free(k->part[i].s);
	k->n = 0;
}

static void
skip_ws(struct tparser *P)
{
	while (P->p < P->end && (*P->p == ' ' || *P->p == '\t'))
		P->p++;
}

/* A comment to its line's end; 0, or -1 on a control character. */
static int
skip_comment(struct tparser *P)
{
	unsigned char	c;

	if (P->p >= P->end || *P->p != '#')
		return 0;
	for (P->p++; P->p < P->end && *P->p != '\n'; P->p++) {
		c = (unsigned char)*P->p;
		if (c == '\r' && P->p + 1 < P->end && P->p[1] == '\n')
			continue;
		if ((c < 0x20 && c != '\t') || c == 0x7F)
			return tp_fail(P, P->p, 1,
			    "invalid comment character, expected printable characters");
	}
	return 0;
}

/* Whitespace, comments and newlines (inside arrays); 0 or -1. */
static int
skip_ws_nl(struct tparser *P)
{
	int	nl;

	for (;;) {
		skip_ws(P);
		if (skip_comment(P) == -1)
			return -1;
		if ((nl = tp_newline(P, P->p)) == 0)
			return 0;
		P->p += nl;
	}
}

static int
is_bare(int c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* A byte that ends a word (the reference's token starts, quotes aside). */
static int
word_end(int c)
{
	return c == '\0' ? 0 : strchr(".=,[]{} \t#\r\n", c) != NULL;
}

static const char *
word_run(const struct tparser *P, const char *q)
{
	while (q < P->end && !word_end((unsigned char)*q))
		q++;
	return q;
}

static int
word_start(const struct tparser *P, const char *q)
{
	return q < P->end && !word_end((unsigned char)*q) && *q != '"' && *q != '\'';
}

/* The caret's width under a run of bytes no key has, from p to end (bytes, as the reference). */
static size_t
bad_run(const char *p, const char *end)
{
	size_t	n = 0;

	while (p + n < end && !is_bare((unsigned char)p[n]))
		n++;
	return n;
}

static int
simple_key(struct tparser *P, struct keypart *k)
{
	const char	*s = P->p, *q;

	k->at = s;
	if (s < P->end && (*s == '"' || *s == '\'')) {
		if (s + 2 < P->end && s[1] == s[0] && s[2] == s[0])
			return tp_fail(P, s, 1, "invalid key");
		return tp_string(P, &k->s, &k->len);
	}
	/* the reference's key is the whole word, whatever bytes it holds */
	P->p = word_run(P, s);
	if (P->p == s)
		return tp_fail(P, s, 1,
		    "unquoted keys cannot be empty, expected letters, numbers, `-`, `_`");
	for (q = s; q < P->p; q++)
		if (!is_bare((unsigned char)*q))
			return tp_fail(P, q, bad_run(q, P->p), E_BAREKEY);
	if ((k->s = strndup(s, (size_t)(P->p - s))) == NULL)
		return tp_oom(P);
	k->len = (size_t)(P->p - s);
	return 0;
}

static int
parse_key(struct tparser *P, struct dotted *k)
{
	k->n = 0;
	for (;;) {
		if (k->n == MAX_KEY_PARTS)
			return tp_fail(P, P->p, 1, "too many dotted key parts (at most %d)",
			    MAX_KEY_PARTS);
		skip_ws(P);
		if (simple_key(P, &k->part[k->n]) == -1)
			return -1;
		k->part[k->n++].end = P->p;
		skip_ws(P);
		if (P->p >= P->end || *P->p != '.')
			return 0;
		P->p++;
	}
}

/* Add kid under k in t, or fail with the table full; takes kid. */
static int
add_kid(struct tparser *P, struct toml_node *t, const struct keypart *k,
    struct toml_node *kid)
{
	if (toml_table_add(t, k->s, k->len, kid) == -1)
		return tp_oom(P);
	return 0;
}

/* The reference's words for a value a header or dotted key runs through. */
static const char *
extend_error(const struct toml_node *v)
{
	switch (v->kind) {
	case TOML_STRING:
		return "cannot extend value of type string with a dotted key";
	case TOML_INT:
		return "cannot extend value of type integer with a dotted key";
	case TOML_FLOAT:
		return "cannot extend value of type float with a dotted key";
	case TOML_BOOL:
		return "cannot extend value of type boolean with a dotted key";
	case TOML_DATETIME:
		return "cannot extend value of type datetime with a dotted key";
	case TOML_ARRAY:
		return "cannot extend value of type array with a dotted key";
	default:
		return "cannot extend value of type inline table with a dotted key";
	}
}

/* The table a dotted key's or header's inner part names, made if missing. */
static struct toml_node *
descend(struct tparser *P, struct toml_node *t, const struct keypart *k, int header)
{
	struct toml_node	*kid = toml_table_get(t, k->s, k->len);

	if (kid == NULL) {
		if ((kid = toml_table_new()) == NULL) {
			tp_oom(P);
			return NULL;
		}
		kid->flags = header ? 0 : TOML_F_DOTTED;
		return add_kid(P, t, k, kid) == -1 ? NULL : kid;
	}
	if (header && kid->kind == TOML_ARRAY && (kid->flags & TOML_F_AOT) && kid->n > 0)
		return kid->kid[kid->n - 1];
	if (kid->kind != TOML_TABLE || (kid->flags & TOML_F_INLINE))
		return duplicate(P, k, extend_error(kid));
	if (!header && !(kid->flags & TOML_F_DOTTED))
		return duplicate(P, k, E_DUP);
	return kid;
}

/* Everything inside an inline table is sealed with it. */
static void
seal(struct toml_node *n)
{
	size_t	i;

	if (n->kind != TOML_TABLE && n->kind != TOML_ARRAY)
		return;
	n->flags |= TOML_F_INLINE;
	for (i = 0; i < n->n; i++)
		seal(n->kid[i]);
}

/* Blanks, and in an inline table line ends and comments too; 0 or -1. */
static int
value_gap(struct tparser *P)
{
	if (P->depth > 0)
		return skip_ws_nl(P);
	skip_ws(P);
	return 0;
}

static int
keyval(struct tparser *P, struct toml_node *t)
{
	struct dotted		 k;
	struct toml_node	*v = NULL;
	size_t			 i;
	int			 rc = -1;

	if (parse_key(P, &k) == -1)
		goto done;
	/*
	 * The shape is sound (toml_shape.c): '=' follows, past line ends and
	 * comments in an inline table.  There a missing '=' or value is an
	 * empty literal string to the reference, refused at the '}'.
	 */
	if (value_gap(P) == -1)
		goto done;
	if (P->p < P->end && *P->p == '=') {
		P->p++;
		if (value_gap(P) == -1)
			goto done;
	}
	if (P->p < P->end && *P->p == '}') {
		tp_fail(P, P->p, 1, "invalid literal string, expected `'`");
		goto done;
	}
	if (parse_value(P, &v) == -1)
		goto done;
	for (i = 0; i + 1 < k.n; i++)
		if ((t = descend(P, t, &k.part[i], 0)) == NULL)
			goto done;
	if (toml_table_get(t, k.part[i].s, k.part[i].len) != NULL &&
	    (t = duplicate(P, &k.part[i], E_DUP)) == NULL)
		goto done;
	rc = add_kid(P, t, &k.part[i], v);
	v = NULL;
done:
	toml_free(v);
	dotted_free(&k);
	return rc;
}

static int
parse_array(struct tparser *P, struct toml_node **out)
{
	struct toml_node	*a, *v;
	const char		*after;

	if ((a = calloc(1, sizeof(*a))) == NULL)
		return tp_oom(P);
	a->kind = TOML_ARRAY;
	a->flags = TOML_F_INLINE;
	*out = a;
	after = ++P->p;
	for (;;) {
		if (skip_ws_nl(P) == -1)
			return -1;
		if (P->p < P->end && *P->p == ']')
			break;
		if (P->p >= P->end)
			return shape_slip(P);
		if (parse_value(P, &v) == -1)
			return -1;
		if (toml_array_add(a, v) == -1)
			return tp_oom(P);
		after = P->p;
		if (skip_ws_nl(P) == -1)
			return -1;
		if (P->p < P->end && *P->p == ',') {
			P->p++;
			after = P->p;
			if (skip_ws_nl(P) == -1)
				return -1;
			if (P->p < P->end && *P->p == ']')
				break;
			P->p = after;
			continue;
		}
		if (P->p < P->end && *P->p == ']')
			break;
		return shape_slip(P);
	}
	P->p++;
	return 0;
}

static int
parse_inline(struct tparser *P, struct toml_node **out)
{
	struct toml_node	*t;

	if ((t = toml_table_new()) == NULL)
		return tp_oom(P);
	*out = t;
	P->p++;
	for (;;) {
		if (skip_ws_nl(P) == -1)
			return -1;
		if (P->p < P->end && *P->p == '}')
			break;
		if (P->p >= P->end)
			return shape_slip(P);
		if (keyval(P, t) == -1)
			return -1;
		if (skip_ws_nl(P) == -1)
			return -1;
		if (P->p < P->end && *P->p == ',') {
			P->p++;
			continue;
		}
		if (P->p < P->end && *P->p == '}')
			break;
		return shape_slip(P);
	}
	P->p++;
	seal(t);
	return 0;
}

/*
 * A value that is not a string, array or inline table: the whole word as
 * the reference cuts it out (runs joined by dots, and by blanks before
 * another run), read by toml_word.c.
 */
static int
word_value(struct tparser *P, struct toml_node **out)
{
	const char	*s = P->p, *q = P->p, *r;

	for (;;) {
		if (q < P->end && *q == '.') {
			q++;
			continue;
		}
		if (word_start(P, q)) {
			q = word_run(P, q);
			continue;
		}
		for (r = q; r < P->end && (*r == ' ' || *r == '\t'); r++)
			;
		if (r == q || !word_start(P, r) || q == s)
			break;
		q = word_run(P, r);
	}
	P->p = q;
	return tp_word(P, s, (size_t)(q - s), out);
}

static int
parse_value1(struct tparser *P, struct toml_node **out)
{
	int	c, rc;

	*out = NULL;
	if (P->p >= P->end)
		return word_value(P, out);
	c = (unsigned char)*P->p;
	if (c == '"' || c == '\'') {
		if ((*out = calloc(1, sizeof(**out))) == NULL)
			return tp_oom(P);
		(*out)->kind = TOML_STRING;
		return tp_string(P, &(*out)->str, &(*out)->len);
	}
	if (c != '[' && c != '{')
		return word_value(P, out);
	if (++P->depth > TOML_MAX_DEPTH)
		return tp_fail(P, P->p, 1, "nested too deeply (at most %d levels)",
		    TOML_MAX_DEPTH);
	rc = c == '[' ? parse_array(P, out) : parse_inline(P, out);
	P->depth--;
	return rc;
}

/* A value; nothing of it is left on failure. */
static int
parse_value(struct tparser *P, struct toml_node **out)
{
	if (parse_value1(P, out) == 0)
		return 0;
	toml_free(*out);
	*out = NULL;
	return -1;
}

/* [table] or [[array of tables]]: makes it the current table. */
static int
header(struct tparser *P)
{
	struct dotted		 k;
	struct toml_node	*t = P->root, *kid, *arr;
	size_t			 i;
	int			 aot = P->p + 1 < P->end && P->p[1] == '[', rc = -1;

	P->p += aot ? 2 : 1;
	rc = parse_key(P, &k);
	if (rc == -1)
		goto done;
	rc = -1;
	if (P->p >= P->end || *P->p != ']' || (aot && (P->p + 1 >= P->end || P->p[1] != ']'))) {
		shape_slip(P);
		goto done;
	}
	P->p += aot ? 2 : 1;
	for (i = 0; i + 1 < k.n; i++)
		if ((t = descend(P, t, &k.part[i], 1)) == NULL)
			goto done;
	kid = toml_table_get(t, k.part[i].s, k.part[i].len);
	if (aot) {
		if (kid == NULL) {
			if ((arr = calloc(1, sizeof(*arr))) == NULL) {
				tp_oom(P);
				goto done;
			}
			arr->kind = TOML_ARRAY;
			arr->flags = TOML_F_AOT;
			if (add_kid(P, t, &k.part[i], arr) == -1)
				goto done;
			kid = arr;
		} else if (kid->kind != TOML_ARRAY || !(kid->flags & TOML_F_AOT)) {
			P->cur = duplicate(P, &k.part[i], E_DUP);
			rc = P->cur == NULL ? -1 : 0;
			goto done;
		}
		if ((t = toml_table_new()) == NULL || toml_array_add(kid, t) == -1) {
			tp_oom(P);
			goto done;
		}
		t->flags = TOML_F_HEADER;
	} else if (kid == NULL) {
		if ((kid = toml_table_new()) == NULL) {
			tp_oom(P);
			goto done;
		}
		kid->flags = TOML_F_HEADER;
		if (add_kid(P, t, &k.part[i], kid) == -1)
			goto done;
		t = kid;
	} else if (kid->kind != TOML_TABLE ||
	    (kid->flags & (TOML_F_HEADER | TOML_F_DOTTED | TOML_F_INLINE))) {
		P->cur = duplicate(P, &k.part[i], E_DUP);
		rc = P->cur == NULL ? -1 : 0;
		goto done;
	} else {
		kid->flags |= TOML_F_HEADER;
		t = kid;
	}
	P->cur = t;
	rc = 0;
done:
	dotted_free(&k);
	return rc;
}

/* One line of the document: blank, comment, header or key/value. */
static int
line(struct tparser *P)
{
	int	nl;

	skip_ws(P);
	if (P->p < P->end && *P->p == '[') {
		if (header(P) == -1)
			return -1;
	} else if (P->p < P->end && *P->p != '#' && tp_newline(P, P->p) == 0) {
		if (keyval(P, P->cur) == -1)
			return -1;
	}
	skip_ws(P);
	if (skip_comment(P) == -1)
		return -1;
	if (P->p >= P->end)
		return 0;
	if ((nl = tp_newline(P, P->p)) == 0)
		return shape_slip(P);
	P->p += nl;
	return 0;
}

struct toml_node *
toml_parse(const char *buf, size_t len, struct toml_error *err)
{
	struct tparser		P;
	struct toml_shape_error	shape;

	memset(&P, 0, sizeof(P));
	memset(err, 0, sizeof(*err));
	P.buf = P.p = buf;
	P.end = buf + len;
	P.err = err;
	if (len > TOML_MAX_INPUT) {
		tp_fail(&P, buf, 1, "document larger than %u bytes", TOML_MAX_INPUT);
		return NULL;
	}
	if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
		P.p += 3;
	/* a shape error anywhere comes before what any key or value says */
	if (toml_shape(buf, len, (size_t)(P.p - buf), &shape) == -1) {
		tp_fail(&P, buf + shape.at, 1, "%s", shape.msg);
		return NULL;
	}
	if ((P.root = P.cur = toml_table_new()) == NULL || (P.sink = toml_table_new()) == NULL) {
		toml_free(P.root);
		tp_oom(&P);
		return NULL;
	}
	while (P.p < P.end && line(&P) == 0)
		;
	/*
	 * A duplicate key before where the text fails is the error the
	 * reference gives, unless the text is cut short.
	 */
	if (P.dup_at != NULL && (!P.failed || P.dup_order <= P.fail_at)) {
		P.failed = 0;
		tp_fail(&P, P.dup_at, P.dup_span, "%s", P.dup_why);
	} else if (P.late_at != NULL && !P.failed) {
		/* then a value too big for its type, if the text is sound */
		tp_fail(&P, P.late_at, P.late_span, "%s", P.late_why);
	}
	toml_free(P.sink);
	if (P.failed) {
		toml_free(P.root);
		return NULL;
	}
	return P.root;
}
