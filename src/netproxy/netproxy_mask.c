/*
 * Credential masking (networkProxy.proxy.credentialMasking), as the
 * reference applies it: a sandboxed `bash -c` command gets a dummy in place
 * of each provider's credential, and execd-proxy puts the real value back
 * into requests for that provider's URL prefixes.  The real values go to
 * the proxy in the registration and nowhere else: not into the child's
 * environment, not into a log line.  Anything that cannot be masked safely
 * (another command form, no sandbox, a dummy that would not fit the
 * provider's pattern) runs unmasked, as the reference does.
 */
#include "config.h"

#include <sys/random.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "jsonx.h"
#include "netproxy/netproxy.h"
#include "netproxy/netproxy_int.h"
#include "netproxy/netproxy_mask.h"

#define DUMMY_MAX	4096
#define DUMMY_MIN	8	/* execd-proxy refuses a shorter dummy */
#define SAMPLE_TRIES	32

static const char alnum[] =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

struct builtin {
	const char		*env[3];
	const char		*kinds[7];	/* token prefixes kept in the dummy */
	const char		*prefixes[4];
	const char		*dflt;		/* the kind of an unrecognised value */
	size_t			 len;		/* a dummy's least length */
};

static const struct builtin builtins[] = {
	{ { "GITHUB_TOKEN", "GH_TOKEN", NULL },
	  { "github_pat_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", NULL },
	  { "https://api.github.com/", "https://github.com/", "https://uploads.github.com/",
	    NULL }, "ghp_", 40 },
	{ { "OPENAI_API_KEY", NULL },
	  { "sk-proj-", "sk-", NULL, NULL, NULL, NULL, NULL },
	  { "https://api.openai.com/", NULL, NULL, NULL }, "sk-", 51 },
};

/* Only a sandboxed `bash -c`: the reference leaves every other form unmasked. */
/*
 * A start file the shell would read first (BASH_ENV for bash -c, ENV for
 * sh; named exactly, whatever its value, even empty): the reference does
 * not mask such a start, since that file could put a real value back.
 */
static int
names_start_file(json_t *env)
{
	return json_object_get(env, "BASH_ENV") != NULL || json_object_get(env, "ENV") != NULL;
}

static int
eligible(json_t *params)
{
	json_t		*argv = json_object_get(params, "argv");
	json_t		*sb = json_object_get(params, "sandbox");
	const char	*a0, *a1, *type, *base;

	if (!json_is_object(sb) || json_array_size(argv) < 3)
		return 0;
	type = json_string_value(json_object_get(json_object_get(sb, "permissions"), "type"));
	if (type != NULL && strcmp(type, "disabled") == 0)
		return 0;
	a0 = json_string_value(json_array_get(argv, 0));
	a1 = json_string_value(json_array_get(argv, 1));
	if (a0 == NULL || a1 == NULL)
		return 0;
	base = strrchr(a0, '/') ? strrchr(a0, '/') + 1 : a0;
	return strcmp(base, "bash") == 0 && strcmp(a1, "-c") == 0;
}

static int
random_char(const char *set, size_t n, char *out)
{
	unsigned char	b;

	do {
		if (getrandom(&b, 1, 0) != 1)
			return -1;
	} while (b >= 256 - 256 % n);
	*out = set[b % n];
	return 0;
}

/* kind, "masked", then random letters and digits up to len. */
static char *
builtin_dummy(const struct builtin *bi, const char *real)
{
	const char	*kind = NULL;
	size_t		 i, n, len = strlen(real);
	char		*d;

	for (i = 0; bi->kinds[i] != NULL && kind == NULL; i++)
		if (strncmp(real, bi->kinds[i], strlen(bi->kinds[i])) == 0)
			kind = bi->kinds[i];
	if (kind == NULL)
		kind = bi->dflt;
	n = strlen(kind) + 6;
	/* GitHub's dummy is as long as the token (at least 40); OpenAI's always 51 */
	if (len < bi->len || strcmp(bi->dflt, "sk-") == 0)
		len = bi->len;
	if (len > DUMMY_MAX || (d = malloc(len + 1)) == NULL)
		return NULL;
	snprintf(d, len + 1, "%smasked", kind);
	for (i = n; i < len; i++)
		if (random_char(alnum, sizeof(alnum) - 1, &d[i]) == -1) {
			free(d);
			return NULL;
		}
	d[len] = '\0';
	return d;
}

/*
 * A dummy of real's shape: its first keep bytes as they are, then each
 * letter or digit replaced by a random one of its class.
 */
