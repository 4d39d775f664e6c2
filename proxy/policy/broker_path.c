/*
 * Is a request's path under a brokered credential's URL prefix, on the
 * path the origin will act on?  Origins differ: some decode %2F and %5C
 * into separators, take '\' for '/', collapse "//", decode twice, cut
 * ";params" off a segment before resolving "..".  So the path is read
 * twice, literally (raw '/' only, nothing decoded, "//" kept) and
 * loosely (all of that done), and the real value goes out only when it
 * is under the prefix both ways.  A dot segment under either reading, a
 * fragment, a decoded control byte or an over-long path is never under.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "textx.h"

#define DECODE_PASSES	3

/* One pass of percent-decoding in place; the new length; *changed when it decoded. */
static size_t
decode_once(char *s, size_t n, int *changed)
{
	size_t	i, o = 0;
	int	hi, lo;

	*changed = 0;
	for (i = 0; i < n; i++) {
		if (s[i] == '%' && n - i >= 3 && (hi = hex_digit((unsigned char)s[i + 1])) != -1 &&
		    (lo = hex_digit((unsigned char)s[i + 2])) != -1) {
			s[o++] = (char)(hi << 4 | lo);
			i += 2;
			*changed = 1;
		} else
			s[o++] = s[i];
	}
	return o;
}

/* "." or "..", also as "..;x" (a path parameter), once decoded. */
static int
is_dot(const char *seg, size_t n)
{
	const char	*semi = memchr(seg, ';', n);

	if (semi != NULL)
		n = (size_t)(semi - seg);
	return dot_segment(seg, n) != 0;
}

/*
 * The path (before '?') as one reading takes it into out (at least
 * len + 2 bytes); -1 when it is never under a prefix.
 */
static int
reading(const char *in, size_t len, int loose, char *out, size_t *outlen)
{
	size_t	i, n, s, o;
	int	changed, pass;

	for (n = 0; n < len && in[n] != '?'; n++)
		if (in[n] == '#')
			return -1;	/* a target has no fragment */
	memcpy(out, in, n);
	if (loose) {
		for (pass = 0, changed = 1; changed && pass < DECODE_PASSES; pass++)
			n = decode_once(out, n, &changed);
		for (i = 0; i < n; i++) {
			if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
				return -1;
			if (out[i] == '\\')
				out[i] = '/';
		}
	}
	/* every segment: no dot segment; the loose reading drops empty ones */
	for (i = 0, o = 0; i < n; ) {
		if (out[i] == '/') {
			if (!loose || o == 0 || out[o - 1] != '/')
				out[o++] = '/';
			i++;
			continue;
		}
		for (s = i; i < n && out[i] != '/'; i++)
			;
		if (is_dot(out + s, i - s))
			return -1;
		memmove(out + o, out + s, i - s);
		o += i - s;
	}
	out[o] = '\0';
	*outlen = o;
	return 0;
}

/* The reference's rule on one reading: "/" takes all; else at a segment boundary. */
static int
under(const char *pre, size_t pn, const char *path, size_t n)
{
	if (pn == 1 && pre[0] == '/')
		return 1;
	if (n < pn || memcmp(path, pre, pn) != 0)
		return 0;
	return n == pn || pre[pn - 1] == '/' || path[pn] == '/';
}

int
broker_path_under(const char *prefix, const char *path, size_t plen)
{
	size_t	 prelen = strlen(prefix), pn, n;
	char	*pb, *xb;
	int	 loose, ok = 1;

	if (plen > PROXY_HEAD_MAX || prelen > PROXY_HEAD_MAX)
		return 0;
	if ((pb = malloc(prelen + 2)) == NULL || (xb = malloc(plen + 2)) == NULL) {
		free(pb);
		return 0;
	}
	for (loose = 0; loose < 2 && ok; loose++)
		ok = reading(prefix, prelen, loose, pb, &pn) == 0 &&
		    reading(path, plen, loose, xb, &n) == 0 && under(pb, pn, xb, n);
	free(pb);
	free(xb);
	return ok;
}
