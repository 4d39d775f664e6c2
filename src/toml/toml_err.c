/*
 * What the TOML reader's parts share below them: errors worded and placed
 * as the reference places them, and newlines.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "toml/toml.h"
#include "toml/toml_int.h"

/* Record the first error, at `at`, covering span characters; always -1. */
int
tp_fail(struct tparser *P, const char *at, size_t span, const char *fmt, ...)
{
	const char	*ls, *q;
	va_list		 ap;
	size_t		 line = 1, col = 1, n;

	if (P->failed)
		return -1;
	P->failed = 1;
	if (at > P->end)
		at = P->end;
	P->fail_at = at;
	/* at the end, after a last newline: the reference stays on the last line */
	for (ls = q = P->buf; q < at; q++)
		if (*q == '\n' && !(at == P->end && q + 1 == P->end)) {
			line++;
			ls = q + 1;
		}
	/*
	 * Columns count characters (at the end after a CRLF, the CR and the
	 * LF are both columns); but at a character of more than one byte the
	 * reference's count fails on the cut character and it counts bytes.
	 */
	for (q = ls; q < at; q++)
		if (((unsigned char)*q & 0xC0) != 0x80 || (at < P->end && (unsigned char)*at >= 0xC0))
			col++;
	P->err->line = line;
	P->err->col = col;
	P->err->span = span > 0 ? span : 1;
	for (n = 0; ls + n < P->end && ls[n] != '\n'; n++)
		;
	P->err->textlen = n;
	if (n >= sizeof(P->err->text))
		n = sizeof(P->err->text) - 1;
	/* a CR before the line's LF stays: the reference shows it */
	memcpy(P->err->text, ls, n);
	P->err->text[n] = '\0';
	va_start(ap, fmt);
	vsnprintf(P->err->msg, sizeof(P->err->msg), fmt, ap);
	va_end(ap);
	return -1;
}

int
tp_oom(struct tparser *P)
{
	return tp_fail(P, P->p, 1, "out of memory");
}

/* A newline (LF or CRLF) at p: its length, else 0. */
int
tp_newline(const struct tparser *P, const char *p)
{
	if (p < P->end && *p == '\n')
		return 1;
	if (p + 1 < P->end && p[0] == '\r' && p[1] == '\n')
		return 2;
	return 0;
}
