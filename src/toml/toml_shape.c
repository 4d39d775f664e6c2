/*
 * The TOML document's shape, checked before anything in it is read.
 *
 * Why: the reference's reader works in two passes.  The first splits the
 * text into tokens and checks only how they follow one another (keys,
 * `=`, brackets, commas, line ends, comments), over the whole document;
 * only then does the second pass read what the keys and values say.  So a
 * shape error anywhere (a missing comma on line 9) wins over a bad value
 * before it (a bad number on line 2), whatever execd's one-pass reader
 * met first.  This file is that first pass: the same tokens, the same
 * recovery after an error (so the later errors are the same ones), and
 * the first error kept, in the reference's words and place.  toml.c runs
 * it first; what it finds is the document's error.
 *
 * The tokens are toml_lex.c's; they are lexed when needed, never
 * stored: memory does not grow with the document.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "toml/toml_shape.h"

#define RECURSION_LIMIT	80	/* the reference's nesting bound */

static void	on_array(struct sh *, const struct tok *);
static void	on_inline(struct sh *, const struct tok *);

/* Only the first error counts, as the reference reports it. */
static void
report(struct sh *S, size_t at, const char *desc, const char *expected)
{
	if (S->err->failed)
		return;
	S->err->failed = 1;
	S->err->at = at;
	if (expected == NULL)
		snprintf(S->err->msg, sizeof(S->err->msg), "%s", desc);
	else
		snprintf(S->err->msg, sizeof(S->err->msg), "%s, expected %s", desc,
		    *expected != '\0' ? expected : "nothing");
}

/* The receivers' checks: newlines and comments. */
static void
on_newline(struct sh *S, const struct tok *t)
{
	if (t->e - t->s == 1 && S->b[t->s] == '\r')
		report(S, t->e, "carriage return must be followed by newline", "newline");
}

static void
check_comment(struct sh *S, const struct tok *t)
{
	size_t		p;
	unsigned char	c;

	for (p = t->s; p < t->e; p++) {
		c = (unsigned char)S->b[p];
		if (!(c == '\t' || (c >= 0x20 && c <= 0x7E) || c >= 0x80))
			report(S, p, "invalid comment character", "printable characters");
	}
}

static void	ignore_to_newline(struct sh *);

static void
on_comment(struct sh *S, const struct tok *c)
{
	struct tok	t;

	check_comment(S, c);
	if (!tl_next(S, &t) || t.k == T_EOF)
		return;
	if (t.k == T_NL) {
		on_newline(S, &t);
		return;
	}
	report(S, t.s, "unexpected content between comment and newline", "newline");
	ignore_to_newline(S);
}

static void
ignore_to_newline(struct sh *S)
{
	struct tok	t;

	while (tl_next(S, &t)) {
		if (t.k == T_COMMENT) {
			on_comment(S, &t);
			return;
		}
		if (t.k == T_NL) {
			on_newline(S, &t);
			return;
		}
		if (t.k == T_EOF)
			return;
	}
}

/* Skip to the bracket closing a refused array or inline table. */
static void
ignore_to_close(struct sh *S, enum tk closing)
{
	struct tok	t;
	size_t		arrays = 0, tables = 0;

	while (tl_next(S, &t)) {
		switch (t.k) {
		case T_COMMENT:
			on_comment(S, &t);
			break;
		case T_NL:
			on_newline(S, &t);
			break;
		case T_LSQ:
			arrays++;
			break;
		case T_LCB:
			tables++;
			break;
		case T_RSQ:
		case T_RCB:
			if ((t.k == T_RSQ ? arrays : tables) == 0 && t.k == closing) {
				S->depth--;
				return;
			}
			if (t.k == T_RSQ && arrays > 0)
				arrays--;
			else if (t.k == T_RCB && tables > 0)
				tables--;
			break;
		case T_EOF:
			return;
		default:
			break;
		}
	}
}

