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

#include "config/toml.h"
#include "config/toml_int.h"

#define E_UNQUOTED	"string values must be quoted, expected literal string"
#define E_DUP		"duplicate key"
#define E_BAREKEY	"invalid unquoted key, expected letters, numbers, `-`, `_`"
#define E_NEWLINE	"unexpected key or value, expected newline, `#`"

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
 * A duplicate key is reported only when the document has no syntax error,
 * as the reference reports it: the first one is noted, and what it would
 * have defined goes to a table that is thrown away.
 */
static struct toml_node *
duplicate(struct tparser *P, const struct keypart *k, const char *why)
{
	struct toml_node	*t;

	const char		*q;

	if (P->dup_at == NULL) {
		P->dup_at = k->at;
		P->dup_why = why;
		/* the reference's caret runs under the whole key */
		for (q = k->at; q < k->end; q++)
			P->dup_span += ((unsigned char)*q & 0xC0) != 0x80;
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

/*
 * The caret's width under characters no key has, from p: the reference
 * counts the bytes of a run of non-ASCII characters (one for anything else).
 */
static size_t
bad_run(const struct tparser *P, const char *p)
{
	size_t	n = 0;

	while (p + n < P->end && (unsigned char)p[n] >= 0x80)
		n++;
	return n > 0 ? n : 1;
}

static int
simple_key(struct tparser *P, struct keypart *k)
{
	const char	*s = P->p;

	k->at = s;
	if (s < P->end && (*s == '"' || *s == '\'')) {
		if (s + 2 < P->end && s[1] == s[0] && s[2] == s[0])
			return tp_fail(P, s, 1, "invalid key");
		return tp_string(P, &k->s, &k->len);
	}
	while (P->p < P->end && is_bare((unsigned char)*P->p))
		P->p++;
	if (P->p == s && (s >= P->end || strchr("=.]} \t\r\n#", *s) != NULL))
		return tp_fail(P, s, 1,
		    "unquoted keys cannot be empty, expected letters, numbers, `-`, `_`");
	/* a character no key has, at a key's start or right after one */
	if (P->p < P->end && (P->p == s || *P->p == '"' || *P->p == '\'' || *P->p == '\\' ||
	    (unsigned char)*P->p >= 0x80))
		return tp_fail(P, P->p, bad_run(P, P->p), E_BAREKEY);
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
		/*
		 * "a." and a line's end, or punctuation no key starts with: the
		 * reference wants the value, not a key.
		 */
		if (k->n > 0 && (P->p >= P->end || tp_newline(P, P->p) > 0 ||
		    (*P->p > 0x20 && *P->p < 0x7f && !is_bare((unsigned char)*P->p) &&
		    strchr("\"'=.]}#\\", *P->p) == NULL)))
			return tp_fail(P, P->p, 1, "key with no value, expected `=`");
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

/*
 * An inline table's key at a line's end, at: the reference reads on past
 * the line's end for its '=': at the text's end the table is unclosed,
 * before anything else the assignment is missing.  Fails, always.
 */
static int
inline_key_end(struct tparser *P, const char *at)
{
	const char	*q;

	for (q = at; q < P->end && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n'); q++)
		;
	if (q >= P->end || *q == '=')
		return tp_fail(P, at, 1, "unclosed inline table, expected `}`");
	return tp_fail(P, q, 1, "missing assignment between key-value pairs, expected `=`");
}

/* key = value into t. */
static int
keyval(struct tparser *P, struct toml_node *t)
{
	struct dotted		 k;
	const char		*start;
	struct toml_node	*v = NULL;
	size_t			 i;
	int			 rc = -1;

	P->in_key = 1;
	rc = parse_key(P, &k);
	P->in_key = 0;
	if (rc == -1) {
		/* an inline table's quoted key cut by its line's end: as a bare one */
		if (P->depth > 0 && P->fail_at != NULL && (P->fail_at >= P->end ||
		    tp_newline(P, P->fail_at) > 0) && strncmp(P->err->msg, "key with", 8) == 0) {
			P->failed = 0;
			inline_key_end(P, P->fail_at);
		}
		goto done;
	}
	rc = -1;
	if (P->depth > 0 && (P->p >= P->end || tp_newline(P, P->p) > 0)) {
		inline_key_end(P, P->p);
		goto done;
	}
	if (P->p >= P->end || *P->p != '=') {
		/* whatever follows, the reference says the key wants its value */
		tp_fail(P, P->p, 1, "key with no value, expected `=`");
		goto done;
	}
	P->p++;
	skip_ws(P);
	if (P->p < P->end && *P->p == '=') {
		tp_fail(P, P->p, 1, "extra `=`, expected nothing");
		goto done;
	}
	start = P->p;
	if (parse_value(P, &v) == -1) {
		if (P->fail_at >= start)
			tp_bare_value(P, start);
		goto done;
	}
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
	const char		*after, *start;

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
			return tp_fail(P, after, 1, "unclosed array, expected `]`");
		start = P->p;
		if (parse_value(P, &v) == -1)
			return tp_unclosed(P, "unclosed array, expected `]`");
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
		/*
		 * The reference's words when a comma is missing: a number or date
		 * followed on its line by more is taken for a bad value.
		 */
		if (P->p < P->end && !memchr(after, '\n', (size_t)(P->p - after)) &&
		    v->kind != TOML_STRING && v->kind != TOML_ARRAY && v->kind != TOML_TABLE)
			return tp_fail(P, start, 1, E_UNQUOTED);
		if (P->p < P->end)
			return tp_fail(P, P->p, 1,
			    "missing comma between array elements, expected `,`");
		return tp_fail(P, after, 1, "unclosed array, expected `]`");
	}
	P->p++;
	return 0;
}

static int
parse_inline(struct tparser *P, struct toml_node **out)
{
	struct toml_node	*t;
	const char		*after;

	if ((t = toml_table_new()) == NULL)
		return tp_oom(P);
	*out = t;
	after = ++P->p;
	for (;;) {
		if (skip_ws_nl(P) == -1)
			return -1;
		if (P->p < P->end && *P->p == '}')
			break;
		if (P->p >= P->end)
			return tp_fail(P, after, 1, "unclosed inline table, expected `}`");
		if (*P->p != '"' && *P->p != '\'' && !is_bare((unsigned char)*P->p))
			return tp_fail(P, P->p, 1,
			    "missing key for inline table element, expected key");
		if (keyval(P, t) == -1)
			return tp_unclosed(P, "unclosed inline table, expected `}`");
		after = P->p;
		if (skip_ws_nl(P) == -1)
			return -1;
		if (P->p < P->end && *P->p == ',') {
			after = ++P->p;
			continue;
		}
		if (P->p < P->end && *P->p == '}')
			break;
		if (P->p < P->end && *P->p == '=')
			return tp_fail(P, P->p, 1,
			    "extra assignment between key-value pairs, expected `,`");
		if (P->p < P->end && memchr(after, '\n', (size_t)(P->p - after)) != NULL)
			/* past a line's end the reference looks for the next key */
			return tp_fail(P, P->p, 1,
			    "missing key for inline table element, expected `,`");
		return tp_fail(P, after, 1, "unclosed inline table, expected `}`");
	}
	P->p++;
	seal(t);
	return 0;
}

static int
parse_bool(struct tparser *P, struct toml_node **out)
{
	const char	*s = P->p;
	size_t		 left = (size_t)(P->end - s);
	int		 b;

	if (left >= 4 && memcmp(s, "true", 4) == 0)
		b = 1;
	else if (left >= 5 && memcmp(s, "false", 5) == 0)
		b = 0;
	else
		b = -1;
	if (b == -1 || (s + 5 - b < P->end && is_bare((unsigned char)s[5 - b])))
		return tp_fail(P, s, 1, "invalid boolean, expected `%s`",
		    *s == 't' ? "true" : "false");
	if ((*out = calloc(1, sizeof(**out))) == NULL)
		return tp_oom(P);
	(*out)->kind = TOML_BOOL;
	(*out)->i = b;
	P->p += 5 - b;
	return 0;
}

static int
parse_value1(struct tparser *P, struct toml_node **out)
{
	int	c, rc;

	*out = NULL;
	if (P->p >= P->end)
		return tp_fail(P, P->p, 1, E_UNQUOTED);
	c = (unsigned char)*P->p;
	if (c == '"' || c == '\'') {
		if ((*out = calloc(1, sizeof(**out))) == NULL)
			return tp_oom(P);
		(*out)->kind = TOML_STRING;
		return tp_string(P, &(*out)->str, &(*out)->len);
	}
	if (c == 't' || c == 'f')
		return parse_bool(P, out);
	if (c == '}')
		return tp_fail(P, P->p, 1, "missing inline table opening, expected `{`");
	if (c != '[' && c != '{')
		return tp_scalar(P, out);
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
	P->in_header = aot ? 2 : 1;
	rc = parse_key(P, &k);
	P->in_header = 0;
	if (rc == -1)
		goto done;
	rc = -1;
	if (P->p >= P->end || *P->p != ']') {
		/* where the key ends: blanks inside the brackets are not the key's */
		tp_fail(P, k.part[k.n - 1].end, 1, aot ? "unclosed array table, expected `]]`" :
		    "unclosed table, expected `]`");
		goto done;
	}
	if (aot && (P->p + 1 >= P->end || P->p[1] != ']')) {
		tp_fail(P, P->p + 1, 1, "unclosed array table, expected `]`");
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

/*
 * Where the reference reports text after a value: past a bare key and
 * blanks when "key =" follows, else where the text starts.
 */
static const char *
stray_key(const struct tparser *P)
{
	const char	*q = P->p;

	while (q < P->end && is_bare((unsigned char)*q))
		q++;
	if (q == P->p)
		return P->p;
	while (q < P->end && (*q == ' ' || *q == '\t'))
		q++;
	return q < P->end && *q == '=' ? q : P->p;
}

/* One line of the document: blank, comment, header or key/value. */
static int
line(struct tparser *P)
{
	int	nl;

	skip_ws(P);
	if (P->p < P->end && *P->p == ']')
		return tp_fail(P, P->p, 1, "missing table open, expected `[`");
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
	if (*P->p == '\r' && tp_newline(P, P->p) == 0)
		return tp_fail(P, P->p + 1, 1,
		    "carriage return must be followed by newline, expected newline");
	if ((nl = tp_newline(P, P->p)) == 0)
		return tp_fail(P, stray_key(P), 1, E_NEWLINE);
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
	if (P.dup_at != NULL && (!P.failed || (P.dup_at < P.fail_at && !tp_cut_short(&P)))) {
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
