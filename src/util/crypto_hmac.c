#include "config.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "util/crypto_hmac.h"

int
hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
    unsigned char out[HMAC_SHA256_LEN])
{
	unsigned int	len = HMAC_SHA256_LEN;

	if (HMAC(EVP_sha256(), key, (int)klen, msg, mlen, out, &len) == NULL ||
	    len != HMAC_SHA256_LEN)
		return -1;
	return 0;
}

int
ct_equal(const void *a, const void *b, size_t n)
{
	return CRYPTO_memcmp(a, b, n) == 0;
}