static char *
shaped_dummy(const char *real, size_t keep)
{
	size_t	 i, len = strlen(real);
	char	*d;
	int	 rc = 0;

	if (len > DUMMY_MAX || len - keep < 8 || (d = strdup(real)) == NULL)
		return NULL;
	for (i = keep; i < len && rc == 0; i++) {
		if (islower((unsigned char)d[i]))
			rc = random_char(alnum, 26, &d[i]);
		else if (isupper((unsigned char)d[i]))
			rc = random_char(alnum + 26, 26, &d[i]);
		else if (isdigit((unsigned char)d[i]))
			rc = random_char(alnum + 52, 10, &d[i]);
	}
	if (rc == -1 || strcmp(d, real) == 0) {
		free(d);
		return NULL;
	}
	return d;
}

/*
 * A dummy drawn at random from the pattern real fits, as the reference
 * draws it: it owes nothing to real, and is neither real nor inside it nor
 * holding it, and at least DUMMY_MIN long.  A pattern that gives none in
 * SAMPLE_TRIES draws (\b where a draw cannot honour it, short values) gets
 * one of real's shape: all of real reshaped, else with its literal head
 * kept up to a separator (mk-, sk_).  NULL when none fits: the variable
 * then runs unmasked.
 */
static char *
fitting_dummy(const struct mask_provider *p, const char *real)
{
	size_t	 keep = 0, len = strlen(real);
	char	*d;
	int	 i, tries;

	if ((i = mask_provider_which(p, real)) == -1)
		return NULL;
	for (tries = 0; tries < SAMPLE_TRIES; tries++) {
		d = mask_re_sample(p->ere[i], p->icase[i], DUMMY_MAX);
		if (d != NULL && strlen(d) >= DUMMY_MIN && mask_provider_fits(p, d) &&
		    strstr(d, real) == NULL && strstr(real, d) == NULL)
			return d;
		free(d);
	}
	for (;;) {
		if ((d = shaped_dummy(real, keep)) != NULL && mask_provider_fits(p, d))
			return d;
		free(d);
		while (++keep < len && strchr("-_.:", real[keep - 1]) == NULL)
			;
		if (keep >= len)
			return NULL;
	}
}

/* env's key spelled name in any case, or NULL */
static const char *
env_key(json_t *env, const char *name)
{
	const char	*k;
	json_t		*v;

	json_object_foreach(env, k, v)
		if (strcasecmp(k, name) == 0 && json_is_string(v) && json_string_length(v) > 0)
			return k;
	return NULL;
}

static int
add(json_t *brokered, json_t *masked, const char *key, const char *real, char *dummy,
    json_t *prefixes, int basic)
{
	int	rc;

	if (dummy == NULL)
		return -1;
	rc = json_array_append_new(brokered, json_pack("{s:s, s:s, s:O, s:b}", "dummy", dummy,
	    "real", real, "url_prefixes", prefixes, "basic", basic)) == -1 ||
	    json_object_set_new(masked, key, json_string(dummy)) == -1 ? -1 : 0;
	free(dummy);
	return rc;
}

static void
plan_builtins(const char *settings, json_t *env, json_t *brokered, json_t *masked)
{
	const struct builtin	*bi;
	const char		*key, *real;
	char			*dummy;
	json_t			*pre;
	size_t			 i, j;

	for (i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++) {
		bi = &builtins[i];
		if ((pre = json_array()) == NULL)
			return;
		for (j = 0; bi->prefixes[j] != NULL; j++)
			json_array_append_new(pre, json_string(bi->prefixes[j]));
		for (j = 0; bi->env[j] != NULL; j++) {
			if ((key = env_key(env, bi->env[j])) == NULL ||
			    json_object_get(masked, key) != NULL)
				continue;
			/* the reference swaps a built-in's dummy inside Basic too */
			real = json_string_value(json_object_get(env, key));
			if ((dummy = mask_memo_get(settings, key, real)) == NULL &&
			    (dummy = builtin_dummy(bi, real)) != NULL)
				mask_memo_put(settings, key, real, dummy);
			add(brokered, masked, key, real, dummy, pre, 1);
		}
		json_decref(pre);
	}
}

/* One provider's variables: exactly as spelled (the reference's on Unix). */
static void
plan_provider(const char *settings, const struct mask_provider *p, json_t *env, int allow_local,
    json_t *brokered, json_t *masked)
{
	const char	*key, *real;
	json_t		*names, *pre = NULL, *n, *v;
	char		*dummy;
	size_t		 i;

	names = json_object_get(p->conf, "env");
	json_array_foreach(names, i, n) {
		key = json_string_value(n);
		v = json_object_get(env, key);
		if (!json_is_string(v) || json_string_length(v) == 0 ||
		    json_object_get(masked, key) != NULL)
			continue;
		real = json_string_value(v);
		if ((dummy = mask_memo_get(settings, key, real)) == NULL) {
			if ((dummy = fitting_dummy(p, real)) == NULL)
				continue;	/* runs unmasked, as the reference's does */
			mask_memo_put(settings, key, real, dummy);
		}
		if (pre == NULL && (pre = mask_provider_prefixes(p, env, allow_local)) == NULL) {
			free(dummy);
			return;		/* nowhere to send it: unmasked, as in the reference */
		}
		add(brokered, masked, key, real, dummy, pre, p->basic);
	}
	json_decref(pre);
}

