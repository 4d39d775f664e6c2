/*
 * What the reference reads typed (serde) beyond the TOML: the [projects] of
 * the system's and the user's files, merged, and requirements.toml's
 * features; failures in serde's words.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envconfig/envconfig_int.h"

#define SYSTEM_DIR	"/etc/codex"

/* Characters Rust's Debug for str escapes as \u{...}: controls, format characters. */
static int
debug_escaped(unsigned long c)
{
	return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0xad ||
	    (c >= 0x200b && c <= 0x200f) || (c >= 0x2028 && c <= 0x202e) ||
	    (c >= 0x2060 && c <= 0x2064) || c == 0xfeff;
}

/* s (UTF-8, len bytes) quoted as Rust's Debug for str writes it, into out. */
static void
rust_debug(const char *s, size_t len, char *out, size_t outlen)
{
	const unsigned char	*p = (const unsigned char *)s, *end = p + len;
	unsigned long		 c;
	size_t			 o = 0, n;

	o += (size_t)snprintf(out + o, outlen - o, "\"");
	while (p < end && o + 16 < outlen) {
		n = *p < 0x80 ? 1 : *p < 0xe0 ? 2 : *p < 0xf0 ? 3 : 4;
		if (p + n > end)
			n = (size_t)(end - p);
		c = n == 1 ? *p : n == 2 ? (*p & 0x1fUL) << 6 | (p[1] & 0x3f) :
		    n == 3 ? (*p & 0x0fUL) << 12 | (p[1] & 0x3fUL) << 6 | (p[2] & 0x3f) :
		    (*p & 0x07UL) << 18 | (p[1] & 0x3fUL) << 12 | (p[2] & 0x3fUL) << 6 | (p[3] & 0x3f);
		if (c == '\t' || c == '\r' || c == '\n' || c == '\\' || c == '"' || c == 0)
			o += (size_t)snprintf(out + o, outlen - o, "\\%c", c == '\t' ? 't' :
			    c == '\r' ? 'r' : c == '\n' ? 'n' : c == 0 ? '0' : (int)c);
		else if (debug_escaped(c))
			o += (size_t)snprintf(out + o, outlen - o, "\\u{%lx}", c);
		else {
			memcpy(out + o, p, n);
			o += n;
		}
		p += n;
	}
	snprintf(out + o, outlen - o, "\"");
}

/* How serde names a value it did not expect (the reference's words). */
static void
unexpected(const struct toml_node *v, char *out, size_t len)
{
	char	*f;
	size_t	 o;

	switch (v->kind) {
	case TOML_INT:
		snprintf(out, len, "integer `%lld`", v->i);
		break;
	case TOML_FLOAT:
		/* serde prints a float as Rust does: NaN without its sign */
		f = isnan(v->f) ? strdup("NaN") : toml_float_text(v->f);
		snprintf(out, len, "floating point `%s`", f != NULL ? f : "?");
		free(f);
		break;
	case TOML_BOOL:
		snprintf(out, len, "boolean `%s`", v->i ? "true" : "false");
		break;
	case TOML_STRING:
	case TOML_DATETIME:	/* serde sees a date-time as its text */
		o = (size_t)snprintf(out, len, "string ");
		rust_debug(v->str, v->len, out + o, len - o);
		break;
	case TOML_ARRAY:
		snprintf(out, len, "sequence");
		break;
	default:
		snprintf(out, len, "map");
		break;
	}
}

/* A trust_level the reference's typed reading of the user's projects refuses: 0 or -1. */
static int
trust_level_ok(const struct toml_node *v, const char *dir, const char *field, char *err,
    size_t errlen)
{
	if (v->kind == TOML_STRING) {
		if (strcmp(v->str, "trusted") == 0 || strcmp(v->str, "untrusted") == 0)
			return 0;
		snprintf(err, errlen, "unknown variant `%s`, expected `trusted` or `untrusted`\n"
		    "in `projects.%s%s`\n", v->str, dir, field);
	} else if (v->kind == TOML_TABLE && v->n == 1)
		/* an enum read from a map: its one key names the variant */
		snprintf(err, errlen, "unknown variant `%s`, expected `trusted` or `untrusted`\n"
		    "in `projects.%s%s`\n", v->key[0].s, dir, field);
	else if (v->kind == TOML_TABLE && v->n == 0)
		snprintf(err, errlen, "wanted exactly 1 element, found 0 elements\n"
		    "in `projects.%s%s`\n", dir, field);
	else if (v->kind == TOML_TABLE)
		snprintf(err, errlen, "wanted exactly 1 element, more than 1 element\n"
		    "in `projects.%s%s`\n", dir, field);
	else
		snprintf(err, errlen, "invalid type: unit variant, expected string only\n"
		    "in `projects.%s%s`\n", dir, field);
	return -1;
}

