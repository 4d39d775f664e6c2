/*
 * serde's error texts, as the reference's params decoders word them: what
 * a value was, what was expected, which field is missing, which variant is
 * unknown.  Shared by the decoders of every method's params.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "log.h"
#include "rpc/rpc_serde.h"

/* Rust's Debug form of a string, as serde quotes one, cut to fit out. */
static void
debug_string(json_t *v, char *out, size_t len)
{
	struct buf	b = { 0 };
	size_t		n;

	if (len == 0)
		return;
	out[0] = '\0';
	if (jx_debug_str(&b, json_string_value(v), json_string_length(v)) == 0) {
		n = b.len < len ? b.len : len - 1;
		while (n > 0 && n < b.len && (b.data[n] & 0xc0) == 0x80)
			n--;
		memcpy(out, b.data, n);
		out[n] = '\0';
	}
	buf_free(&b);
}

void
serde_describe(json_t *v, int content, char *out, size_t len)
{
	char	q[400];

	switch (json_typeof(v)) {
	case JSON_NULL:
		snprintf(out, len, "null");
		break;
	case JSON_TRUE:
		snprintf(out, len, "boolean `true`");
		break;
	case JSON_FALSE:
		snprintf(out, len, "boolean `false`");
		break;
	case JSON_INTEGER:
		if (content)
			snprintf(out, len, "integer `%" JSON_INTEGER_FORMAT "`",
			    json_integer_value(v));
		else
			snprintf(out, len, "number");
		break;
	case JSON_REAL:
		if (!content)
			snprintf(out, len, "number");
		else if (json_real_value(v) == (double)(long long)json_real_value(v))
			snprintf(out, len, "floating point `%.1f`", json_real_value(v));
		else
			snprintf(out, len, "floating point `%.17g`", json_real_value(v));
		break;
	case JSON_STRING:
		debug_string(v, q, sizeof(q));
		snprintf(out, len, "string %s", q);
		break;
	case JSON_ARRAY:
		snprintf(out, len, "sequence");
		break;
	case JSON_OBJECT:
		snprintf(out, len, "map");
		break;
	}
}

int
serde_type_error(struct jx_err *e, json_t *v, const char *expected, int content)
{
	char	what[450];

	if (json_is_string(v)) {
		snprintf(what, sizeof(what), ", expected %s", expected);
		return jx_type_error_str(e, "invalid type: string ", v, what);
	}
	serde_describe(v, content, what, sizeof(what));
	if (snprintf(e->msg, sizeof(e->msg), "invalid type: %s, expected %s", what,
	    expected) >= (int)sizeof(e->msg))
		log_debug("long type error truncated");
	return -1;
}

