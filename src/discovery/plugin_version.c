/*
 * Which cached version of a plugin capabilities/discoverV2 lists, as the
 * reference picks it: only names of [A-Za-z0-9._+-] count; a version
 * `local` wins; otherwise the greatest, folding over the names in the
 * directory's order (as the reference's read_dir gives them),
 * two names compared as semantic versions (build metadata included, as
 * Rust's semver orders them) when both are, else as byte strings.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "discovery/discovery_int.h"

#define IDENT_CHARS	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-"
#define DIGITS		"0123456789"

/* A version's parts, each pointing into the name. */
struct semver {
	const char	*num[3];
	size_t		 numlen[3];
	const char	*pre, *build;	/* after '-' / '+', or NULL */
	size_t		 prelen, buildlen;
};

static int
all_digits(const char *s, size_t n)
{
	return n > 0 && strspn(s, DIGITS) >= n;
}

/* Dot-separated non-empty identifiers; numeric ones without leading zeros if strict. */
static int
idents_ok(const char *s, size_t n, int strict)
{
	size_t	i, len;

	for (i = 0; i <= n; i += len + 1) {
		for (len = 0; i + len < n && s[i + len] != '.'; len++)
			if (strchr(IDENT_CHARS, s[i + len]) == NULL)
				return 0;
		if (len == 0 || (strict && len > 1 && s[i] == '0' && all_digits(s + i, len)))
			return 0;
	}
	return 1;
}

/* A major.minor.patch number: no leading zero, fits in 64 bits. */
static int
number_ok(const char *s, size_t n)
{
	return all_digits(s, n) && (n == 1 || s[0] != '0') &&
	    (n < 20 || (n == 20 && strncmp(s, "18446744073709551615", 20) <= 0));
}

static int
semver_parse(const char *v, struct semver *sv)
{
	const char	*p = v, *end;
	int		 i;

	memset(sv, 0, sizeof(*sv));
	for (i = 0; i < 3; i++) {
		sv->num[i] = p;
		sv->numlen[i] = strspn(p, DIGITS);
		if (!number_ok(p, sv->numlen[i]))
			return 0;
		p += sv->numlen[i];
		if (i < 2 && *p++ != '.')
			return 0;
	}
	if (*p == '-') {
		sv->pre = ++p;
		end = strchr(p, '+');
		sv->prelen = end != NULL ? (size_t)(end - p) : strlen(p);
		if (!idents_ok(sv->pre, sv->prelen, 1))
			return 0;
		p += sv->prelen;
	}
	if (*p == '+') {
		sv->build = ++p;
		sv->buildlen = strlen(p);
		if (!idents_ok(sv->build, sv->buildlen, 0))
			return 0;
		p += sv->buildlen;
	}
	return *p == '\0';
}

static int
sign(int c)
{
	return c < 0 ? -1 : c > 0;
}

/* Numbers without leading zeros... or with them: by value, then by length. */
static int
numeric_cmp(const char *a, size_t an, const char *b, size_t bn)
{
	size_t	az = 0, bz = 0;
	int	c;

	while (az + 1 < an && a[az] == '0')
		az++;
	while (bz + 1 < bn && b[bz] == '0')
		bz++;
	if (an - az != bn - bz)
		return an - az < bn - bz ? -1 : 1;
	if ((c = memcmp(a + az, b + bz, an - az)) != 0)
		return sign(c);
	return an == bn ? 0 : an < bn ? -1 : 1;
}

static int
text_cmp(const char *a, size_t an, const char *b, size_t bn)
{
	int	c = memcmp(a, b, an < bn ? an : bn);

	return c != 0 ? sign(c) : an == bn ? 0 : an < bn ? -1 : 1;
}

/* Dot-separated identifiers: numeric ones by value and below the others. */
static int
idents_cmp(const char *a, size_t an, const char *b, size_t bn)
{
	size_t	i = 0, j = 0, la, lb;
	int	da, db, c;

	for (;;) {
		if (i >= an || j >= bn)
			return i >= an && j >= bn ? 0 : i >= an ? -1 : 1;
		for (la = 0; i + la < an && a[i + la] != '.'; la++)
			;
		for (lb = 0; j + lb < bn && b[j + lb] != '.'; lb++)
			;
		da = all_digits(a + i, la);
		db = all_digits(b + j, lb);
		if (da != db)
			return da ? -1 : 1;
		c = da ? numeric_cmp(a + i, la, b + j, lb) : text_cmp(a + i, la, b + j, lb);
		if (c != 0)
			return c;
		i += la + 1;
		j += lb + 1;
	}
}

static int
semver_cmp(const struct semver *a, const struct semver *b)
{
	int	i, c;

	for (i = 0; i < 3; i++)
		if ((c = numeric_cmp(a->num[i], a->numlen[i], b->num[i], b->numlen[i])) != 0)
			return c;
	/* a release is above its prereleases */
	if ((a->pre == NULL) != (b->pre == NULL))
		return a->pre == NULL ? 1 : -1;
	if (a->pre != NULL && (c = idents_cmp(a->pre, a->prelen, b->pre, b->prelen)) != 0)
		return c;
	if ((a->build == NULL) != (b->build == NULL))
		return a->build == NULL ? -1 : 1;
	return a->build == NULL ? 0 : idents_cmp(a->build, a->buildlen, b->build, b->buildlen);
}

static int
version_cmp(const char *a, const char *b)
{
	struct semver	sa, sb;

	if (semver_parse(a, &sa) && semver_parse(b, &sb))
		return semver_cmp(&sa, &sb);
	return sign(strcmp(a, b));
}

int
fs_cache_name_ok(const char *name)
{
	return name[0] != '\0' && name[strspn(name, IDENT_CHARS "._+")] == '\0';
}

const char *
fs_pick_version(json_t *versions)
{
	const char	*best = NULL, *v;
	json_t		*e;
	size_t		 i;

	json_array_foreach(versions, i, e) {
		v = json_string_value(e);
		if (!fs_cache_name_ok(v))
			continue;
		if (strcmp(v, "local") == 0)
			return v;
		/* as Rust's max_by: the later of two equal ones */
		if (best == NULL || version_cmp(v, best) >= 0)
			best = v;
	}
	return best;
}