/* requirements.toml's typed fields the reference checks: features is a table. */
int
ec_requirements_ok(const struct toml_node *doc, char *err, size_t errlen)
{
	const struct toml_node	*f = toml_table_get(doc, "features", 8);
	char			 what[512];

	if (f == NULL || f->kind == TOML_TABLE)
		return 0;
	unexpected(f, what, sizeof(what));
	snprintf(err, errlen, "failed to parse requirements layer " SYSTEM_DIR "/requirements.toml:"
	    " invalid type: %s, expected struct FeatureRequirementsInput\nin `features`\n", what);
	return -1;
}

/* One merged [projects] entry: the user's over the system's. */
static int
project_ok(const struct toml_node *sys, const struct toml_node *usr, const char *dir,
    char *err, size_t errlen)
{
	const struct toml_node	*p = usr != NULL ? usr : sys, *level;
	char			 what[512];

	if (p->kind == TOML_ARRAY && p->n == 0) {
		/* serde reads a struct from a sequence too: this one is too short */
		snprintf(err, errlen, "invalid length 0, expected struct ProjectConfig with 1 "
		    "element\nin `projects.%s`\n", dir);
		return -1;
	}
	/* serde reads a struct from a sequence too: its first element is trust_level */
	if (p->kind == TOML_ARRAY)
		return trust_level_ok(p->kid[0], dir, "", err, errlen);
	if (p->kind != TOML_TABLE) {
		unexpected(p, what, sizeof(what));
		snprintf(err, errlen, "invalid type: %s, expected struct ProjectConfig\n"
		    "in `projects.%s`\n", what, dir);
		return -1;
	}
	/* two tables merge: the user's trust_level, else the system's */
	if ((level = toml_table_get(p, "trust_level", 11)) == NULL && usr != NULL &&
	    sys != NULL && sys->kind == TOML_TABLE)
		level = toml_table_get(sys, "trust_level", 11);
	return level != NULL ? trust_level_ok(level, dir, ".trust_level", err, errlen) : 0;
}

/*
 * The [projects] of the system's and the user's files, merged as the
 * reference merges its layers and read typed: 0, or -1 with err.
 */
int
ec_projects_ok(const struct toml_node *system, const struct toml_node *user, char *err,
    size_t errlen)
{
	const struct toml_node	*s = toml_table_get(system, "projects", 8);
	const struct toml_node	*u = toml_table_get(user, "projects", 8), *top;
	char			 what[512];
	size_t			 i;

	/* a value that is not a table replaces, and is replaced, whole */
	top = u != NULL ? u : s;
	if (top == NULL)
		return 0;
	if (top->kind != TOML_TABLE || (u != NULL && s != NULL && s->kind != TOML_TABLE))
		s = NULL;
	if (top->kind != TOML_TABLE) {
		unexpected(top, what, sizeof(what));
		snprintf(err, errlen, "invalid type: %s, expected a map\nin `projects`\n", what);
		return -1;
	}
	for (i = 0; s != NULL && i < s->n; i++)
		if (project_ok(s->kid[i], u != NULL ? toml_table_get(u, s->key[i].s,
		    s->key[i].len) : NULL, s->key[i].s, err, errlen) == -1)
			return -1;
	for (i = 0; u != NULL && i < u->n; i++)
		if ((s == NULL || toml_table_get(s, u->key[i].s, u->key[i].len) == NULL) &&
		    project_ok(NULL, u->kid[i], u->key[i].s, err, errlen) == -1)
			return -1;
	return 0;
}
