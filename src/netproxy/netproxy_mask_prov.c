/*
 * networkProxy.proxy.credentialProviders as the reference uses them.  A
 * provider it ignores (its variables then run unmasked) is ignored here
 * for the same reason, checked in the same order: a name, `env`,
 * `patterns`, a destination (url_prefixes or url_prefix_from_env), valid
 * variable names, none of the built-ins' variables, a host variable that
 * is not one of its own, destinations that parse, `header` exactly with
 * `auth: header`, `prefix` only with a header, patterns that compile and
 * match no empty value.  Then, by name, a provider that shares a variable
 * with an earlier one is dropped.  The reasons are logged; a value never.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "netproxy/netproxy_mask.h"

#define PREFIX_URL_MAX	1400

static const char *const builtin_vars[] = { "GITHUB_TOKEN", "GH_TOKEN", "GH_ENTERPRISE_TOKEN",
    "GITHUB_ENTERPRISE_TOKEN", "OPENAI_API_KEY", NULL };

static int
valid_env_key(const char *k)
{
	if (k == NULL || !(isalpha((unsigned char)*k) || *k == '_'))
		return 0;
	for (; *k; k++)
		if (!isalnum((unsigned char)*k) && *k != '_')
			return 0;
	return 1;
}

static int
is_builtin_var(const char *k)
{
	size_t	i;

	for (i = 0; builtin_vars[i] != NULL; i++)
		if (strcmp(k, builtin_vars[i]) == 0)
			return 1;
	return 0;
}

/* an HTTP field name (RFC 9110 token) */
static int
valid_header(const char *h)
{
	if (*h == '\0')
		return 0;
	for (; *h; h++)
		if (!isalnum((unsigned char)*h) && strchr("!#$%&'*+-.^_`|~", *h) == NULL)
			return 0;
	return 1;
}

/* does `auth` name variant (as a string or a one-key map)? */
static int
has_auth(json_t *auth, const char *variant)
{
	json_t	*a;
	size_t	 i;

	json_array_foreach(auth, i, a)
		if ((json_is_string(a) && strcmp(json_string_value(a), variant) == 0) ||
		    (json_is_object(a) && json_object_get(a, variant) != NULL))
			return 1;
	return 0;
}

static const char *
check_vars(json_t *conf)
{
	json_t		*names = json_object_get(conf, "env"), *n;
	const char	*host = json_string_value(json_object_get(conf, "url_prefix_from_env"));
	size_t		 i;

	json_array_foreach(names, i, n)
		if (!valid_env_key(json_string_value(n)))
			return "has an invalid environment key";
	json_array_foreach(names, i, n)
		if (is_builtin_var(json_string_value(n)))
			return "overlaps a built-in credential source";
	if (host != NULL) {
		if (!valid_env_key(host))
			return "has an invalid host environment key";
		json_array_foreach(names, i, n)
			if (strcmp(json_string_value(n), host) == 0)
				return "has an invalid host environment key";
	}
	return NULL;
}

static const char *
check_destinations_and_auth(json_t *conf)
{
	json_t			*pre = json_object_get(conf, "url_prefixes"), *v;
	json_t			*auth = json_object_get(conf, "auth");
	const char		*header = json_string_value(json_object_get(conf, "header"));
	struct mask_dest	 d;
	size_t			 i;
	int			 by_header;

	json_array_foreach(pre, i, v)
		if (mask_dest_parse(json_string_value(v), &d) == -1)
			return "has an invalid destination";
	if (header != NULL && !valid_header(header))
		return "has an invalid header";
	by_header = has_auth(auth, "header");
	if (by_header != (header != NULL))
		return "requires a header name exactly when using header authentication";
	if (json_is_string(json_object_get(conf, "prefix")) && header == NULL)
		return "requires header authentication to use a header prefix";
	return NULL;
}

static const char *
compile_patterns(struct mask_provider *p, char *why, size_t whylen)
{
	json_t	*pats = json_object_get(p->conf, "patterns"), *v;
	size_t	 i;
	char	 reason[128];

	if ((p->re = calloc(json_array_size(pats), sizeof(*p->re))) == NULL ||
	    (p->ere = calloc(json_array_size(pats), sizeof(*p->ere))) == NULL ||
	    (p->icase = calloc(json_array_size(pats), sizeof(*p->icase))) == NULL)
		return "out of memory";
	json_array_foreach(pats, i, v) {
		if (mask_re_translate(json_string_value(v), &p->re[i], &p->ere[i], &p->icase[i],
		    reason, sizeof(reason)) == -1) {
			snprintf(why, whylen, "has an unusable pattern (#%zu: %s)", i + 1, reason);
			return why;
		}
		p->nre++;
	}
	return NULL;
}

