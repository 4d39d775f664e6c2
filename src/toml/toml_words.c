/*
 * Which error the TOML reader reports, where the reference's reader words
 * a failure otherwise than the place it was found: a bare value read as
 * one token, an element cut short by the end of the text.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "toml/toml_int.h"

#define E_UNQUOTED	"string values must be quoted, expected literal string"
#define E_NEWLINE	"unexpected key or value, expected newline, `#`"

/*
 * A value refused where it starts, worded as the reference words it: it
 * reads a run of word characters and blanks as one unquoted token; what
 * follows that on the line is 'unexpected', blanks inside make it a
 * string that wants quotes, and its caret runs under the whole token.
 */
void
tp_bare_value(struct tparser *P, const char *start)
{
	const char	*e = start, *q;
	char		 why[sizeof(P->err->msg)];
	size_t		 span = 0;

	while (e < P->end && (isalnum((unsigned char)*e) || strchr("_.+:- \t", *e) != NULL))
		e++;
	while (e > start && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	for (q = e; q < P->end && (*q == ' ' || *q == '\t'); q++)
		;
	/* a lone CR after the token: the reference's lexer stops there first */
	if (q < P->end && *q == '\r' && tp_newline(P, q) == 0 && P->fail_at <= q) {
		P->failed = 0;
		tp_fail(P, q + 1, 1, "carriage return must be followed by newline, expected "
		    "newline");
		return;
	}
	if (e == start)
		return;
	for (; start + span < e; span++)
		;
	/* an error past the token is the one */
	if (P->fail_at > e)
		return;
	P->failed = 0;
	/* in an inline table, another '=' after the token is the one refused */
	if (P->depth > 0 && q < P->end && *q == '=') {
		tp_fail(P, q, 1, "extra assignment between key-value pairs, expected `,`");
		return;
	}
	if (P->depth > 0 && q < P->end && *q == '{') {
		tp_fail(P, q, 1, "missing key for inline table element, expected `,`");
		return;
	}
	if (P->depth > 0) {
		P->failed = 1;
		return;
	}
	if (q < P->end && *q != '#' && tp_newline(P, q) == 0) {
		tp_fail(P, q, 1, E_NEWLINE);
		return;
	}
	if ((memchr(start, ' ', span) != NULL || memchr(start, '\t', span) != NULL) &&
	    strncmp(P->err->msg, "invalid date", 12) != 0 &&
	    strncmp(P->err->msg, "invalid time", 12) != 0 &&
	    strncmp(P->err->msg, "invalid offset", 14) != 0) {
		tp_fail(P, start, span, E_UNQUOTED);
		return;
	}
	if (P->fail_at == start && (strcmp(P->err->msg, E_UNQUOTED) == 0 ||
	    strcmp(P->err->msg, "integer number overflowed") == 0 ||
	    strncmp(P->err->msg, "invalid boolean", 15) == 0)) {
		/* the same words, the caret under the whole token */
		snprintf(why, sizeof(why), "%s", P->err->msg);
		tp_fail(P, start, span, "%s", why);
		return;
	}
	P->failed = 1;
}

/*
 * An element that failed with nothing but blanks after it: the text is cut
 * short, and the reference says the bracket is unclosed, at the text's end.
 */
int
tp_unclosed(struct tparser *P, const char *msg)
{
	const char	*q, *at = P->p > P->fail_at ? P->p : P->fail_at;

	if (P->fail_at == NULL || strncmp(P->err->msg, "unclosed", 8) == 0)
		return -1;
	for (q = at; q < P->end; q++)
		if (*q != ' ' && *q != '\t' && *q != '\r' && *q != '\n')
			return -1;
	/* where the element's reading stopped: a newline it took in is past */
	P->failed = 0;
	return tp_fail(P, at, 1, "%s", msg);
}

/* The text failed for want of a closing bracket it never had (the reference fails at its end). */
int
tp_cut_short(const struct tparser *P)
{
	const char	*q;

	for (q = P->fail_at; q < P->end; q++)
		if (*q != ' ' && *q != '\t' && *q != '\r' && *q != '\n')
			return 0;
	return strncmp(P->err->msg, "unclosed", 8) == 0;
}
