/*
 * The proxy's inspection CA: loaded from the files the configuration
 * names, or from the state directory, where the first start generates it
 * (an EC P-256 key, 0600, never anywhere else).  Beside it goes the
 * bundle clients are pointed at: the system's CA certificates and ours,
 * written once per start, atomically.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "fdio.h"
#include "log.h"
#include "tls/tls.h"

#define CA_NAME		"execd-proxy inspection CA"
#define CA_DAYS		3650
#define BUNDLE_MAX	(16 * 1024 * 1024)

static struct {
	X509		*cert;
	EVP_PKEY	*key;
	char		*bundle;
	char		*keypath;	/* where the key is kept, for hiding it */
} ca;

void
tls_errors(char *buf, size_t len)
{
	unsigned long	e;
	size_t		n = 0;

	buf[0] = '\0';
	while ((e = ERR_get_error()) != 0 && n + 2 < len) {
		if (n > 0) {
			buf[n++] = ';';
			buf[n] = '\0';
		}
		ERR_error_string_n(e, buf + n, len - n);
		n = strlen(buf);
	}
	if (n == 0)
		snprintf(buf, len, "unknown TLS error");
}

static int
fail(const char *what, const char *path)
{
	char	err[256];

	tls_errors(err, sizeof(err));
	log_warnx("inspection CA: %s%s%s: %s", what, path ? " " : "", path ? path : "", err);
	return -1;
}

int
tls_add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX	 ctx;
	X509_EXTENSION	*ext;
	int		 rv;

	X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
	if ((ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value)) == NULL)
		return -1;
	rv = X509_add_ext(cert, ext, -1);
	X509_EXTENSION_free(ext);
	return rv == 1 ? 0 : -1;
}

static EVP_PKEY *
ec_key(void)
{
	return EVP_EC_gen("P-256");
}

int
tls_serial(X509 *cert)
{
	BIGNUM		*bn = BN_new();
	ASN1_INTEGER	*sn = NULL;
	int		 rv = -1;

	if (bn != NULL && BN_rand(bn, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1 &&
	    (sn = BN_to_ASN1_INTEGER(bn, NULL)) != NULL &&
	    X509_set_serialNumber(cert, sn) == 1)
		rv = 0;
	ASN1_INTEGER_free(sn);
	BN_free(bn);
	return rv;
}

static X509 *
ca_generate(EVP_PKEY *key)
{
	X509		*cert = X509_new();
	X509_NAME	*name;

	if (cert == NULL || X509_set_version(cert, 2) != 1 || tls_serial(cert) == -1 ||
	    X509_gmtime_adj(X509_getm_notBefore(cert), -86400) == NULL ||
	    X509_gmtime_adj(X509_getm_notAfter(cert), (long)CA_DAYS * 86400) == NULL ||
	    X509_set_pubkey(cert, key) != 1 || (name = X509_get_subject_name(cert)) == NULL ||
	    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
	    (const unsigned char *)CA_NAME, -1, -1, 0) != 1 ||
	    X509_set_issuer_name(cert, name) != 1 ||
	    tls_add_ext(cert, cert, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") == -1 ||
	    tls_add_ext(cert, cert, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature") ==
	    -1 || tls_add_ext(cert, cert, NID_subject_key_identifier, "hash") == -1 ||
	    X509_sign(cert, key, EVP_sha256()) == 0) {
		X509_free(cert);
		return NULL;
	}
	return cert;
}

static X509 *
read_cert(const char *path)
{
	FILE	*f;
	X509	*cert;

	if ((f = fopen(path, "re")) == NULL)
		return NULL;
	cert = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	return cert;
}

static EVP_PKEY *
read_key(const char *path)
{
	FILE		*f;
	EVP_PKEY	*key;

	if ((f = fopen(path, "re")) == NULL)
		return NULL;
	key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	return key;
}

/* Write a file whole under a temporary name, then rename it into place. */
static int
write_atomic(const char *path, mode_t mode, const void *p, size_t n)
{
	char	tmp[PATH_MAX];
	int	fd;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= sizeof(tmp))
		return -1;
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode)) == -1) {
		log_warn("inspection CA: %s", tmp);
		return -1;
	}
	if (fchmod(fd, mode) == -1 || fd_write_all(fd, p, n) != 0 || fsync(fd) == -1) {
		log_warn("inspection CA: %s", tmp);
		close(fd);
		unlink(tmp);
		return -1;
	}
	close(fd);
	if (rename(tmp, path) == -1) {
		log_warn("inspection CA: rename to %s", path);
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* PEM text of a certificate or a private key, NUL-terminated in *out. */
static int
pem_of(X509 *cert, EVP_PKEY *key, char **out, size_t *len)
{
	BIO	*b = BIO_new(BIO_s_mem());
	char	*p;
	long	 n;
	int	 ok;

	if (b == NULL)
		return -1;
	ok = cert ? PEM_write_bio_X509(b, cert) :
	    PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL);
	if (ok != 1 || (n = BIO_get_mem_data(b, &p)) <= 0 || (*out = malloc((size_t)n + 1)) ==
	    NULL) {
		BIO_free(b);
		return -1;
	}
	memcpy(*out, p, (size_t)n);
	(*out)[n] = '\0';
	*len = (size_t)n;
	OPENSSL_cleanse(p, (size_t)n);
	BIO_free(b);
	return 0;
}

