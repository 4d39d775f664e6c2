/*
 * Leaf certificates for inspected hosts, signed by the inspection CA on
 * first use: SAN the host (a DNS name or an IP address), serverAuth,
 * digitalSignature, a short validity, the CA's key identifier.  Every
 * leaf shares one P-256 key that lives in memory only.  The newest
 * cache_max leaves are kept, least recently used first out; a leaf past
 * half its life is minted again.
 */
#include "config.h"

#include <sys/queue.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/x509v3.h>

#include "log.h"
#include "tls/tls.h"

#define LEAF_SECS	(7 * 86400)
#define LEAF_BACKDATE	3600
#define CN_MAX		64	/* X.520 ub-common-name */

struct leaf {
	TAILQ_ENTRY(leaf)	 entry;
	char			*host;
	int			 is_addr;
	X509			*cert;
	time_t			 minted;
};

static TAILQ_HEAD(leafq, leaf) cache = TAILQ_HEAD_INITIALIZER(cache);
static unsigned		  ncached, max_cached;
static EVP_PKEY		 *leaf_key;

int
mint_init(unsigned cache_max)
{
	max_cached = cache_max > 0 ? cache_max : 1;
	if ((leaf_key = EVP_EC_gen("P-256")) == NULL) {
		log_warnx("inspection: cannot generate the leaf key");
		return -1;
	}
	return 0;
}

static void
leaf_free(struct leaf *l)
{
	TAILQ_REMOVE(&cache, l, entry);
	ncached--;
	X509_free(l->cert);
	free(l->host);
	free(l);
}

void
mint_shutdown(void)
{
	while (!TAILQ_EMPTY(&cache))
		leaf_free(TAILQ_FIRST(&cache));
	EVP_PKEY_free(leaf_key);
	leaf_key = NULL;
}

EVP_PKEY *
mint_key(void)
{
	return leaf_key;
}

unsigned
mint_cached(void)
{
	return ncached;
}

static int
set_subject(X509 *cert, const char *host)
{
	X509_NAME	*name = X509_get_subject_name(cert);

	/* a name longer than a CN may be has only its SAN, which is what clients check */
	if (strlen(host) > CN_MAX)
		return 0;
	return X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)host,
	    -1, -1, 0) == 1 ? 0 : -1;
}

static X509 *
mint(const char *host, int is_addr)
{
	X509	*ca = tls_ca_cert(), *cert = X509_new();
	char	 san[PROXY_HOST_MAX + 8];

	snprintf(san, sizeof(san), "%s:%s", is_addr ? "IP" : "DNS", host);
	if (cert == NULL || X509_set_version(cert, 2) != 1 || tls_serial(cert) == -1 ||
	    X509_gmtime_adj(X509_getm_notBefore(cert), -LEAF_BACKDATE) == NULL ||
	    X509_gmtime_adj(X509_getm_notAfter(cert), LEAF_SECS) == NULL ||
	    X509_set_pubkey(cert, leaf_key) != 1 || set_subject(cert, host) == -1 ||
	    X509_set_issuer_name(cert, X509_get_subject_name(ca)) != 1 ||
	    tls_add_ext(cert, ca, NID_basic_constraints, "critical,CA:FALSE") == -1 ||
	    tls_add_ext(cert, ca, NID_key_usage, "critical,digitalSignature") == -1 ||
	    tls_add_ext(cert, ca, NID_ext_key_usage, "serverAuth") == -1 ||
	    tls_add_ext(cert, ca, NID_subject_alt_name, san) == -1 ||
	    tls_add_ext(cert, ca, NID_subject_key_identifier, "hash") == -1 ||
	    tls_add_ext(cert, ca, NID_authority_key_identifier, "keyid:always") == -1 ||
	    X509_sign(cert, tls_ca_key(), EVP_sha256()) == 0) {
		X509_free(cert);
		return NULL;
	}
	return cert;
}

/* The leaf for host, borrowed: valid until the next call. */
X509 *
mint_leaf(const char *host, int is_addr)
{
	struct leaf	*l;
	time_t		 now = time(NULL);
	char		 err[256];

	TAILQ_FOREACH(l, &cache, entry)
		if (l->is_addr == is_addr && strcmp(l->host, host) == 0)
			break;
	if (l != NULL && now - l->minted < LEAF_SECS / 2) {
		TAILQ_REMOVE(&cache, l, entry);
		TAILQ_INSERT_HEAD(&cache, l, entry);
		return l->cert;
	}
	if (l != NULL)
		leaf_free(l);
	if ((l = calloc(1, sizeof(*l))) == NULL || (l->host = strdup(host)) == NULL ||
	    (l->cert = mint(host, is_addr)) == NULL) {
		tls_errors(err, sizeof(err));
		log_warnx("inspection: minting a certificate for %s: %s", host, err);
		if (l != NULL)
			free(l->host);
		free(l);
		return NULL;
	}
	l->is_addr = is_addr;
	l->minted = now;
	TAILQ_INSERT_HEAD(&cache, l, entry);
	if (++ncached > max_cached)
		leaf_free(TAILQ_LAST(&cache, leafq));
	return l->cert;
}
