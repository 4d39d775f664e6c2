/*
 * OpenSSL's libcrypto: the digests linked from its static archive, HMAC
 * loaded from libcrypto.so.3 at its first use.
 *
 * Linked whole, libcrypto costs every instance its loading and relocation
 * before main (about as much as the rest of start-up); loaded by soname
 * at the first hash, it still cost a WebSocket connection about 2.7 ms of
 * its ~8 ms start-up on this project's VM (mapping the library, copying
 * and relocating its data pages, its constructor), for one SHA-1 of 60
 * bytes.  The digests an instance needs (the handshake's SHA-1, the
 * SHA-256 naming a session's socket, the constant-time comparison of a
 * token) are small objects in libssl-dev's libcrypto.a: linking the
 * archive takes only those members (~30 KiB with the CPU feature probe
 * their assembly uses), so they cost nothing until called and need no
 * listener to load them ahead.  A security update of libcrypto's digest
 * code needs execd rebuilt (Debian's Built-Using); the digests have no
 * secret state, and TLS, HMAC and everything else stay in the shared
 * library.
 *
 * They are libcrypto's one-context SHA1_* and SHA256_* calls, not EVP:
 * EVP sets the library up at its first use (reads openssl.cnf, loads the
 * default provider, fills algorithm tables), which would pull most of
 * libcrypto into the archive link and cost each instance its set-up.  The
 * plain calls are the same code EVP's SHA providers run.  OpenSSL 3 marks
 * them deprecated (for new code choosing an algorithm at run time), hence
 * OPENSSL_SUPPRESS_DEPRECATED.  HMAC (signed tokens only) goes through the
 * shared library's HMAC(), which does set EVP up, once, in a process that
 * checks tokens.  The static copies are not exported (no -rdynamic), so
 * the shared library, once loaded, keeps binding to its own.
 *
 * Random ids come from getrandom(2), the kernel generator libcrypto's own
 * RAND seeds from, so an initialize answer never waits for this library.
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
	__typeof__(&EVP_sha256)		evp_sha256;
	__typeof__(&HMAC)		hmac;
} fn;

#define SYM(name, field)	{ name, offsetof(__typeof__(fn), field) }

static const struct dl_sym symbols[] = {
	SYM("EVP_sha256", evp_sha256),
	SYM("HMAC", hmac),
};

static int	loaded;

static int
crypto_load(void)
{
	if (loaded)
		return 0;
	if (dl_load(CRYPTO_SONAME, symbols, sizeof(symbols) / sizeof(symbols[0]), &fn,
	    "HMAC") == -1)
		return -1;
	loaded = 1;
	return 0;
}

int
crypto_sha1(const void *data, size_t len, unsigned char md[SHA1_LEN])
{
	SHA_CTX	c;

	if (SHA1_Init(&c) != 1 || SHA1_Update(&c, data, len) != 1 ||
	    SHA1_Final(md, &c) != 1) {
		log_warnx("SHA-1 failed");
		return -1;
	}
	return 0;
}

int
crypto_sha256(const void *data, size_t len, unsigned char md[SHA256_LEN])
{
	SHA256_CTX	c;

	if (SHA256_Init(&c) != 1 || SHA256_Update(&c, data, len) != 1 ||
	    SHA256_Final(md, &c) != 1) {
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
	return CRYPTO_memcmp(a, b, len) == 0;
}
