/*
 * networkProxy.proxy.credentialMasking and .credentialProviders: checked
 * with the reference's decoder texts (serde, fields in document order,
 * unknown fields refused).  What a well-formed request masks is
 * netproxy_mask.c's.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "jsonx.h"
#include "netproxy/netproxy.h"
#include "netproxy/netproxy_int.h"

#define PROVIDER_FIELDS	"`env`, `patterns`, `url_prefixes`, `url_prefix_from_env`, " \
			"`auth`, `header`, `prefix`"
#define AUTH_VARIANTS	"`bearer`, `token`, `basic`, `header`"

/*
 * The reference decodes networkProxy.proxy from the raw text, where serde
 * names an integer with its value (elsewhere params say just "number").
 */
static int
type_error(struct jx_err *e, json_t *v, const char *expected)
{
	if (!json_is_integer(v))
		return jx_type_error(e, v, expected);
	snprintf(e->msg, sizeof(e->msg), "invalid type: integer `%" JSON_INTEGER_FORMAT
	    "`, expected %s", json_integer_value(v), expected);
	return -1;
}

static int
auth_variant(const char *name, struct jx_err *e)
{
	static const char *const variants[] = { "bearer", "token", "basic", "header", NULL };
	size_t	i;

	for (i = 0; variants[i] != NULL; i++)
		if (strcmp(name, variants[i]) == 0)
			return 0;
	snprintf(e->msg, sizeof(e->msg), "unknown variant `%s`, expected one of "
	    AUTH_VARIANTS, name);
	return -1;
}

/* One `auth` entry: a unit variant, as a string or as a one-key map. */
static int
auth_entry(json_t *v, struct jx_err *e)
{
	const char	*k;
	json_t		*unit;

	if (json_is_string(v))
		return auth_variant(json_string_value(v), e);
	if (!json_is_object(v))
		return type_error(e, v, "string or map");
	if (json_object_size(v) != 1) {
		snprintf(e->msg, sizeof(e->msg), "invalid value: map, expected map with a "
		    "single key");
		return -1;
	}
	json_object_foreach(v, k, unit) {
		if (auth_variant(k, e) == -1)
			return -1;
		if (!json_is_null(unit))
			return type_error(e, unit, "unit");
	}
	return 0;
}

static int
auth_list(json_t *v, struct jx_err *e)
{
	json_t	*item;
	size_t	 i;

	if (!json_is_array(v))
		return type_error(e, v, "a sequence");
	json_array_foreach(v, i, item)
		if (auth_entry(item, e) == -1)
			return -1;
	return 0;
}

static int
string_list(json_t *v, struct jx_err *e)
{
	json_t	*item;
	size_t	 i;

	if (!json_is_array(v))
		return type_error(e, v, "a sequence");
	json_array_foreach(v, i, item)
		if (!json_is_string(item))
			return type_error(e, item, "a string");
	return 0;
}

/* One field of a CredentialProviderConfig. */
static int
provider_field(const char *key, json_t *v, struct jx_err *e)
{
	if (strcmp(key, "env") == 0 || strcmp(key, "patterns") == 0 ||
	    strcmp(key, "url_prefixes") == 0)
		return string_list(v, e);
	if (strcmp(key, "auth") == 0)
		return auth_list(v, e);
	if (strcmp(key, "url_prefix_from_env") == 0 || strcmp(key, "header") == 0 ||
	    strcmp(key, "prefix") == 0)
		return json_is_null(v) || json_is_string(v) ? 0 : type_error(e, v, "a string");
	snprintf(e->msg, sizeof(e->msg), "unknown field `%s`, expected one of "
	    PROVIDER_FIELDS, key);
	return -1;
}

static int
providers(json_t *map, struct jx_err *e)
{
	const char	*name, *key;
	json_t		*conf, *v;

	if (!json_is_object(map))
		return type_error(e, map, "a map");
	json_object_foreach(map, name, conf) {
		if (!json_is_object(conf))
			return type_error(e, conf, "struct CredentialProviderConfig");
		json_object_foreach(conf, key, v)
			if (provider_field(key, v, e) == -1)
				return -1;
	}
	return 0;
}

int
netproxy_cred_check(json_t *proxy, int *masking, char *err, size_t errlen)
{
	json_t		*map, *v;
	struct jx_err	 e;

	v = json_object_get(proxy, "credentialMasking");
	if (v != NULL && !json_is_boolean(v)) {
		type_error(&e, v, "a boolean");
		snprintf(err, errlen, "%s", e.msg);
		return NETPROXY_EINVAL;
	}
	*masking = v != NULL && json_is_true(v);
	map = json_object_get(proxy, "credentialProviders");
	if (map != NULL && providers(map, &e) == -1) {
		snprintf(err, errlen, "%s", e.msg);
		return NETPROXY_EINVAL;
	}
	return 0;
}
