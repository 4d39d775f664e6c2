/*
 * policy/: what is allowed.  The configuration file (conf_parse.c), the
 * policy building blocks (policy_parse.c) and per-process policies from
 * JSON (policy_json.c), the host and address checks (policy.c), and the
 * registration table of credentials (registry.c).  Calls nothing else
 * in the proxy: the layers above use it.
 */
#ifndef EXECD_PROXY_POLICY_H
#define EXECD_PROXY_POLICY_H

#include <jansson.h>

#include "types.h"

/* conf_parse.c */
struct proxy_conf *conf_load(const char *path, char *err, size_t errlen);
struct proxy_conf *conf_ref(struct proxy_conf *);
void	 conf_unref(struct proxy_conf *);

/* policy_parse.c */
void	 policy_defaults(struct policy *);
void	 policy_free(struct policy *);
void	 policy_clear(struct policy *);
int	 policy_add_pattern(struct policy *, int deny, const char *pat,
	    char *err, size_t errlen);
int	 policy_add_ports(struct policy *, const char *spec);
/* decimal 1..max, digits only; -1 for anything else */
int	 parse_number(const char *s, unsigned long max, unsigned long *out);
int	 parse_port(const char *s, uint16_t *port);
int	 parse_hostport(const char *s, struct sockaddr_storage *ss, uint16_t defport);

/* policy_json.c */
struct policy *policy_from_json(json_t *o, char *err, size_t errlen);

/* addr.c */
int	 host_parse(const char *in, size_t len, char *out, size_t outlen,
	    struct sockaddr_storage *ss);
void	 addr_from_bytes(int family, const uint8_t *b, struct sockaddr_storage *ss,
	    char *out, size_t outlen);
void	 addr_ntop(const struct sockaddr_storage *, char *out, size_t len);
int	 addr_net_parse(const char *s, struct addr_net *);
int	 addr_net_match(const struct addr_net *, const struct sockaddr *, int loose);
int	 addr_is_public(const struct sockaddr *sa);
int	 addr_is_unspecified(const struct sockaddr *sa);

/* policy.c (lit: the host's address, or NULL for a name) */
int	 pattern_matches(const char *pat, const char *host);
void	 policy_check_host(const struct policy *, const char *source, const char *host,
	    const struct sockaddr_storage *lit, uint16_t port,
	    const char *method, int shape, enum proxy_proto proto, struct verdict *v);
void	 policy_check_host_undecided(const struct policy *, const char *source,
	    const char *host, const struct sockaddr_storage *lit, uint16_t port,
	    const char *method, int shape, enum proxy_proto proto, int *undecided,
	    struct verdict *v);
int	 policy_limited(const struct policy *);
int	 policy_denies_name(const struct policy *, const char *name);
int	 policy_wants_local_check(const struct policy *, const char *host,
	    const struct sockaddr_storage *lit);
int	 policy_wants_addr_check(const struct policy *, const char *host,
	    const struct sockaddr_storage *lit);
void	 policy_check_addrs(const struct policy *, const char *source, const char *host,
	    const struct sockaddr_storage *addrs, size_t n, struct verdict *v);
const char *verdict_header(const struct verdict *);
const char *verdict_message(const struct verdict *);

/* broker.c: a registration's brokered credentials */
struct broker;
struct buf;
struct broker *broker_from_json(json_t *arr, char *err, size_t errlen);
void	 broker_free(struct broker *);
int	 broker_wants_host(const struct broker *, const char *host, unsigned port);
int	 broker_has_https(const struct broker *);
/* broker_path.c: path (plen bytes) under prefix as the origin may read it */
int	 broker_path_under(const char *prefix, const char *path, size_t plen);
int	 broker_rewrite_line(const struct broker *, int https, const char *host,
	    unsigned port, const char *path, size_t plen, const char *line, size_t len,
	    struct buf *out);

/* registry.c */
struct reg *reg_create(struct ctl_client *owner, json_t *tags, struct policy *pol,
	    const char *want_id, const char *want_secret, char *err, size_t errlen);
struct reg *reg_find(const char *id);
struct reg *reg_auth(const char *id, size_t idlen, const char *secret, size_t secretlen);
void	 reg_destroy(struct reg *);
size_t	 reg_count(void);

#endif
