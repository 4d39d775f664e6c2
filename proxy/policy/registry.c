/*
 * Registrations: one per process execd launched, found by the credential
 * id the process presents, proven by its secret.  Ids and secrets come
 * from RAND_bytes; a restarted execd may hand back the pair it was given
 * before so that running processes keep working.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "log.h"
#include "policy/policy.h"

#define REG_BUCKETS	1024

static LIST_HEAD(, reg)	buckets[REG_BUCKETS];
static size_t		nregs;

static unsigned
bucket_of(const char *id, size_t len)
{
	uint32_t	h = 2166136261u;
	size_t		i;

	for (i = 0; i < len; i++)
		h = (h ^ (uint8_t)id[i]) * 16777619u;
	return h % REG_BUCKETS;
}

static int
random_hex(char *out, size_t nhex)
{
	uint8_t		raw[32];
	static const char hex[] = "0123456789abcdef";
	size_t		i;

	if (nhex / 2 > sizeof(raw) || RAND_bytes(raw, (int)(nhex + 1) / 2) != 1)
		return -1;
	for (i = 0; i < nhex; i++)
		out[i] = hex[(raw[i / 2] >> (i % 2 ? 0 : 4)) & 0xf];
	out[nhex] = '\0';
	OPENSSL_cleanse(raw, sizeof(raw));
	return 0;
}

/* A credential chosen elsewhere: lower-case hex of the usual shape. */
static int
cred_valid(const char *s, char lead, size_t len)
{
	size_t	i;

	if (strlen(s) != len || (lead != '\0' && s[0] != lead))
		return 0;
	for (i = lead != '\0'; i < len; i++)
		if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
			return 0;
	return 1;
}

static struct reg *
find(const char *id, size_t len)
{
	struct reg	*r;

	LIST_FOREACH(r, &buckets[bucket_of(id, len)], hash)
		if (strlen(r->id) == len && memcmp(r->id, id, len) == 0)
			return r;
	return NULL;
}

struct reg *
reg_find(const char *id)
{
	return find(id, strlen(id));
}

struct reg *
reg_create(struct ctl_client *owner, json_t *tags, struct policy *pol,
    const char *want_id, const char *want_secret, char *err, size_t errlen)
{
	struct reg	*r;
	int		 tries;

	if ((r = calloc(1, sizeof(*r))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (want_id != NULL) {
		if (!cred_valid(want_id, 'x', PROXY_CRED_ID_LEN) || want_secret == NULL ||
		    !cred_valid(want_secret, '\0', PROXY_CRED_SECRET_LEN)) {
			snprintf(err, errlen, "malformed credentials to restore");
			goto fail;
		}
		if (reg_find(want_id) != NULL) {
			snprintf(err, errlen, "credentials %s are in use", want_id);
			goto fail;
		}
		memcpy(r->id, want_id, sizeof(r->id));
		memcpy(r->secret, want_secret, sizeof(r->secret));
	} else {
		r->id[0] = 'x';
		for (tries = 0; tries < 8; tries++) {
			if (random_hex(r->id + 1, PROXY_CRED_ID_LEN - 1) == -1)
				break;
			if (reg_find(r->id) == NULL)
				break;
		}
		if (tries == 8 || random_hex(r->secret, PROXY_CRED_SECRET_LEN) == -1) {
			snprintf(err, errlen, "cannot make credentials (RAND_bytes)");
			goto fail;
		}
	}
	r->owner = owner;
	r->tags = tags ? json_incref(tags) : json_object();
	r->policy = pol;
	r->created = ev_now();
	TAILQ_INIT(&r->conns);
	LIST_INSERT_HEAD(&buckets[bucket_of(r->id, strlen(r->id))], r, hash);
	nregs++;
	return r;
fail:
	free(r);
	return NULL;
}

/* The registration these credentials prove, or NULL. */
struct reg *
reg_auth(const char *id, size_t idlen, const char *secret, size_t secretlen)
{
	struct reg	*r;

	if ((r = find(id, idlen)) == NULL || secretlen != PROXY_CRED_SECRET_LEN)
		return NULL;
	if (CRYPTO_memcmp(r->secret, secret, PROXY_CRED_SECRET_LEN) != 0)
		return NULL;
	return r;
}

/* The caller closes its connections first, so they are still audited with its tags. */
void
reg_destroy(struct reg *r)
{
	LIST_REMOVE(r, hash);
	nregs--;
	json_decref(r->tags);
	policy_free(r->policy);
	broker_free(r->broker);
	OPENSSL_cleanse(r->secret, sizeof(r->secret));
	free(r);
}

size_t
reg_count(void)
{
	return nregs;
}