static int
save_pem(const char *path, mode_t mode, X509 *cert, EVP_PKEY *key)
{
	char	*pem;
	size_t	 n;
	int	 rv;

	if (pem_of(cert, key, &pem, &n) == -1)
		return fail("encoding", path);
	rv = write_atomic(path, mode, pem, n);
	OPENSSL_cleanse(pem, n);
	free(pem);
	return rv;
}

/* The state directory's CA, or a new one there (key first: a cert never lacks its key). */
static int
ca_from_dir(const char *dir, mode_t mode)
{
	char	cpath[PATH_MAX], kpath[PATH_MAX];

	if (mkdir(dir, mode) == -1 && errno != EEXIST) {
		log_warn("inspection CA: state directory %s", dir);
		return -1;
	}
	snprintf(cpath, sizeof(cpath), "%s/ca.pem", dir);
	snprintf(kpath, sizeof(kpath), "%s/ca.key", dir);
	if ((ca.keypath = strdup(kpath)) == NULL)
		return fail("keeping the name of", kpath);
	if (access(cpath, F_OK) == 0 && access(kpath, F_OK) == 0) {
		if ((ca.cert = read_cert(cpath)) == NULL)
			return fail("reading", cpath);
		if ((ca.key = read_key(kpath)) == NULL)
			return fail("reading", kpath);
		return 0;
	}
	if ((ca.key = ec_key()) == NULL || (ca.cert = ca_generate(ca.key)) == NULL)
		return fail("generating", NULL);
	if (save_pem(kpath, 0600, NULL, ca.key) == -1 || save_pem(cpath, 0644, ca.cert, NULL) == -1)
		return -1;
	log_notice("inspection CA generated in %s", dir);
	return 0;
}

static int
write_bundle(const struct proxy_conf *conf, const char *dir)
{
	struct buf	 b = { 0 };
	char		 path[PATH_MAX], *pem;
	size_t		 n;
	int		 fd, rv = -1;
	ssize_t		 r;

	if (mkdir(dir, 0755) == -1 && errno != EEXIST) {
		log_warn("inspection CA: bundle directory %s", dir);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/ca-bundle.pem", dir);
	if ((fd = open(conf->system_ca, O_RDONLY | O_CLOEXEC)) == -1)
		log_warn("inspection CA: system bundle %s (the bundle holds only ours)",
		    conf->system_ca);
	while (fd != -1 && buf_avail(&b) < BUNDLE_MAX && buf_reserve(&b, 65536) == 0 &&
	    (r = read(fd, b.data + b.len, b.cap - b.len)) > 0)
		b.len += (size_t)r;
	if (fd != -1)
		close(fd);
	if (buf_avail(&b) > 0 && b.data[b.len - 1] != '\n')
		buf_append(&b, "\n", 1);
	if (pem_of(ca.cert, NULL, &pem, &n) == 0) {
		if (buf_append(&b, pem, n) == 0 && write_atomic(path, 0644, buf_head(&b),
		    buf_avail(&b)) == 0 && (ca.bundle = strdup(path)) != NULL)
			rv = 0;
		free(pem);
	}
	buf_free(&b);
	return rv;
}

static int
ca_load(const struct proxy_conf *conf)
{
	/* the bundle elsewhere: the state directory holds only our secret */
	if (conf->inspect_ca_cert == NULL)
		return ca_from_dir(conf->state_dir, conf->bundle_dir ? 0700 : 0755);
	if ((ca.keypath = strdup(conf->inspect_ca_key)) == NULL)
		return fail("keeping the name of", conf->inspect_ca_key);
	if ((ca.cert = read_cert(conf->inspect_ca_cert)) == NULL)
		return fail("reading", conf->inspect_ca_cert);
	if ((ca.key = read_key(conf->inspect_ca_key)) == NULL)
		return fail("reading", conf->inspect_ca_key);
	if (X509_check_private_key(ca.cert, ca.key) != 1)
		return fail("key does not match", conf->inspect_ca_cert);
	return 0;
}

/* The CA the configuration names or the state directory holds, and its bundle. */
int
ca_init(const struct proxy_conf *conf)
{
	if (ca_load(conf) == -1 || write_bundle(conf,
	    conf->bundle_dir ? conf->bundle_dir : conf->state_dir) == -1)
		return -1;
	return 0;
}

void
ca_shutdown(void)
{
	X509_free(ca.cert);
	EVP_PKEY_free(ca.key);
	free(ca.bundle);
	free(ca.keypath);
	memset(&ca, 0, sizeof(ca));
}

/* NULL until ca_init() succeeded */
const char *
ca_bundle_path(void)
{
	return ca.bundle;
}

/* NULL until ca_init() succeeded */
const char *
ca_key_path(void)
{
	return ca.bundle ? ca.keypath : NULL;
}

X509 *
tls_ca_cert(void)
{
	return ca.cert;
}

EVP_PKEY *
tls_ca_key(void)
{
	return ca.key;
}
