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

/* Rust's Debug form of a string, as serde quotes one. */
static void
debug_string(const char *s, char *out, size_t len)
{
	size_t	o = 0;
	char	esc[16];

	if (len < 3) {
		if (len > 0)
			out[0] = '\0';
		return;
	}
	out[o++] = '"';
	for (; *s != '\0' && o + 12 < len; s++) {
		unsigned char c = (unsigned char)*s;
		switch (c) {
		case '"':	snprintf(esc, sizeof(esc), "\\\""); break;
		case '\\':	snprintf(esc, sizeof(esc), "\\\\"); break;
		case '\n':	snprintf(esc, sizeof(esc), "\\n"); break;
		case '\r':	snprintf(esc, sizeof(esc), "\\r"); break;
		case '\t':	snprintf(esc, sizeof(esc), "\\t"); break;
		default:
			if (c < 0x20 || c == 0x7f)
				snprintf(esc, sizeof(esc), "\\u{%x}", c);
			else {
				esc[0] = (char)c;
				esc[1] = '\0';
			}
		}
		o += (size_t)snprintf(out + o, len - o, "%s", esc);
	}
	out[o++] = '"';
	out[o] = '\0';
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
		debug_string(json_string_value(v), q, sizeof(q));
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

	serde_describe(v, content, what, sizeof(what));
	if (snprintf(e->msg, sizeof(e->msg), "invalid type: %s, expected %s", what,
	    expected) >= (int)sizeof(e->msg))
		log_debug("long type error truncated");
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
	size_t	n, i, o;
	char	q[300];

	for (n = 0; variants[n] != NULL; n++)
		;
	snprintf(q, sizeof(q), "%s", got);
	o = (size_t)snprintf(e->msg, sizeof(e->msg), "unknown variant `%s`, expected ", q);
	for (i = 0; i < n && o < sizeof(e->msg); i++) {
		if (n == 2 && i == 1)
			o += (size_t)snprintf(e->msg + o, sizeof(e->msg) - o, " or ");
		else if (i > 0)
			o += (size_t)snprintf(e->msg + o, sizeof(e->msg) - o, ", ");
		else if (n > 2)
			o += (size_t)snprintf(e->msg + o, sizeof(e->msg) - o, "one of ");
		if (o < sizeof(e->msg))
			o += (size_t)snprintf(e->msg + o, sizeof(e->msg) - o, "`%s`", variants[i]);
	}
	return -1;
}

/* The variant is named first; then its value, if a map gave one, must be a unit. */
int
serde_unit_variant(json_t *v, const char *const *variants, int *idx, struct jx_err *e)
{
	json_t		*unit = NULL;
	const char	*name;

	if (json_is_object(v)) {
		if (json_object_size(v) != 1) {
			snprintf(e->msg, sizeof(e->msg),
			    "invalid value: map, expected map with a single key");
			return -1;
		}
		name = json_object_iter_key(json_object_iter(v));
		unit = json_object_iter_value(json_object_iter(v));
	} else if (json_is_string(v))
		name = json_string_value(v);
	else
		return serde_type_error(e, v, "string or map", 0);
	if ((*idx = serde_variant(name, variants)) == -1)
		return serde_unknown_variant(e, name, variants);
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
