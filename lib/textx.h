/*
 * Small text judgements several parsers share, one copy each: a hex
 * digit's value, a path segment that is a dot segment, a reason string a
 * client may be shown.
 */
#ifndef EXECD_TEXTX_H
#define EXECD_TEXTX_H

#include <stddef.h>

/* The value of hex digit c (either case), or -1. */
int	hex_digit(int c);
/*
 * The n bytes of a path segment are "." (1) or ".." (2), each dot written
 * as itself or as %2e / %2E (a URL parser resolves those too); else 0.
 */
int	dot_segment(const char *s, size_t n);
/* r is at most max bytes with no control character: fit to pass on. */
int	reason_fits(const char *r, size_t max);

#endif
