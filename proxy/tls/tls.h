/*
 * tls/: what HTTPS inspection needs of OpenSSL.  Its start and end
 * (tls.c), the proxy's own CA and the bundle clients trust it through
 * (ca.c), leaf certificates minted per host and kept in a bounded cache
 * (mint.c), and the TLS sessions on both sides of an inspected tunnel
 * (session.c).  Knows no connection
 * and no protocol; uses policy/ only for the configuration's types.
 */
#ifndef EXECD_PROXY_TLS_H
#define EXECD_PROXY_TLS_H

#include <openssl/ssl.h>

#include "types.h"

/* tls.c */
int	 tls_init(const struct proxy_conf *);
void	 tls_shutdown(void);
int	 tls_ready(void);
const char *tls_bundle_path(void);
const char *tls_key_path(void);

/* ca.c */
int	 ca_init(const struct proxy_conf *);
void	 ca_shutdown(void);
const char *ca_bundle_path(void);
const char *ca_key_path(void);
X509	*tls_ca_cert(void);
EVP_PKEY *tls_ca_key(void);
void	 tls_errors(char *buf, size_t len);
int	 tls_add_ext(X509 *cert, X509 *issuer, int nid, const char *value);
int	 tls_serial(X509 *cert);

/* mint.c: a leaf for host (a name, or an address when lit is set) */
int	 mint_init(unsigned cache_max);
void	 mint_shutdown(void);
X509	*mint_leaf(const char *host, int is_addr);
EVP_PKEY *mint_key(void);
unsigned mint_cached(void);

/* session.c */
int	 session_init(const struct proxy_conf *);
void	 session_shutdown(void);
SSL	*session_server(int fd, const char *host, int is_addr);
SSL	*session_client(int fd, const char *host, int is_addr, uint16_t port);
const char *session_verify_error(SSL *);

#endif
