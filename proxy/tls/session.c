/*
 * The two TLS sessions of an inspected tunnel, on non-blocking sockets.
 * Towards the client we are the server for the CONNECT target, with a
 * leaf minted for it; a client naming another host in its SNI is refused
 * in the handshake.  Towards the target we are a client that verifies
 * its certificate and name against the system store, or the upstream CA
 * file the configuration names (never against our own CA); the last
 * session of each of the RESUME_MAX targets seen last is resumed, which
 * spares the second handshake most of its cost.  Both speak HTTP/1.1 only.
 */
#include "config.h"

#include <sys/queue.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "log.h"
#include "tls/tls.h"

#define RESUME_MAX	256	/* targets whose last session is kept */

/* The last session of a target ("host port"), to resume rather than verify again. */
struct resume {
	TAILQ_ENTRY(resume)	 entry;
	char			*key;
	SSL_SESSION		*sess;
};

static SSL_CTX			*server_ctx, *client_ctx;
static TAILQ_HEAD(resumeq, resume) resumes = TAILQ_HEAD_INITIALIZER(resumes);
static unsigned			 nresumes;
static int			 key_index = -1;

static const unsigned char alpn_http11[] = "\x08http/1.1";

/* The client's SNI, if any, must name the CONNECT target (the session's app data). */
static int
check_sni(SSL *ssl, int *alert, void *arg)
{
	const char	*want = SSL_get_app_data(ssl);
	const char	*sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);

	if (sni == NULL || want == NULL || strcasecmp(sni, want) == 0)
		return SSL_TLSEXT_ERR_OK;
	log_info("inspection: SNI %.253s does not name the CONNECT target %s", sni, want);
	*alert = SSL_AD_UNRECOGNIZED_NAME;
	return SSL_TLSEXT_ERR_ALERT_FATAL;
}

static int
select_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
    const unsigned char *in, unsigned inlen, void *arg)
{
	unsigned char	*sel;

	if (SSL_select_next_proto(&sel, outlen, alpn_http11, sizeof(alpn_http11) - 1, in,
	    inlen) != OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_NOACK;
	*out = sel;
	return SSL_TLSEXT_ERR_OK;
}

static void
resume_free(struct resume *r)
{
	TAILQ_REMOVE(&resumes, r, entry);
	nresumes--;
	SSL_SESSION_free(r->sess);
	free(r->key);
	free(r);
}

static struct resume *
resume_find(const char *key)
{
	struct resume	*r;

	TAILQ_FOREACH(r, &resumes, entry)
		if (strcmp(r->key, key) == 0)
			return r;
	return NULL;
}

/* A verified target handed us a session: it replaces the one kept for it. */
static int
resume_keep(SSL *ssl, SSL_SESSION *sess)
{
	const char	*key = SSL_get_ex_data(ssl, key_index);
	struct resume	*r;

	if (key == NULL || SSL_get_verify_result(ssl) != X509_V_OK)
		return 0;
	if ((r = resume_find(key)) != NULL)
		resume_free(r);
	if ((r = calloc(1, sizeof(*r))) == NULL || (r->key = strdup(key)) == NULL) {
		free(r);
		return 0;
	}
	r->sess = sess;
	TAILQ_INSERT_HEAD(&resumes, r, entry);
	if (++nresumes > RESUME_MAX)
		resume_free(TAILQ_LAST(&resumes, resumeq));
	return 1;	/* the reference is ours now */
}

static void
key_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
	free(ptr);
}

/*
 * The inspection CA vouches for what the proxy mints, never for a target:
 * a chain with its key anywhere is refused, whatever store (upstream-ca,
 * the system's) also holds it.
 */
static int
refuse_own_ca(int ok, X509_STORE_CTX *x)
{
	X509		*cert = X509_STORE_CTX_get_current_cert(x);
	EVP_PKEY	*ours = tls_ca_key(), *pub;

	if (!ok || cert == NULL || ours == NULL)
		return ok;
	if ((pub = X509_get0_pubkey(cert)) != NULL && EVP_PKEY_eq(pub, ours) == 1) {
		X509_STORE_CTX_set_error(x, X509_V_ERR_CERT_REJECTED);
		return 0;
	}
	return ok;
}

