/*
 * libcrypto, loaded at the first hash (or by a listener before it forks).
 *
 * Linked, libcrypto costs every instance its loading and relocation before
 * main (about as much as the rest of start-up); most connections never
 * hash: stdio sessions need nothing of it, a WebSocket one only the
 * handshake's SHA-1, every initialize the SHA-256 naming its session's
 * socket.  So it is opened by soname when first needed, the way http/
 * opens libcurl, and a listener opens it before it forks so that its
 * instances share the relocated pages.
 *
 * The digests use libcrypto's one-context SHA1_* and SHA256_* calls, not
 * EVP: EVP sets the library up at its first use (reads openssl.cnf, loads
 * the default provider, fills algorithm tables whose reference counts every
 * later digest writes), which cost each instance about 0.2 ms of CPU and
 * 40 KiB of PSS, copied on write from the listener or repeated.  The plain
 * calls are the same code EVP's SHA providers run, with no set-up and no
 * shared state.  OpenSSL 3 marks them deprecated (for new code choosing an
 * algorithm at run time), hence OPENSSL_SUPPRESS_DEPRECATED; they remain in
 * libcrypto.so.3's ABI.  HMAC (signed tokens only) goes through HMAC(),
 * which does set EVP up, once, in a process that checks tokens.
 *
 * The prototypes come from OpenSSL's headers, so the compiler checks every
 * call.  Random ids come from getrandom(2), the kernel generator
 * libcrypto's own RAND seeds from, so an initialize answer never waits for
 * this library.
 */
#include "config.h"

#define OPENSSL_SUPPRESS_DEPRECATED

#include <limits.h>
#include <stddef.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "dlsyms.h"
#include "log.h"
#include "util/crypto.h"

#define CRYPTO_SONAME	"libcrypto.so.3"

static struct {
	__typeof__(&SHA1_Init)		sha1_init;
	__typeof__(&SHA1_Update)	sha1_update;
	__typeof__(&SHA1_Final)		sha1_final;
	__typeof__(&SHA256_Init)	sha256_init;
	__typeof__(&SHA256_Update)	sha256_update;
	__typeof__(&SHA256_Final)	sha256_final;
	__typeof__(&EVP_sha256)		evp_sha256;
	__typeof__(&HMAC)		hmac;
	__typeof__(&CRYPTO_memcmp)	memcmp;
} fn;

#define SYM(name, field)	{ name, offsetof(__typeof__(fn), field) }

static const struct dl_sym symbols[] = {
	SYM("SHA1_Init", sha1_init),
	SYM("SHA1_Update", sha1_update),
	SYM("SHA1_Final", sha1_final),
	SYM("SHA256_Init", sha256_init),
	SYM("SHA256_Update", sha256_update),
	SYM("SHA256_Final", sha256_final),
	SYM("EVP_sha256", evp_sha256),
	SYM("HMAC", hmac),
	SYM("CRYPTO_memcmp", memcmp),
};

static int	loaded;

int
crypto_load(void)
{
	if (loaded)
		return 0;
	if (dl_load(CRYPTO_SONAME, symbols, sizeof(symbols) / sizeof(symbols[0]), &fn,
	    "hashing") == -1)
		return -1;
	loaded = 1;
	return 0;
}

int
crypto_sha1(const void *data, size_t len, unsigned char md[SHA1_LEN])
{
	SHA_CTX	c;

	if (crypto_load() == -1)
		return -1;
	if (fn.sha1_init(&c) != 1 || fn.sha1_update(&c, data, len) != 1 ||
	    fn.sha1_final(md, &c) != 1) {
		log_warnx("SHA-1 failed");
		return -1;
	}
	return 0;
}

int
crypto_sha256(const void *data, size_t len, unsigned char md[SHA256_LEN])
{
	SHA256_CTX	c;

	if (crypto_load() == -1)
		return -1;
	if (fn.sha256_init(&c) != 1 || fn.sha256_update(&c, data, len) != 1 ||
	    fn.sha256_final(md, &c) != 1) {
		log_warnx("SHA-256 failed");
		return -1;
	}
	return 0;
}

int
crypto_hmac_sha256(const void *key, size_t keylen, const void *data, size_t len,
    unsigned char md[SHA256_LEN])
{
	unsigned int	mdlen;

	if (keylen > INT_MAX || crypto_load() == -1)
		return -1;
	if (fn.hmac(fn.evp_sha256(), key, (int)keylen, data, len, md, &mdlen) == NULL) {
		log_warnx("HMAC-SHA256 failed");
		return -1;
	}
	return 0;
}

int
crypto_equal(const void *a, const void *b, size_t len)
{
	if (crypto_load() == -1)
		return 0;
	return fn.memcmp(a, b, len) == 0;
}
