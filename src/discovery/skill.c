/*
 * A skill's front matter, as capabilities/discoverV2 reads it: the YAML
 * block between a first line "---" and the next "---".  Only what the
 * reference takes from it is understood: top-level `name` and
 * `description` (plain, quoted or block scalars) and `short-description`
 * in the `metadata` map.  Values have their whitespace runs folded to one
 * space.  A missing or empty name is the skill's directory name; a name
 * over 64 characters or a missing or empty description makes the skill
 * invalid.
 */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "discovery/discovery_int.h"

#define SKILL_NAME_MAX	64	/* characters (not bytes) */

struct lines {
	const char	*p, *end;
};

/* The next line without its end of line, or 0 at the end of the text. */
static int
next_line(struct lines *l, const char **s, size_t *n)
{
	const char	*nl;

	if (l->p >= l->end)
		return 0;
	*s = l->p;
	nl = memchr(l->p, '\n', (size_t)(l->end - l->p));
	*n = (size_t)((nl != NULL ? nl : l->end) - l->p);
	l->p = nl != NULL ? nl + 1 : l->end;
	if (*n > 0 && (*s)[*n - 1] == '\r')
		(*n)--;
	return 1;
}

static int
is_fence(const char *s, size_t n)
{
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	return n == 3 && memcmp(s, "---", 3) == 0;
}

/* Fold whitespace runs to one space and trim: a malloc'd string. */
static char *
fold(const char *s, size_t n)
{
	char	*out = malloc(n + 1), *o = out;
	int	 space = 0;

	if (out == NULL)
		return NULL;
	for (; n > 0; s++, n--) {
		if (isspace((unsigned char)*s)) {
			space = o != out;
			continue;
		}
		if (space)
			*o++ = ' ';
		space = 0;
		*o++ = *s;
	}
	*o = '\0';
	return out;
}

/* A one-line scalar: quoted (unquoted here) or plain (a comment cut). */
static char *
scalar(const char *s, size_t n)
{
	char	*out, *o;
	size_t	 i;

	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	if (n >= 2 && (s[0] == '"' || s[0] == '\'') && s[n - 1] == s[0]) {
		if ((out = o = malloc(n)) == NULL)
			return NULL;
		for (i = 1; i + 1 < n; i++) {
			if (s[0] == '\'' && s[i] == '\'' && s[i + 1] == '\'')
				i++;
			else if (s[0] == '"' && s[i] == '\\' && i + 2 < n) {
				i++;
				*o++ = s[i] == 'n' ? '\n' : s[i] == 't' ? '\t' : s[i];
				continue;
			}
			*o++ = s[i];
		}
		*o = '\0';
		o = fold(out, strlen(out));
		free(out);
		return o;
	}
	/* an anchor or a tag before a plain value is not part of it */
	while (n > 0 && (s[0] == '&' || s[0] == '!')) {
		for (i = 0; i < n && s[i] != ' ' && s[i] != '\t'; i++)
			;
		while (i < n && (s[i] == ' ' || s[i] == '\t'))
			i++;
		s += i;
		n -= i;
	}
	for (i = 0; i < n; i++)
		if (s[i] == '#' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t')) {
			n = i;
			break;
		}
	if (n == 1 && s[0] == '~')
		n = 0;
	if (n == 4 && memcmp(s, "null", 4) == 0)
		n = 0;
	return fold(s, n);
}

static size_t
indent(const char *s, size_t n)
{
	size_t	i = 0;

	while (i < n && s[i] == ' ')
		i++;
	return i;
}

/*
 * The value of the key whose line is s (n bytes, value from v): a scalar,
 * or a block scalar made of the more indented lines after it.  For a
 * nested map (metadata) it returns NULL and leaves the lines to the caller.
 */
static char *
value(struct lines *l, const char *v, size_t vn, size_t ind)
{
	struct lines	 save;
	const char	*s, *start = NULL, *stop = NULL;
	size_t		 n, i = indent(v, vn);

	v += i;
	vn -= i;
	if (vn == 0 || (v[0] != '|' && v[0] != '>'))
		return scalar(v, vn);
	for (save = *l; next_line(l, &s, &n) && !is_fence(s, n); save = *l) {
		if (indent(s, n) <= ind && indent(s, n) < n)
			break;
		if (start == NULL)
			start = s;
		stop = s + n;
	}
	*l = save;
	return fold(start, start != NULL ? (size_t)(stop - start) : 0);
}