/* An array or inline table opens: 0 when nested too deeply. */
static int
open_value(struct sh *S, const struct tok *t)
{
	/*
	 * The reference's count can go below zero (a bracket skipped after a
	 * missing key closes what was never opened), so it bounds nothing
	 * then; that only ever follows a reported error, which is the one
	 * that counts, so this reader also stops at its own real nesting.
	 */
	if (++S->depth <= RECURSION_LIMIT && S->nest <= RECURSION_LIMIT)
		return 1;
	report(S, t->s, "cannot recurse further; max recursion depth met", NULL);
	return 0;
}

static void
opt_ws(struct sh *S)
{
	struct tok	t;

	tl_next_if(S, T_WS, &t);
}

static int
is_key_token(enum tk k)
{
	return k == T_STR || k == T_MLSTR || k == T_WORD;
}

/* `.key` parts after a key; 0 when one is missing before punctuation. */
static int
dot_keys(struct sh *S)
{
	struct tok	t;

	opt_ws(S);
	while (tl_next_if(S, T_DOT, &t)) {
		while (tl_next(S, &t)) {
			if (t.k == T_WS || t.k == T_DOT)
				continue;
			if (is_key_token(t.k)) {
				opt_ws(S);
				break;
			}
			tl_back(S);
			return 0;
		}
	}
	return 1;
}

/* A header's key; 0 when there was none. */
static int
key(struct sh *S, const char *invalid)
{
	struct tok	t;

	while (tl_next(S, &t)) {
		if (t.k == T_WS || t.k == T_DOT)
			continue;
		if (is_key_token(t.k))
			return dot_keys(S);
		tl_back(S);
		return 0;
	}
	report(S, S->sig.e, invalid, "key");
	return 0;
}

/* A scalar: words joined by dots, and by blanks before another word. */
static void
on_scalar(struct sh *S, const struct tok *first)
{
	struct tok	t, u;

	if (first->k != T_DOT && first->k != T_WORD)
		return;
	while (tl_peek(S, 0, &t)) {
		if (t.k == T_WS && tl_peek(S, 1, &u) && u.k == T_WORD) {
			tl_next(S, &t);
			tl_next(S, &t);
			continue;
		}
		if (t.k != T_DOT && t.k != T_WORD)
			break;
		tl_next(S, &t);
	}
}

/* A value's first token: a bracket opens (or, unopened, is reported), else a scalar. */
static void
value_token(struct sh *S, const struct tok *t)
{
	switch (t->k) {
	case T_LCB:
		on_inline(S, t);
		break;
	case T_RCB:
		report(S, t->s, "missing inline table opening", "`{`");
		(void)open_value(S, t);
		S->depth--;
		break;
	case T_LSQ:
		on_array(S, t);
		break;
	case T_RSQ:
		report(S, t->s, "missing array opening", "`[`");
		(void)open_value(S, t);
		S->depth--;
		break;
	default:
		on_scalar(S, t);
		break;
	}
}

/* Blanks, comments and line ends inside brackets: taken, 1; anything else 0. */
static int
bracket_trivia(struct sh *S, const struct tok *t)
{
	switch (t->k) {
	case T_COMMENT:
		on_comment(S, t);
		return 1;
	case T_NL:
		on_newline(S, t);
		return 1;
	case T_WS:
		return 1;
	default:
		return 0;
	}
}

static void
value(struct sh *S)
{
	struct tok	t;

	for (;;) {
		if (!tl_next(S, &t)) {
			report(S, S->sig.e, "missing value", "value");
			return;
		}
		if (t.k != T_EQ)
			break;
		report(S, t.s, "extra `=`", "");
	}
	switch (t.k) {
	case T_COMMENT:
	case T_COMMA:
	case T_NL:
	case T_EOF:
	case T_WS:
		tl_back(S);
		break;
	default:
		value_token(S, &t);
		break;
	}
}