/* NULL when the reference would use it, else why not */
static const char *
provider_check(struct mask_provider *p, char *why, size_t whylen)
{
	json_t		*c = p->conf;
	const char	*bad;

	if (p->name[0] == '\0')
		return "has an empty name";
	if (!json_is_object(c) || json_array_size(json_object_get(c, "env")) == 0)
		return "has no environment keys";
	if (json_array_size(json_object_get(c, "patterns")) == 0)
		return "has no credential patterns";
	if (json_array_size(json_object_get(c, "url_prefixes")) == 0 &&
	    !json_is_string(json_object_get(c, "url_prefix_from_env")))
		return "has no destination URL prefixes";
	if ((bad = check_vars(c)) != NULL || (bad = check_destinations_and_auth(c)) != NULL)
		return bad;
	p->basic = has_auth(json_object_get(c, "auth"), "basic");
	return compile_patterns(p, why, whylen);
}

static int
shares_var(const struct mask_provider *a, const struct mask_provider *b)
{
	json_t	*x, *y;
	size_t	 i, j;

	json_array_foreach(json_object_get(a->conf, "env"), i, x)
		json_array_foreach(json_object_get(b->conf, "env"), j, y)
			if (strcmp(json_string_value(x), json_string_value(y)) == 0)
				return 1;
	return 0;
}

static int
by_name(const void *a, const void *b)
{
	return strcmp(((const struct mask_provider *)a)->name,
	    ((const struct mask_provider *)b)->name);
}

static void
provider_clear(struct mask_provider *p)
{
	size_t	i;

	for (i = 0; i < p->nre; i++) {
		regfree(&p->re[i]);
		free(p->ere[i]);
	}
	free(p->re);
	free(p->ere);
	free(p->icase);
	p->re = NULL;
	p->ere = NULL;
	p->icase = NULL;
	p->nre = 0;
}

struct mask_provider *
mask_providers_compile(json_t *providers, size_t *n)
{
	struct mask_provider	*ps;
	const char		*name, *bad;
	json_t			*conf;
	size_t			 i, j, all = 0;
	char			 why[192];

	*n = 0;
	if (json_object_size(providers) == 0 ||
	    (ps = calloc(json_object_size(providers), sizeof(*ps))) == NULL)
		return NULL;
	json_object_foreach(providers, name, conf) {
		ps[all].name = name;
		ps[all++].conf = conf;
	}
	qsort(ps, all, sizeof(*ps), by_name);
	for (i = 0; i < all; i++) {
		ps[*n] = ps[i];
		if ((bad = provider_check(&ps[*n], why, sizeof(why))) != NULL) {
			log_warnx("credential provider `%.64s` ignored: it %s", ps[*n].name, bad);
			provider_clear(&ps[*n]);
			continue;
		}
		for (j = 0; j < *n && !shares_var(&ps[j], &ps[*n]); j++)
			;
		if (j < *n) {
			log_warnx("credential provider `%.64s` ignored: it shares an environment "
			    "key with `%.64s`", ps[*n].name, ps[j].name);
			provider_clear(&ps[*n]);
			continue;
		}
		(*n)++;
	}
	if (*n == 0) {
		free(ps);
		return NULL;
	}
	return ps;
}

void
mask_providers_free(struct mask_provider *ps, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		provider_clear(&ps[i]);
	free(ps);
}

int
mask_provider_which(const struct mask_provider *p, const char *value)
{
	size_t	i;

	for (i = 0; i < p->nre; i++)
		if (regexec(&p->re[i], value, 0, NULL, 0) == 0)
			return (int)i;
	return -1;
}

int
mask_provider_fits(const struct mask_provider *p, const char *value)
{
	return mask_provider_which(p, value) != -1;
}

/* one destination into out (not twice); -1: it cannot be brokered */
static int
add_dest(json_t *out, const struct mask_dest *d, int allow_local)
{
	char	url[PREFIX_URL_MAX];
	json_t	*v;
	size_t	i;

	if ((allow_local && mask_dest_bypasses(d)) || mask_dest_url(d, url, sizeof(url)) == -1)
		return -1;
	json_array_foreach(out, i, v)
		if (strcmp(json_string_value(v), url) == 0)
			return 0;
	return json_array_append_new(out, json_string(url));
}

json_t *
mask_provider_prefixes(const struct mask_provider *p, json_t *env, int allow_local)
{
	struct mask_dest	 d;
	json_t			*out, *v;
	const char		*host, *from;
	size_t			 i;

	if ((out = json_array()) == NULL)
		return NULL;
	json_array_foreach(json_object_get(p->conf, "url_prefixes"), i, v)
		if (mask_dest_parse(json_string_value(v), &d) == 0 &&
		    add_dest(out, &d, allow_local) == -1)
			goto unusable;
	/* the host variable adds its destination when it holds a usable one */
	from = json_string_value(json_object_get(p->conf, "url_prefix_from_env"));
	host = from ? json_string_value(json_object_get(env, from)) : NULL;
	if (host != NULL && mask_dest_parse(host, &d) == 0 && !d.wildcard &&
	    add_dest(out, &d, allow_local) == -1)
		goto unusable;
	if (json_array_size(out) > 0)
		return out;
	log_warnx("credential provider `%.64s`: no destination for this command; its "
	    "variables run unmasked", p->name);
	json_decref(out);
	return NULL;
unusable:
	log_warnx("credential provider `%.64s`: a destination would bypass the proxy "
	    "(allowLocalBinding) or cannot be brokered; its variables run unmasked", p->name);
	json_decref(out);
	return NULL;
}
