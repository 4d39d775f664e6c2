#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "uri.h"

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Drop "." and resolve ".." segments of an absolute path, in place. */
static void
normalize(char *path)
{
	char	*seg = path, *next;
	size_t	 n;

	while (*seg == '/')
		seg++;
	path[0] = '\0';
	while (*seg != '\0') {
		next = strchr(seg, '/');
		n = next ? (size_t)(next - seg) : strlen(seg);
		if (n == 1 && seg[0] == '.') {
			/* nothing */
		} else if (n == 2 && seg[0] == '.' && seg[1] == '.') {
			char *slash = strrchr(path, '/');
			if (slash != NULL)
				*slash = '\0';
		} else {
			size_t cur = strlen(path);
			path[cur] = '/';
			memmove(path + cur + 1, seg, n);
			path[cur + 1 + n] = '\0';
		}
		if (next == NULL)
			break;
		seg = next + 1;
		/* a trailing slash keeps its directory meaning */
		if (*seg == '\0') {
			size_t cur = strlen(path);
			path[cur] = '/';
			path[cur + 1] = '\0';
		}
	}
	if (path[0] == '\0')
		strcpy(path, "/");
}

char *
uri_to_path(const char *uri, struct jx_err *e)
{
	const char	*p, *rest;
	char		*path, *o;
	int		 hi, lo;

	p = uri;
	if (!isalpha((unsigned char)*p)) {
		snprintf(e->msg, sizeof(e->msg), "invalid URI: relative URL without a base");
		return NULL;
	}
	while (isalnum((unsigned char)*p) || *p == '+' || *p == '-' || *p == '.')
		p++;
	if (*p != ':') {
		snprintf(e->msg, sizeof(e->msg), "invalid URI: relative URL without a base");
		return NULL;
	}
	if ((size_t)(p - uri) != 4 || strncasecmp(uri, "file", 4) != 0) {
		char scheme[64];
		size_t i, n = (size_t)(p - uri) < sizeof(scheme) - 1 ?
		    (size_t)(p - uri) : sizeof(scheme) - 1;
		for (i = 0; i < n; i++)
			scheme[i] = (char)tolower((unsigned char)uri[i]);
		scheme[n] = '\0';
		snprintf(e->msg, sizeof(e->msg), "unsupported path URI scheme `%s`", scheme);
		return NULL;
	}
	rest = p + 1;
	if (strncmp(rest, "//", 2) == 0) {
		rest += 2;
		p = rest;
		while (*p != '\0' && *p != '/')
			p++;
		if (p != rest && !((size_t)(p - rest) == 9 &&
		    strncasecmp(rest, "localhost", 9) == 0)) {
			snprintf(e->msg, sizeof(e->msg),
			    "invalid URI: file URI host must be empty or localhost");
			return NULL;
		}
		rest = p;
	}
	if ((path = malloc(strlen(rest) + 2)) == NULL) {
		snprintf(e->msg, sizeof(e->msg), "out of memory");
		return NULL;
	}
	o = path;
	if (*rest != '/')
		*o++ = '/';
	for (p = rest; *p != '\0' && *p != '?' && *p != '#'; p++) {
		if (*p == '%' && (hi = hexval(p[1])) >= 0 && (lo = hexval(p[2])) >= 0) {
			*o++ = (char)(hi * 16 + lo);
			p += 2;
		} else
			*o++ = *p;
	}
	*o = '\0';
	if (strlen(path) != (size_t)(o - path)) {
		free(path);
		snprintf(e->msg, sizeof(e->msg), "invalid URI: path contains a NUL byte");
		return NULL;
	}
	normalize(path);
	return path;
}

char *
path_to_uri(const char *path)
{
	static const char	 hex[] = "0123456789ABCDEF";
	const unsigned char	*p;
	char			*uri, *o;

	if ((uri = malloc(strlen(path) * 3 + 8)) == NULL)
		return NULL;
	o = stpcpy(uri, "file://");
	for (p = (const unsigned char *)path; *p != '\0'; p++) {
		/* the WHATWG path percent-encode set */
		if (*p <= 0x20 || *p >= 0x7f || strchr("\"#<>?`{}%", *p) != NULL) {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		} else
			*o++ = (char)*p;
	}
	*o = '\0';
	return uri;
}