/* After a value or header: blanks, a comment, the line's end. */
static void
ws_comment_newline(struct sh *S)
{
	struct tok	t;

	while (tl_next(S, &t)) {
		switch (t.k) {
		case T_WS:
			continue;
		case T_COMMENT:
			on_comment(S, &t);
			return;
		case T_NL:
			on_newline(S, &t);
			return;
		case T_EOF:
			return;
		default:
			report(S, t.s, "unexpected key or value", "newline, `#`");
			ignore_to_newline(S);
			return;
		}
	}
}

static void
keyval_sep(struct sh *S)
{
	opt_ws(S);
	value(S);
	ws_comment_newline(S);
}

/* A line starting with a key, or with a '.' (a key missing before it). */
static void
on_expression_key(struct sh *S, int dot)
{
	struct tok	t;

	if (dot)
		tl_back(S);
	dot_keys(S);
	opt_ws(S);
	if (tl_next_if(S, T_EQ, &t)) {
		keyval_sep(S);
		return;
	}
	if (tl_peek(S, 0, &t))
		report(S, t.s, dot ? "missing value for key" : "key with no value", "`=`");
	ignore_to_newline(S);
}

static void
on_table(struct sh *S)
{
	struct tok	t, close;
	int		aot, valid, ok = 0;

	aot = tl_next_if(S, T_LSQ, &t);
	opt_ws(S);
	valid = key(S, "invalid table");
	opt_ws(S);
	if (tl_next_if(S, T_RSQ, &close)) {
		if (!aot || tl_next_if(S, T_RSQ, &t))
			ok = 1;
		else
			report(S, close.e, "unclosed array table", "`]`");
	} else if (valid) {
		report(S, S->nonws.e, aot ? "unclosed array table" : "unclosed table",
		    aot ? "`]]`" : "`]`");
	}
	if (ok)
		ws_comment_newline(S);
	else
		ignore_to_newline(S);
}

static void	array_body(struct sh *, const struct tok *);
static void	inline_body(struct sh *, const struct tok *);

/* An array or inline table, its real nesting counted (open_value). */
static void
on_array(struct sh *S, const struct tok *open)
{
	S->nest++;
	array_body(S, open);
	S->nest--;
}

static void
on_inline(struct sh *S, const struct tok *open)
{
	S->nest++;
	inline_body(S, open);
	S->nest--;
}

static void
array_body(struct sh *S, const struct tok *open)
{
	struct tok	t;
	int		need_comma = 0;

	if (!open_value(S, open)) {
		ignore_to_close(S, T_RSQ);
		return;
	}
	while (tl_next(S, &t)) {
		if (bracket_trivia(S, &t))
			continue;
		switch (t.k) {
		case T_EOF:
			break;
		case T_COMMA:
			if (!need_comma)
				report(S, t.s, "extra comma in array", "value");
			need_comma = 0;
			continue;
		case T_EQ:
			report(S, t.s, "unexpected `=` in array", "value, `]`");
			continue;
		case T_RSQ:
			S->depth--;
			return;
		default:
			if (need_comma)
				report(S, t.s, "missing comma between array elements", "`,`");
			value_token(S, &t);	/* never T_RSQ: that closed the array */
			need_comma = 1;
			continue;
		}
		break;
	}
	report(S, S->sig.e, "unclosed array", "`]`");
	S->depth--;
}

enum istate { NEED_KEY, NEED_EQ, NEED_VALUE, NEED_COMMA };

static const char *
expected(enum istate st)
{
	static const char	*words[] = { "key", "`=`", "value", "`,`" };

	return words[st];
}

