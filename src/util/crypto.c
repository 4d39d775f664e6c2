/*
 * libcrypto, loaded at the first hash.
 *
 * Linked, libcrypto costs every instance its loading and relocation before
 * main (about as much as the rest of start-up); most connections never
 * hash: stdio sessions need nothing of it, a WebSocket one only the
 * handshake's SHA-1, a detached one the SHA-256 naming its socket.  So it
 * is opened by soname when first needed (~1 ms once), the way http/ opens
 * libcurl, and a listener opens it before it forks so that its instances
 * share the relocated pages.  The prototypes still come from OpenSSL's
 * headers, so the compiler checks every call.  Random ids come from
 * getrandom(2), the kernel generator libcrypto's own RAND seeds from, so
 * that an initialize answer never waits for this library.
 */
#include "config.h"

#include <dlfcn.h>
#include <limits.h>
#include <stddef.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "log.h"
#include "util/crypto.h"

#define CRYPTO_SONAME	"libcrypto.so.3"

static struct {
	__typeof__(&EVP_Digest)		digest;
	__typeof__(&EVP_sha1)		sha1;
	__typeof__(&EVP_sha256)		sha256;
	__typeof__(&HMAC)		hmac;
	__typeof__(&CRYPTO_memcmp)	memcmp;
} fn;

static const struct {
	const char	*name;
	size_t		 off;
} symbols[] = {
	{ "EVP_Digest", offsetof(__typeof__(fn), digest) },
	{ "EVP_sha1", offsetof(__typeof__(fn), sha1) },
	{ "EVP_sha256", offsetof(__typeof__(fn), sha256) },
	{ "HMAC", offsetof(__typeof__(fn), hmac) },
	{ "CRYPTO_memcmp", offsetof(__typeof__(fn), memcmp) },
};

static int	loaded;

int
crypto_load(void)
{
	void	*lib, *sym;
	size_t	 i;

	if (loaded)
		return 0;
	if ((lib = dlopen(CRYPTO_SONAME, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		log_warnx("cannot load %s: %s", CRYPTO_SONAME, dlerror());
		return -1;
	}
	for (i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++) {
		if ((sym = dlsym(lib, symbols[i].name)) == NULL) {
			log_warnx("%s has no %s", CRYPTO_SONAME, symbols[i].name);
			dlclose(lib);
			return -1;
		}
		/* POSIX: a function's address fits a void * */
		*(void **)((char *)&fn + symbols[i].off) = sym;
	}
	loaded = 1;
	return 0;
}

static int
digest(const void *data, size_t len, unsigned char *md, int sha256)
{
	unsigned int	mdlen;

	if (crypto_load() == -1)
		return -1;
	if (fn.digest(data, len, md, &mdlen, sha256 ? fn.sha256() : fn.sha1(), NULL) != 1) {
		log_warnx("EVP_Digest failed");
		return -1;
	}
	return 0;
}

int
crypto_sha1(const void *data, size_t len, unsigned char md[SHA1_LEN])
{
	return digest(data, len, md, 0);
}

int
crypto_sha256(const void *data, size_t len, unsigned char md[SHA256_LEN])
{
	return digest(data, len, md, 1);
}

int
crypto_hmac_sha256(const void *key, size_t keylen, const void *data, size_t len,
    unsigned char md[SHA256_LEN])
{
	unsigned int	mdlen;

	if (keylen > INT_MAX || crypto_load() == -1)
		return -1;
	if (fn.hmac(fn.sha256(), key, (int)keylen, data, len, md, &mdlen) == NULL) {
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