static int
is_hex(unsigned char c)
{
	return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

/* The hyphenated form: 8-4-4-4-12 hex digits. */
static int
uuid_hyphenated(const unsigned char *s, size_t n)
{
	size_t	i;

	if (n != 36)
		return 0;
	for (i = 0; i < n; i++)
		if ((i == 8 || i == 13 || i == 18 || i == 23) ? s[i] != '-' : !is_hex(s[i]))
			return 0;
	return 1;
}

int
serde_uuid(const char *str, size_t len, struct jx_err *e)
{
	static const size_t	 starts[] = { 0, 9, 14, 19, 24 }, want[] = { 8, 4, 4, 4, 12 };
	const unsigned char	*s = (const unsigned char *)str, *u = s;
	size_t			 i, n = len, off = 0, hyphens = 0, bounds[4] = { 0 }, cl;
	int			 simple = 0;

	/* accepted as uuid::Uuid::parse_str accepts */
	if (len == 32) {
		for (i = 0; i < 32 && is_hex(s[i]); i++)
			;
		if (i == 32)
			return 0;
	}
	if (uuid_hyphenated(s, len) || (len == 38 && s[0] == '{' && s[37] == '}' &&
	    uuid_hyphenated(s + 1, 36)) || (len == 45 && memcmp(s, "urn:uuid:", 9) == 0 &&
	    uuid_hyphenated(s + 9, 36)))
		return 0;
	/* and refused in its words */
	if (len >= 2 && s[0] == '{' && s[len - 1] == '}')
		u = s + 1, n = len - 2, off = 1;
	else if (len >= 9 && memcmp(s, "urn:uuid:", 9) == 0)
		u = s + 9, n = len - 9, off = 9;
	else
		simple = 1;
	for (i = 0; i < n; i += cl) {
		cl = 1;
		if (u[i] >= 0x80) {
			while (i + cl < n && (u[i + cl] & 0xc0) == 0x80)
				cl++;
			snprintf(e->msg, sizeof(e->msg), "invalid character: expected an optional "
			    "prefix of `urn:uuid:` followed by [0-9a-fA-F-], found `%.*s` at %zu",
			    (int)cl, (const char *)u + i, i + off + 1);
			return -1;
		}
		if (u[i] == '-') {
			if (hyphens < 4)
				bounds[hyphens] = i;
			hyphens++;
		} else if (!is_hex(u[i])) {
			/* a NUL as jx_id() keeps it */
			snprintf(e->msg, sizeof(e->msg), "invalid character: expected an optional "
			    "prefix of `urn:uuid:` followed by [0-9a-fA-F-], found `%.*s` at %zu",
			    u[i] == '\0' ? 2 : 1, u[i] == '\0' ? "\xc0\x80" : (const char *)u + i,
			    i + off + 1);
			return -1;
		}
	}
	if (hyphens == 0 && simple)
		snprintf(e->msg, sizeof(e->msg), "invalid length: expected length 32 for simple "
		    "format, found %zu", len);
	else if (hyphens != 4)
		snprintf(e->msg, sizeof(e->msg), "invalid group count: expected 5, found %zu",
		    hyphens + 1);
	else {
		for (i = 0; i < 4; i++)
			if (bounds[i] != starts[i + 1] - 1)
				break;
		snprintf(e->msg, sizeof(e->msg), "invalid group length in group %zu: expected "
		    "%zu, found %zu", i, want[i], i < 4 ? bounds[i] - starts[i] : len - starts[4]);
	}
	return -1;
}

int
serde_missing(struct jx_err *e, const char *field)
{
	snprintf(e->msg, sizeof(e->msg), "missing field `%s`", field);
	return -1;
}

int
serde_variant(const char *s, const char *const *variants)
{
	int	i;

	for (i = 0; variants[i] != NULL; i++)
		if (strcmp(s, variants[i]) == 0)
			return i;
	return -1;
}

int
serde_unknown_variant(struct jx_err *e, const char *got, const char *const *variants)
{
	return serde_unknown_variant_n(e, got, strlen(got), variants);
}

int
serde_variant_n(const char *s, size_t len, const char *const *variants)
{
	/* a name with a NUL is none of them, never its prefix */
	return memchr(s, '\0', len) != NULL ? -1 : serde_variant(s, variants);
}

int
serde_unknown_variant_n(struct jx_err *e, const char *got, size_t len,
    const char *const *variants)
{
	struct buf	 b = { 0 };
	size_t		 n, i;
	const char	*sep;
	int		 r = 0;

	for (n = 0; variants[n] != NULL; n++)
		;
	/* serde names the variant as it came (Display, not Debug), NULs too (as jx_id()) */
	r = buf_append(&b, "unknown variant `", 17);
	for (i = 0; i < len && r == 0; i++)
		r = got[i] == '\0' ? buf_append(&b, "\xc0\x80", 2) : buf_append(&b, got + i, 1);
	r = r == 0 && buf_append(&b, "`, expected ", 12) == 0 ? 0 : -1;
	for (i = 0; i < n && r == 0; i++) {
		sep = n == 2 && i == 1 ? " or " : i > 0 ? ", " : n > 2 ? "one of " : "";
		r = buf_append(&b, sep, strlen(sep)) == 0 && buf_append(&b, "`", 1) == 0 &&
		    buf_append(&b, variants[i], strlen(variants[i])) == 0 &&
		    buf_append(&b, "`", 1) == 0 ? 0 : -1;
	}
	if (r == 0)
		jx_err_setn(e, b.data, b.len);
	else
		snprintf(e->msg, sizeof(e->msg), "out of memory");
	buf_free(&b);
	return -1;
}

/* The variant is named first; then its value, if a map gave one, must be a unit. */
int
serde_unit_variant(json_t *v, const char *const *variants, int *idx, struct jx_err *e)
{
	json_t		*unit = NULL;
	const char	*name;
	size_t		 len;

	if (json_is_object(v)) {
		if (json_object_size(v) != 1) {
			snprintf(e->msg, sizeof(e->msg),
			    "invalid value: map, expected map with a single key");
			return -1;
		}
		name = json_object_iter_key(json_object_iter(v));
		len = json_object_iter_key_len(json_object_iter(v));
		unit = json_object_iter_value(json_object_iter(v));
	} else if (json_is_string(v)) {
		name = json_string_value(v);
		len = json_string_length(v);
	} else
		return serde_type_error(e, v, "string or map", 0);
	if ((*idx = serde_variant_n(name, len, variants)) == -1)
		return serde_unknown_variant_n(e, name, len, variants);
	if (unit != NULL && !json_is_null(unit))
		return serde_type_error(e, unit, "unit", 0);
	return 0;
}

int
serde_empty_seq(json_t *o, const char *key, const char *sname, int nfields,
    struct jx_err *e)
{
	json_t	*v = json_is_object(o) ? json_object_get(o, key) : NULL;

	if (v == NULL || !json_is_array(v) || json_array_size(v) > 0)
		return 0;
	if (nfields > 0) {
		snprintf(e->msg, sizeof(e->msg),
		    "invalid length 0, expected struct %s with %d element%s", sname, nfields,
		    nfields == 1 ? "" : "s");
		return -1;
	}
	if (json_object_set_new(o, key, json_object()) == -1) {
		snprintf(e->msg, sizeof(e->msg), "out of memory");
		return -1;
	}
	return 0;
}

json_t *
serde_struct_params(json_t *params, const struct serde_struct *s, long *n)
{
	json_t	*obj;
	size_t	 i;

	*n = -1;
	if (params == NULL || !json_is_array(params))
		return json_incref(params);
	*n = (long)json_array_size(params);
	if ((obj = json_object()) == NULL)
		return NULL;
	for (i = 0; s->fields[i] != NULL && i < json_array_size(params); i++)
		if (json_object_set(obj, s->fields[i], json_array_get(params, i)) == -1) {
			json_decref(obj);
			return NULL;
		}
	return obj;
}

int
serde_struct_seq_end(const struct serde_struct *s, long n, int rc, struct jx_err *e)
{
	size_t	nf, miss, k;

	if (n < 0)
		return rc;
	for (nf = 0; s->fields[nf] != NULL; nf++)
		;
	/* only a field of this struct left out of the sequence is a length error */
	if (rc == -1) {
		for (k = (size_t)n; k < nf; k++)
			if (strncmp(e->msg, "missing field `", 15) == 0 &&
			    strncmp(e->msg + 15, s->fields[k], strlen(s->fields[k])) == 0 &&
			    strcmp(e->msg + 15 + strlen(s->fields[k]), "`") == 0)
				break;
		if (k >= nf)
			return rc;
	}
	/* serde names the first field left out that has no default */
	for (miss = (size_t)n; miss < nf && (s->seq_defaults >> miss & 1); miss++)
		;
	if (miss < nf)
		snprintf(e->msg, sizeof(e->msg), "invalid length %zu, expected struct %s with "
		    "%zu element%s", miss, s->name, nf, nf == 1 ? "" : "s");
	else if ((size_t)n > nf)
		snprintf(e->msg, sizeof(e->msg),
		    "invalid length %ld, expected fewer elements in array", n);
	else
		return 0;
	return -1;
}