static SSL_CTX *
ctx_new(const SSL_METHOD *m)
{
	SSL_CTX	*ctx;

	if ((ctx = SSL_CTX_new(m)) == NULL)
		return NULL;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	/* whole socket reads, not two per record: the callers drain what is buffered */
	SSL_CTX_set_read_ahead(ctx, 1);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF);
	return ctx;
}

int
session_init(const struct proxy_conf *conf)
{
	char	err[256];

	if ((server_ctx = ctx_new(TLS_server_method())) == NULL ||
	    (client_ctx = ctx_new(TLS_client_method())) == NULL)
		goto fail;
	SSL_CTX_set_tlsext_servername_callback(server_ctx, check_sni);
	SSL_CTX_set_alpn_select_cb(server_ctx, select_alpn, NULL);
	SSL_CTX_set_verify(client_ctx, SSL_VERIFY_PEER, refuse_own_ca);
	SSL_CTX_set_session_cache_mode(client_ctx, SSL_SESS_CACHE_CLIENT |
	    SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(client_ctx, resume_keep);
	if (key_index == -1 &&
	    (key_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, key_free)) == -1)
		goto fail;
	if (SSL_CTX_set_alpn_protos(client_ctx, alpn_http11, sizeof(alpn_http11) - 1) != 0)
		goto fail;
	if (conf->upstream_ca != NULL) {
		if (SSL_CTX_load_verify_locations(client_ctx, conf->upstream_ca, NULL) != 1) {
			tls_errors(err, sizeof(err));
			log_warnx("inspection: upstream-ca %s: %s", conf->upstream_ca, err);
			return -1;
		}
	} else if (SSL_CTX_set_default_verify_paths(client_ctx) != 1)
		goto fail;
	return 0;
fail:
	tls_errors(err, sizeof(err));
	log_warnx("inspection: TLS contexts: %s", err);
	return -1;
}

void
session_shutdown(void)
{
	while (!TAILQ_EMPTY(&resumes))
		resume_free(TAILQ_FIRST(&resumes));
	SSL_CTX_free(server_ctx);
	SSL_CTX_free(client_ctx);
	server_ctx = client_ctx = NULL;
}

/* host must outlive the session: the SNI check reads it. */
SSL *
session_server(int fd, const char *host, int is_addr)
{
	SSL	*ssl;
	X509	*leaf;

	if ((leaf = mint_leaf(host, is_addr)) == NULL || (ssl = SSL_new(server_ctx)) == NULL)
		return NULL;
	if (SSL_use_certificate(ssl, leaf) != 1 || SSL_use_PrivateKey(ssl, mint_key()) != 1 ||
	    SSL_set_fd(ssl, fd) != 1) {
		SSL_free(ssl);
		return NULL;
	}
	SSL_set_app_data(ssl, (void *)(uintptr_t)host);
	SSL_set_accept_state(ssl);
	return ssl;
}

/* A session with the target, resuming the last one when there is one. */
SSL *
session_client(int fd, const char *host, int is_addr, uint16_t port)
{
	SSL		*ssl;
	struct resume	*r;
	char		*key;

	if ((ssl = SSL_new(client_ctx)) == NULL)
		return NULL;
	if (asprintf(&key, "%s %u", host, port) == -1) {
		SSL_free(ssl);
		return NULL;
	}
	if (SSL_set_ex_data(ssl, key_index, key) != 1) {
		free(key);
		SSL_free(ssl);
		return NULL;
	}
	if ((r = resume_find(key)) != NULL)
		SSL_set_session(ssl, r->sess);
	if (SSL_set_fd(ssl, fd) != 1 ||
	    (!is_addr && (SSL_set_tlsext_host_name(ssl, host) != 1 ||
	    SSL_set1_host(ssl, host) != 1)) ||
	    (is_addr && X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) != 1)) {
		SSL_free(ssl);
		return NULL;
	}
	SSL_set_connect_state(ssl);
	return ssl;
}

/* Why the target's certificate was refused, or NULL when it was not. */
const char *
session_verify_error(SSL *ssl)
{
	long	r = SSL_get_verify_result(ssl);

	return r == X509_V_OK ? NULL : X509_verify_cert_error_string(r);
}
