/*
 * The reference's tokens of a TOML document (see toml_shape.c), lexed
 * when needed and never stored: the punctuation . = , [ ] { }, blanks, a
 * comment (to a CR or LF), a newline (LF, CRLF or a lone CR), the four
 * strings (a one-line string ends at its quote or before its line's end),
 * and a word: a run of anything else, quotes inside included.
 */
#include "config.h"

#include <string.h>

#include "toml/toml_shape.h"

static size_t
skip_to(const struct sh *S, size_t p, const char *stops)
{
	/* a NUL is no stop: strchr would find the string's end */
	while (p < S->len && (S->b[p] == '\0' || strchr(stops, S->b[p]) == NULL))
		p++;
	return p;
}

/* A string token from p: where it ends (its quotes, or where it was cut). */
static size_t
lex_string(const struct sh *S, size_t p, enum tk *k)
{
	char	q = S->b[p];
	int	ml = p + 2 < S->len && S->b[p + 1] == q && S->b[p + 2] == q;
	size_t	n;

	*k = ml ? T_MLSTR : T_STR;
	for (p += ml ? 3 : 1; p < S->len; p++) {
		if (!ml && S->b[p] == '\n')
			return p;
		if (q == '"' && S->b[p] == '\\') {
			if (p + 1 < S->len && (S->b[p + 1] == '\\' || S->b[p + 1] == '"'))
				p++;
			continue;
		}
		if (S->b[p] != q)
			continue;
		if (!ml)
			return p + 1;
		if (p + 2 < S->len && S->b[p + 1] == q && S->b[p + 2] == q) {
			/* up to two more quotes belong to the string */
			for (p += 3, n = 0; n < 2 && p < S->len && S->b[p] == q; n++)
				p++;
			return p;
		}
	}
	return S->len;
}

size_t
toml_string_end(const char *buf, size_t len, size_t p)
{
	struct sh	S;
	enum tk		k;

	memset(&S, 0, sizeof(S));
	S.b = buf;
	S.len = len;
	return lex_string(&S, p, &k);
}

static void
lex(const struct sh *S, size_t p, struct tok *t)
{
	static const char	punct[] = ".=,[]{}";
	static const enum tk	kinds[] = { T_DOT, T_EQ, T_COMMA, T_LSQ, T_RSQ, T_LCB, T_RCB };
	const char		*hit;
	char			 c = S->b[p];

	t->s = p;
	if (c != '\0' && (hit = strchr(punct, c)) != NULL) {
		t->k = kinds[hit - punct];
		t->e = p + 1;
	} else if (c == ' ' || c == '\t') {
		t->k = T_WS;
		for (t->e = p; t->e < S->len && (S->b[t->e] == ' ' || S->b[t->e] == '\t'); t->e++)
			;
	} else if (c == '#') {
		t->k = T_COMMENT;
		t->e = skip_to(S, p, "\r\n");
	} else if (c == '\r') {
		t->k = T_NL;
		t->e = p + (p + 1 < S->len && S->b[p + 1] == '\n' ? 2 : 1);
	} else if (c == '\n') {
		t->k = T_NL;
		t->e = p + 1;
	} else if (c == '"' || c == '\'') {
		t->e = lex_string(S, p, &t->k);
	} else {
		t->k = T_WORD;
		t->e = skip_to(S, p, ".=,[]{} \t#\r\n");
	}
}

static int
significant(enum tk k)
{
	return k != T_WS && k != T_COMMENT && k != T_NL && k != T_EOF;
}

/* The next token, taken; 0 when even the end was taken. */
int
tl_next(struct sh *S, struct tok *t)
{
	S->prev_pos = S->pos;
	S->prev_eof = S->eof_taken;
	S->sig_prev = S->sig;
	S->nonws_prev = S->nonws;
	if (S->pos >= S->len) {
		if (S->eof_taken)
			return 0;
		S->eof_taken = 1;
		t->k = T_EOF;
		t->s = t->e = S->len;
	} else {
		lex(S, S->pos, t);
		S->pos = t->e;
	}
	if (significant(t->k))
		S->sig = *t;
	if (t->k != T_WS)
		S->nonws = *t;
	return 1;
}

/* The token n ahead (0 or 1), not taken; 0 when there is none. */
int
tl_peek(const struct sh *S, int n, struct tok *t)
{
	size_t	p = S->pos;

	if (p >= S->len) {
		if (S->eof_taken || n > 0)
			return 0;
		t->k = T_EOF;
		t->s = t->e = S->len;
		return 1;
	}
	lex(S, p, t);
	if (n == 0)
		return 1;
	if (t->e >= S->len) {
		t->k = T_EOF;
		t->s = t->e = S->len;
		return 1;
	}
	lex(S, t->e, t);
	return 1;
}

/* Put the token just taken back. */
void
tl_back(struct sh *S)
{
	S->pos = S->prev_pos;
	S->eof_taken = S->prev_eof;
	S->sig = S->sig_prev;
	S->nonws = S->nonws_prev;
}

int
tl_next_if(struct sh *S, enum tk k, struct tok *t)
{
	return tl_peek(S, 0, t) && t->k == k && tl_next(S, t);
}