static void
plan_custom(const char *settings, json_t *providers, json_t *env, int allow_local,
    json_t *brokered, json_t *masked)
{
	struct mask_provider	*ps;
	size_t			 i, n;

	if ((ps = mask_providers_compile(providers, &n)) == NULL)
		return;
	for (i = 0; i < n; i++)
		plan_provider(settings, &ps[i], env, allow_local, brokered, masked);
	mask_providers_free(ps, n);
}

/*
 * For a start whose credentials are to be masked: *brokered, the proxy's
 * [{dummy, real, url_prefixes}], and *masked, {env key: dummy}.  Both NULL
 * when nothing is masked.  -1: out of memory.
 */
int
netproxy_mask_plan(json_t *params, json_t *env, json_t **brokered, json_t **masked)
{
	json_t	*proxy;
	char	*settings;

	*brokered = *masked = NULL;
	proxy = json_object_get(json_object_get(params, "networkProxy"), "proxy");
	if (env == NULL || !json_is_true(json_object_get(proxy, "credentialMasking")) ||
	    !eligible(params) || names_start_file(env))
		return 0;
	/* the settings a dummy is kept for (netproxy_mask_memo.c) */
	if ((settings = json_dumps(proxy, JSON_COMPACT | JSON_SORT_KEYS)) == NULL)
		return -1;
	if ((*brokered = json_array()) == NULL || (*masked = json_object()) == NULL) {
		json_decref(*brokered);
		*brokered = NULL;
		free(settings);
		return -1;
	}
	plan_builtins(settings, env, *brokered, *masked);
	if (json_is_object(json_object_get(proxy, "credentialProviders")))
		plan_custom(settings, json_object_get(proxy, "credentialProviders"), env,
		    json_is_true(json_object_get(proxy, "allowLocalBinding")), *brokered, *masked);
	free(settings);
	if (json_array_size(*brokered) == 0) {
		json_decref(*brokered);
		json_decref(*masked);
		*brokered = *masked = NULL;
	}
	return 0;
}

int
netproxy_mask_needs_tls(json_t *brokered)
{
	json_t	*b, *u;
	size_t	 i, j;

	json_array_foreach(brokered, i, b)
		json_array_foreach(json_object_get(b, "url_prefixes"), j, u)
			if (strncmp(json_string_value(u) ? json_string_value(u) : "", "https://",
			    8) == 0)
				return 1;
	return 0;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* masked's keys, sorted, NULL-terminated; borrowed strings in a malloc'd array */
static const char **
sorted_keys(json_t *masked)
{
	const char	**keys, *k;
	json_t		 *v;
	size_t		  n = 0;

	if ((keys = calloc(json_object_size(masked) + 1, sizeof(*keys))) == NULL)
		return NULL;
	json_object_foreach(masked, k, v)
		keys[n++] = k;
	qsort(keys, n, sizeof(*keys), cmp_str);
	return keys;
}

/* The child's side: dummies in place, and the reference's two markers. */
int
netproxy_mask_env(json_t *masked, json_t *env)
{
	const char	**keys;
	json_t		*dummy, *list;
	char		*text;
	size_t		 len, i;
	int		 rc;

	if (masked == NULL || json_object_size(masked) == 0)
		return 0;
	if ((list = json_array()) == NULL || (keys = sorted_keys(masked)) == NULL) {
		json_decref(list);
		return -1;
	}
	/* the reference's order: the aliases, then the names, each sorted */
	for (i = 0; keys[i] != NULL; i++) {
		char	alias[512];

		snprintf(alias, sizeof(alias), "@alias:%s", keys[i]);
		json_array_append_new(list, json_pack("[s, O]", alias,
		    json_object_get(masked, keys[i])));
	}
	for (i = 0; keys[i] != NULL; i++) {
		dummy = json_object_get(masked, keys[i]);
		json_array_append_new(list, json_pack("[s, O]", keys[i], dummy));
		if (json_object_set(env, keys[i], dummy) == -1) {
			free(keys);
			json_decref(list);
			return -1;
		}
	}
	free(keys);
	text = jx_dump(list, &len);
	json_decref(list);
	if (text == NULL)
		return -1;
	rc = json_object_set_new(env, "CODEX_NETWORK_PROXY_BROKERED_CREDENTIALS",
	    json_string(text)) == -1 ||
	    json_object_set_new(env, "CODEX_NETWORK_PROXY_CREDENTIAL_BROKER_ACTIVE",
	    json_string("1")) == -1 ? -1 : 0;
	free(text);
	return rc;
}