/* A word, string or '.' in an inline table, in state *st. */
static void
inline_word(struct sh *S, const struct tok *t, enum istate *st)
{
	switch (*st) {
	case NEED_COMMA:
		report(S, t->s, "missing comma between key-value pairs", expected(*st));
		/* FALLTHROUGH */
	case NEED_KEY:
		if (t->k == T_DOT)
			tl_back(S);
		dot_keys(S);
		*st = NEED_EQ;
		break;
	case NEED_EQ:
		report(S, t->s, "missing assignment between key-value pairs", expected(*st));
		/* FALLTHROUGH */
	case NEED_VALUE:
		on_scalar(S, t);
		*st = NEED_COMMA;
		break;
	}
}

/* A bracket in an inline table, in state *st. */
static void
inline_bracket(struct sh *S, const struct tok *t, enum istate *st)
{
	if (t->k == T_RSQ) {
		if (*st != NEED_VALUE) {
			report(S, t->s, "invalid inline table element", expected(*st));
			return;
		}
		report(S, t->s, "missing array opening", "`[`");
		(void)open_value(S, t);
		S->depth--;
		*st = NEED_COMMA;
		return;
	}
	if (*st == NEED_KEY || *st == NEED_COMMA) {
		report(S, t->s, "missing key for inline table element", expected(*st));
		/* the bracket closing what is skipped counts as a close, as there */
		ignore_to_close(S, t->k == T_LCB ? T_RCB : T_RSQ);
		return;
	}
	if (*st == NEED_EQ)
		report(S, t->s, "missing assignment between key-value pairs", expected(*st));
	if (t->k == T_LCB)
		on_inline(S, t);
	else
		on_array(S, t);
	*st = NEED_COMMA;
}

static void
inline_body(struct sh *S, const struct tok *open)
{
	struct tok	t;
	enum istate	st = NEED_KEY;

	if (!open_value(S, open)) {
		ignore_to_close(S, T_RCB);
		return;
	}
	while (tl_next(S, &t)) {
		if (bracket_trivia(S, &t))
			continue;
		switch (t.k) {
		case T_EOF:
			break;
		case T_COMMA:
			if (st != NEED_COMMA)
				report(S, t.s, "extra comma in inline table", expected(st));
			else
				st = NEED_KEY;
			continue;
		case T_EQ:
			if (st == NEED_KEY || st == NEED_EQ)
				st = NEED_VALUE;
			else
				report(S, t.s, "extra assignment between key-value pairs",
				    expected(st));
			continue;
		case T_RCB:
			S->depth--;
			return;
		case T_LCB:
		case T_LSQ:
		case T_RSQ:
			inline_bracket(S, &t, &st);
			continue;
		default:
			inline_word(S, &t, &st);
			continue;
		}
		break;
	}
	report(S, S->sig.e, "unclosed inline table", "`}`");
	S->depth--;
}

int
toml_shape(const char *buf, size_t len, size_t start, struct toml_shape_error *err)
{
	struct sh	S;
	struct tok	t;

	memset(&S, 0, sizeof(S));
	memset(err, 0, sizeof(*err));
	S.b = buf;
	S.len = len;
	S.pos = start;
	S.err = err;
	while (tl_next(&S, &t)) {
		switch (t.k) {
		case T_LSQ:
			on_table(&S);
			break;
		case T_RSQ:
			report(&S, t.s, "missing table open", "`[`");
			ignore_to_newline(&S);
			break;
		case T_STR:
		case T_MLSTR:
		case T_WORD:
			on_expression_key(&S, 0);
			break;
		case T_EQ:
			keyval_sep(&S);
			break;
		case T_DOT:
			on_expression_key(&S, 1);
			break;
		case T_COMMA:
		case T_RCB:
		case T_LCB:
			report(&S, t.s, "invalid key-value pair", "key");
			ignore_to_newline(&S);
			break;
		case T_NL:
			on_newline(&S, &t);
			break;
		case T_COMMENT:
			on_comment(&S, &t);
			break;
		case T_WS:
			break;
		case T_EOF:
			return err->failed ? -1 : 0;
		}
	}
	return err->failed ? -1 : 0;
}
