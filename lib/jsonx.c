#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"

void
jx_describe(json_t *v, char *out, size_t outlen)
{
	switch (json_typeof(v)) {
	case JSON_NULL:
		snprintf(out, outlen, "null");
		break;
	case JSON_TRUE:
		snprintf(out, outlen, "boolean `true`");
		break;
	case JSON_FALSE:
		snprintf(out, outlen, "boolean `false`");
		break;
	case JSON_INTEGER:
	case JSON_REAL:
		/* the reference decodes from a JSON value, which says just "number" */
		snprintf(out, outlen, "number");
		break;
	case JSON_STRING:
		snprintf(out, outlen, "string \"%s\"", json_string_value(v));
		break;
	case JSON_ARRAY:
		snprintf(out, outlen, "sequence");
		break;
	case JSON_OBJECT:
		snprintf(out, outlen, "map");
		break;
	}
}

int
jx_type_error(struct jx_err *e, json_t *v, const char *expected)
{
	char	what[256];

	if (json_is_string(v)) {
		snprintf(what, sizeof(what), ", expected %s", expected);
		return jx_type_error_str(e, "invalid type: string ", v, what);
	}
	jx_describe(v, what, sizeof(what));
	snprintf(e->msg, sizeof(e->msg), "invalid type: %s, expected %s", what, expected);
	return -1;
}

int
jx_struct(json_t *params, const char *name, struct jx_err *e)
{
	char	exp[128];

	if (params != NULL && json_is_object(params))
		return 0;
	snprintf(exp, sizeof(exp), "struct %s", name);
	if (params == NULL) {
		snprintf(e->msg, sizeof(e->msg), "invalid type: null, expected %s", exp);
		return -1;
	}
	return jx_type_error(e, params, exp);
}

int
jx_unit(json_t *params, struct jx_err *e)
{
	if (params == NULL || json_is_null(params))
		return 0;
	if (json_is_object(params) && json_object_size(params) == 0)
		return 0;
	return jx_type_error(e, params, "unit");
}

/* jx_in_order()'s object of one field: the fields it lacks are not missing */
static json_t	*one_field;

int
jx_in_order(json_t *params, int (*decode)(json_t *, void *, struct jx_err *), void *arg,
    struct jx_err *e)
{
	json_t		*one, *v, *outer = one_field;	/* a struct in a struct */
	const char	*k;
	size_t		 klen;
	int		 r;

	if (json_is_object(params)) {
		jx_fields_foreach(params, k, klen, v) {
			if ((one = json_object()) == NULL || json_object_set(one, k, v) == -1) {
				json_decref(one);
				snprintf(e->msg, sizeof(e->msg), "out of memory");
				return -1;
			}
			one_field = one;
			r = decode(one, arg, e);
			one_field = outer;
			json_decref(one);
			if (r == -1)
				return -1;
		}
	}
	return decode(params, arg, e);
}

int
jx_partial(json_t *o)
{
	return o != NULL && o == one_field;
}

/* 1: present (and not null where optional), 0: absent, -1: error */
static int
jx_field(json_t *o, const char *key, enum jx_need need, json_t **v, struct jx_err *e)
{
	*v = json_object_get(o, key);
	if (*v == NULL) {
		if (need == JX_REQ && o != one_field) {
			snprintf(e->msg, sizeof(e->msg), "missing field `%s`", key);
			return -1;
		}
		return 0;
	}
	if (json_is_null(*v) && need == JX_OPT)
		return 0;
	/* JX_DEFAULT and JX_REQ: a null goes on to the type check, and fails it */
	return 1;
}

int
jx_str(json_t *o, const char *key, enum jx_need need, const char **out, size_t *len,
    struct jx_err *e)
{
	json_t	*v;
	int	 r;

	if ((r = jx_field(o, key, need, &v, e)) <= 0)
		return r;
	if (!json_is_string(v))
		return jx_type_error(e, v, "a string");
	*out = json_string_value(v);
	if (len != NULL)
		*len = json_string_length(v);
	else if (strlen(*out) != json_string_length(v)) {
		/* a C string would be cut at the NUL: refuse it rather than act on a prefix */
		snprintf(e->msg, sizeof(e->msg), "invalid value: string with a NUL byte, "
		    "expected a string without NUL bytes");
		return -1;
	}
	return 1;
}

/*
 * NUL is kept as the two bytes C0 80 ("modified UTF-8"): never valid UTF-8,
 * so no other identifier a client can send collides with it.
 */
int
jx_id_encode(json_t *v)
{
	const char	*s = json_string_value(v);
	size_t		 i, n, len = json_string_length(v);
	char		*t;
	int		 r;

	if (s == NULL || strlen(s) == len)
		return 0;
	if ((t = malloc(2 * len + 1)) == NULL)
		return -1;
	for (i = n = 0; i < len; i++) {
		if (s[i] == '\0') {
			t[n++] = (char)0xc0;
			t[n++] = (char)0x80;
		} else
			t[n++] = s[i];
	}
	r = json_string_setn_nocheck(v, t, n);
	free(t);
	return r;
}

json_t *
jx_id_json(const char *id)
{
	json_t	*v;
	char	*t;
	size_t	 i, n;

	if (strstr(id, "\xc0\x80") == NULL)
		return json_string(id);
	if ((t = strdup(id)) == NULL)
		return NULL;
	for (i = n = 0; id[i] != '\0'; i++, n++) {
		if ((unsigned char)id[i] == 0xc0 && (unsigned char)id[i + 1] == 0x80) {
			t[n] = '\0';
			i++;
		} else
			t[n] = id[i];
	}
	v = json_stringn(t, n);
	free(t);
	return v;
}

