/* Shared by the credential-masking files (netproxy_mask*.c). */
#ifndef EXECD_NETPROXY_MASK_H
#define EXECD_NETPROXY_MASK_H

#include <regex.h>
#include <stddef.h>

/*
 * netproxy_mask_re.c: a provider pattern, written in Rust regex syntax as
 * the reference reads it, compiled to a POSIX ERE that matches whole
 * values.  -1 with why (a text naming the syntax, never a value) when the
 * pattern uses syntax execd does not translate, is not a valid pattern, or
 * would match an empty value.
 */
#define MASK_PATTERN_MAX	2048
/* *ere (malloc'd, when ere is not NULL) and *icase: the ERE, for mask_re_sample */
int	mask_re_translate(const char *pattern, regex_t *re, char **ere, int *icase, char *why,
	    size_t whylen);
/*
 * netproxy_mask_gen.c: a random value (printable ASCII, at most max bytes)
 * drawn from such an ERE; NULL when none came (the caller checks it fits).
 */
char	*mask_re_sample(const char *ere, int icase, size_t max);

/*
 * netproxy_mask_memo.c: the dummy this instance gave real (in variable key,
 * under the proxy settings settings, serialised) before: a malloc'd copy,
 * or NULL; and remembering one.
 */
char	*mask_memo_get(const char *settings, const char *key, const char *real);
void	 mask_memo_put(const char *settings, const char *key, const char *real,
	    const char *dummy);

/* netproxy_mask_dest.c: one destination of a provider, as the reference parses it */
struct mask_dest {
	int		 https;
	int		 wildcard;	/* "*.host": any name under host */
	char		 host[256];	/* lower case, no trailing dot */
	unsigned	 port;
	char		 path[1024];	/* starts with '/' */
};

/* 0, or -1 when the reference would call the provider's destination invalid */
int	mask_dest_parse(const char *s, struct mask_dest *d);
/* Would a child with allowLocalBinding reach it past the proxy (NO_PROXY)? */
int	mask_dest_bypasses(const struct mask_dest *d);
/* "https://host:port/path" for execd-proxy; -1 if it cannot say it */
int	mask_dest_url(const struct mask_dest *d, char *out, size_t outlen);

/*
 * netproxy_mask_prov.c: the custom providers the reference would use,
 * checked as it checks them (a provider it ignores is ignored here too,
 * with the reason logged).
 */
#include <jansson.h>

struct mask_provider {
	const char	*name;		/* borrowed from the params */
	json_t		*conf;		/* borrowed */
	regex_t		*re;
	char		**ere;		/* re's text, to draw dummies from */
	int		*icase;
	size_t		 nre;
	int		 basic;		/* `auth` has basic: swap inside Basic too */
};

/* Sorted by name, a provider sharing a variable with an earlier one dropped; NULL: none. */
struct mask_provider *mask_providers_compile(json_t *providers, size_t *n);
void	mask_providers_free(struct mask_provider *, size_t n);
/* Does value match one of the provider's patterns, whole? The first one's index, or -1 */
int	mask_provider_fits(const struct mask_provider *, const char *value);
int	mask_provider_which(const struct mask_provider *, const char *value);
/*
 * The provider's destinations for a child with env, as execd-proxy's URL
 * prefixes; NULL (logged) when it has none, or when one would be reached
 * past the proxy (allowLocalBinding and a NO_PROXY host).
 */
json_t	*mask_provider_prefixes(const struct mask_provider *, json_t *env, int allow_local);

#endif