/* key: (no indentation) -> its value's offset in s, or 0. */
static size_t
key_is(const char *s, size_t n, const char *key)
{
	size_t	k = strlen(key);

	if (n > k && memcmp(s, key, k) == 0 && s[k] == ':' &&
	    (n == k + 1 || s[k + 1] == ' ' || s[k + 1] == '\t'))
		return k + 1;
	return 0;
}

static size_t
utf8_chars(const char *s)
{
	size_t	n = 0;

	for (; *s != '\0'; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			n++;
	return n;
}

struct front {
	char	*name, *desc, *shortdesc;
	int	 bad;		/* a value the reference's YAML reading refuses */
};

/*
 * A plain value the reference cannot take as a string: a whole flow
 * sequence, a flow map without a "key: value" in it (one with one it reads
 * as text), a block sequence, a directive or alias, a block scalar header
 * with more after it.
 */
static int
plain_bad(const char *v, size_t n)
{
	size_t	i;

	while (n > 0 && (*v == ' ' || *v == '\t'))
		v++, n--;
	for (i = 0; i < n; i++)
		if (v[i] == '#' && i > 0 && (v[i - 1] == ' ' || v[i - 1] == '\t')) {
			n = i;
			break;
		}
	while (n > 0 && isspace((unsigned char)v[n - 1]))
		n--;
	if (n == 0)
		return 0;
	if (v[0] == '[')
		return v[n - 1] == ']';
	if (v[0] == '{')
		return v[n - 1] == '}' && memmem(v, n, ": ", 2) == NULL;
	if (v[0] == '-')
		return n == 1 || v[1] == ' ' || v[1] == '\t';
	if (v[0] == '%' || v[0] == '*')
		return 1;
	if (v[0] == '|' || v[0] == '>') {
		for (i = 1; i < n && (v[i] == '-' || v[i] == '+' || isdigit((unsigned char)v[i])); i++)
			;
		return i < n;
	}
	return 0;
}

static void
parse_metadata(struct lines *l, struct front *f)
{
	struct lines	 save = *l;
	const char	*s;
	size_t		 n, i, off;

	while (next_line(l, &s, &n) && !is_fence(s, n)) {
		if ((i = indent(s, n)) == 0 && n > 0)
			break;
		if ((off = key_is(s + i, n - i, "short-description")) != 0) {
			f->bad |= plain_bad(s + i + off, n - i - off);
			free(f->shortdesc);
			f->shortdesc = value(l, s + i + off, n - i - off, i);
		}
		save = *l;
	}
	*l = save;
}

/* 0 when the front matter is closed, -1 if not (or no front matter). */
static int
parse_front(const char *text, size_t len, struct front *f)
{
	struct lines	 l = { text, text + len };
	const char	*s;
	size_t		 n, off;
	char		**slot;

	if (!next_line(&l, &s, &n) || !is_fence(s, n))
		return -1;
	while (next_line(&l, &s, &n)) {
		if (is_fence(s, n))
			return 0;
		slot = NULL;
		if ((off = key_is(s, n, "name")) != 0)
			slot = &f->name;
		else if ((off = key_is(s, n, "description")) != 0)
			slot = &f->desc;
		else if ((off = key_is(s, n, "metadata")) != 0) {
			parse_metadata(&l, f);
			continue;
		}
		if (slot != NULL) {
			f->bad |= plain_bad(s + off, n - off);
			free(*slot);
			*slot = value(&l, s + off, n - off, 0);
		}
	}
	return -1;
}

json_t *
fs_skill_parse(const char *text, size_t len, const char *dirname)
{
	struct front	 f = { NULL, NULL, NULL, 0 };
	json_t		*out = NULL;
	const char	*name;

	if (memchr(text, '\0', len) == NULL && parse_front(text, len, &f) == 0 && !f.bad &&
	    f.desc != NULL && f.desc[0] != '\0') {
		name = f.name != NULL && f.name[0] != '\0' ? f.name : dirname;
		if (utf8_chars(name) <= SKILL_NAME_MAX)
			out = json_pack("{s:s,s:s,s:s?}", "name", name, "description", f.desc,
			    "shortDescription", f.shortdesc != NULL && f.shortdesc[0] != '\0' ?
			    f.shortdesc : NULL);
	}
	free(f.name);
	free(f.desc);
	free(f.shortdesc);
	return out;
}