int
jx_id(json_t *o, const char *key, enum jx_need need, const char **out, struct jx_err *e)
{
	json_t	*v;
	int	 r;

	if ((r = jx_field(o, key, need, &v, e)) <= 0)
		return r;
	if (!json_is_string(v))
		return jx_type_error(e, v, "a string");
	if (jx_id_encode(v) == -1) {
		snprintf(e->msg, sizeof(e->msg), "out of memory");
		return -1;
	}
	*out = json_string_value(v);
	return 1;
}

int
jx_has_nul(json_t *v)
{
	return json_is_string(v) && strlen(json_string_value(v)) != json_string_length(v);
}

int
jx_has_nul_deep(json_t *v)
{
	const char	*k;
	size_t		 klen, i;
	json_t		*e;

	if (json_is_string(v))
		return jx_has_nul(v);
	if (json_is_array(v)) {
		json_array_foreach(v, i, e)
			if (jx_has_nul_deep(e))
				return 1;
		return 0;
	}
	if (json_is_object(v)) {
		json_object_keylen_foreach(v, k, klen, e)
			if (strlen(k) != klen || jx_has_nul_deep(e))
				return 1;
	}
	return 0;
}

int
jx_bool(json_t *o, const char *key, enum jx_need need, int *out, struct jx_err *e)
{
	json_t	*v;
	int	 r;

	if ((r = jx_field(o, key, need, &v, e)) <= 0)
		return r;
	if (!json_is_boolean(v))
		return jx_type_error(e, v, "a boolean");
	*out = json_is_true(v);
	return 1;
}

int
jx_u64(json_t *o, const char *key, enum jx_need need, uint64_t *out, struct jx_err *e)
{
	return jx_uint(o, key, need, out, "u64", e);
}

int
jx_uint(json_t *o, const char *key, enum jx_need need, uint64_t *out, const char *tname,
    struct jx_err *e)
{
	json_t	*v;
	int	 r;

	if ((r = jx_field(o, key, need, &v, e)) <= 0)
		return r;
	if (json_is_real(v) || (json_is_integer(v) && json_integer_value(v) < 0)) {
		snprintf(e->msg, sizeof(e->msg), "invalid number");
		return -1;
	}
	if (!json_is_integer(v))
		return jx_type_error(e, v, tname);
	*out = (uint64_t)json_integer_value(v);
	return 1;
}

int
jx_i64(json_t *o, const char *key, enum jx_need need, int64_t *out, struct jx_err *e)
{
	json_t	*v;
	int	 r;

	if ((r = jx_field(o, key, need, &v, e)) <= 0)
		return r;
	if (json_is_real(v)) {
		snprintf(e->msg, sizeof(e->msg), "invalid number");
		return -1;
	}
	if (!json_is_integer(v))
		return jx_type_error(e, v, "i64");
	*out = json_integer_value(v);
	return 1;
}

int
jx_obj(json_t *o, const char *key, enum jx_need need, json_t **out, struct jx_err *e)
{
	json_t	*v;
	int	 r;

	if ((r = jx_field(o, key, need, &v, e)) <= 0)
		return r;
	if (!json_is_object(v))
		return jx_type_error(e, v, "a map");
	*out = v;
	return 1;
}

int
jx_any(json_t *o, const char *key, enum jx_need need, json_t **out, struct jx_err *e)
{
	json_t	*v;
	int	 r;

	if ((r = jx_field(o, key, need, &v, e)) <= 0)
		return r;
	*out = v;
	return 1;
}

int
jx_substruct(json_t *o, const char *key, enum jx_need need, const char *sname, json_t **out,
    struct jx_err *e)
{
	json_t	*v;
	char	 exp[128];
	int	 r;

	if ((r = jx_field(o, key, need, &v, e)) <= 0)
		return r;
	if (!json_is_object(v)) {
		snprintf(exp, sizeof(exp), "struct %s", sname);
		return jx_type_error(e, v, exp);
	}
	*out = v;
	return 1;
}

int
jx_strarray(json_t *o, const char *key, enum jx_need need, json_t **out, struct jx_err *e)
{
	json_t	*v, *item;
	size_t	 i;
	int	 r;

	if ((r = jx_field(o, key, need, &v, e)) <= 0)
		return r;
	if (!json_is_array(v))
		return jx_type_error(e, v, "a sequence");
	json_array_foreach(v, i, item)
		if (!json_is_string(item))
			return jx_type_error(e, item, "a string");
	*out = v;
	return 1;
}

int
jx_strmap(json_t *o, const char *key, enum jx_need need, json_t **out, struct jx_err *e)
{
	json_t		*v, *item;
	const char	*k;
	int		 r;

	if ((r = jx_field(o, key, need, &v, e)) <= 0)
		return r;
	if (!json_is_object(v))
		return jx_type_error(e, v, "a map");
	json_object_foreach(v, k, item)
		if (!json_is_string(item))
			return jx_type_error(e, item, "a string");
	*out = v;
	return 1;
}

char *
jx_dump(json_t *v, size_t *len)
{
	char	*s;

	s = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
	if (s != NULL && len != NULL)
		*len = strlen(s);
	return s;
}
