/*
 * Path strings for the fs methods: bounded formatting, resolution as far as
 * a path exists, and the UTF-8 checks and lossy copies the replies need.
 * Nothing here decides access (fs_policy.c, fs_pin.c do).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fs_int.h"

int
fs_pathf(char *buf, size_t len, const char *fmt, ...)
{
	va_list	ap;
	int	n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= len ? ENAMETOOLONG : 0;
}

int
fs_resolve(const char *path, int follow_last, char *out, size_t outlen)
{
	char	 buf[PATH_MAX], head[PATH_MAX];
	char	*cut;
	size_t	 n;

	if (fs_pathf(head, sizeof(head), "%s", path) != 0)
		return ENAMETOOLONG;
	if (!follow_last) {
		/* the last component stays as it is: resolve its directory */
		if ((cut = strrchr(head, '/')) == NULL || cut == head)
			return fs_pathf(out, outlen, "%s", path);
		*cut = '\0';
	}
	for (;;) {
		if (realpath(head, buf) != NULL) {
			n = strlen(head);
			return fs_pathf(out, outlen, "%s%s", strcmp(buf, "/") == 0 &&
			    path[n] == '/' ? "" : buf, path + n);
		}
		if ((cut = strrchr(head, '/')) == NULL || cut == head)
			return fs_pathf(out, outlen, "%s", path);
		*cut = '\0';
	}
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 with *bad the bytes to replace. */
static size_t
utf8_seq(const unsigned char *s, size_t *bad)
{
	size_t	n, i;
	unsigned char lo = 0x80, hi = 0xbf;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else {
		*bad = 1;
		return 0;
	}
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	for (i = 1; i < n; i++) {
		if (s[i] < lo || s[i] > hi) {
			*bad = i;	/* the maximal valid prefix becomes one U+FFFD */
			return 0;
		}
		lo = 0x80;
		hi = 0xbf;
	}
	return n;
}

int
fs_utf8_valid(const char *s)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 n, bad;

	while (*p != '\0') {
		if ((n = utf8_seq(p, &bad)) == 0)
			return 0;
		p += n;
	}
	return 1;
}

char *
fs_lossy(const char *s)
{
	const unsigned char	*p = (const unsigned char *)s;
	char			*out, *o;
	size_t			 n, bad;

	if ((out = malloc(strlen(s) * 3 + 1)) == NULL)
		return NULL;
	for (o = out; *p != '\0';) {
		if ((n = utf8_seq(p, &bad)) > 0) {
			memcpy(o, p, n);
			o += n;
			p += n;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			p += bad;
		}
	}
	*o = '\0';
	return out;
}
