/*
 * relay/: the connection core, which knows no protocol by name.  A
 * client connection's descriptors, timer and lifetime (conn.c), dialling
 * a vetted target (dial.c), the byte relay (tunnel.c), name resolution
 * (resolve.c) and the audit log (audit.c).  It calls a protocol only
 * through the struct proto_handler the connection carries; dial.c and
 * tunnel.c drive a connection by installing a struct conn_stage.  Uses
 * policy/ only.
 */
#ifndef EXECD_PROXY_RELAY_H
#define EXECD_PROXY_RELAY_H

#include "types.h"

/* conn.c */
int	 conn_admit(const struct proxy_conf *, const struct sockaddr_storage *peer);
void	 conn_local_cc(const struct proxy_conf *, int fd, const struct sockaddr_storage *peer);
struct conn *conn_new(const struct proto_handler *, struct proxy_conf *, int fd,
	    const struct sockaddr_storage *peer);
void	 conn_close(struct conn *, const char *why);
int	 conn_attach_reg(struct conn *, struct reg *);
void	 conn_raw_host(struct conn *, const void *, size_t);
void	 conn_want(struct conn *);
void	 conn_reply_close(struct conn *, const void *msg, size_t len);
int	 conn_flush(struct conn *);
void	 conn_timer(struct conn *, unsigned ms);
void	 conn_close_all(void);
void	 conn_resume_all(void);
unsigned conn_count(void);
unsigned conn_pending(void);
void	 conn_close_reg(struct reg *);
void	 half_init(struct half *, int *src, int *dst);
void	 half_free(struct half *);

/* dial.c */
void	 dial_start(struct conn *);
/* fn sends the owner c's question (c->ask_id set); -1 when it cannot */
void	 dial_set_asker(int (*fn)(struct conn *));
/* the owner's answer: allow, or deny (ask: it said "ask"), reason may be NULL */
void	 dial_decided(struct conn *, int allow, int ask, const char *reason);

/* tunnel.c */
void	 tunnel_start(struct conn *);
void	 tunnel_start_reply(struct conn *, const void *reply, size_t n);

/* resolve.c */
#define RESOLVE_NAMES_MAX	16
/* The names of the CNAME chain an answer came through: lower case, no trailing dot. */
struct resolve_names {
	size_t	n;
	char	name[RESOLVE_NAMES_MAX][PROXY_HOST_MAX + 1];
};
typedef void	resolve_cb(void *arg, int status, const struct sockaddr_storage *addrs,
		    size_t n, const struct resolve_names *names);
int	 resolve_init(const char *servers, unsigned timeout_ms);
int	 resolve_set_servers(const char *servers, unsigned timeout_ms);
void	 resolve_shutdown(void);
struct resolve_req *resolve_start(const char *host, resolve_cb *, void *arg);
void	 resolve_cancel(struct resolve_req *);
const char *resolve_strerror(int status);
int	 resolve_is_timeout(int status);

/* audit.c */
int	 audit_open(enum audit_dest, const char *path, enum audit_overflow);
int	 audit_blocked(void);
void	 audit_set_resume(void (*)(void));
uint64_t audit_suppressed(void);
uint64_t audit_queued(void);
void	 audit_close(void);
void	 audit_decision(struct conn *, const struct verdict *);
/* fn hears every decision on a registration that asked for events (front/) */
void	 audit_set_observer(void (*fn)(struct conn *, const struct verdict *));
void	 audit_tunnel_close(struct conn *, const char *result);
/* a request inside an inspected tunnel */
struct inner_req {
	char		 method[16];
	size_t		 pathlen;
	int		 status;		/* answered; 0: none */
	uint64_t	 bytes_up, bytes_down;	/* plaintext */
	const char	*result;
};
void	 audit_request(struct conn *, const struct inner_req *, const struct verdict *);
uint64_t audit_lost(void);
uint64_t audit_written(void);
const char *proto_name(enum proxy_proto);

/* audit_limit.c: cred NULL for the unauthenticated */
typedef void	audit_summary_cb(const char *cred, uint64_t suppressed);
int	 audit_limit_admit(const char *cred, audit_summary_cb *);
int	 audit_limit_flush(audit_summary_cb *);
void	 time_rfc3339(char *buf, size_t len);

#endif
