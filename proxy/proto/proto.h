/*
 * proto/: the protocols spoken to clients.  The HTTP proxy (http_proxy.c:
 * CONNECT and absolute-URI requests, with http_forward.c and the head
 * parser http_head.h) and SOCKS5 (socks5.c, UDP ASSOCIATE in
 * socks5_udp.c).  Each exports one struct proto_handler that a listener
 * is opened with.  An inspected tunnel (inspect.c, inspect_req.c) is the
 * stage either runs after its reply.  Uses relay/, tls/ and policy/.
 */
#ifndef EXECD_PROXY_PROTO_H
#define EXECD_PROXY_PROTO_H

#include "types.h"

/* http_proxy.c */
extern const struct proto_handler http_proto;
void	 http_fail_reply(struct conn *, int status, const char *reason_phrase,
	    const char *body);

/* http_target.c: what a refused request's head aimed at, for its record */
void	 http_note_target(struct conn *, const char *head, size_t len);

/* http_forward.c */
struct reqline;
/* reg: the registration the request's credentials prove (its brokered credentials), or NULL */
int	 http_forward_prepare(struct conn *, const struct reg *reg, const struct reqline *,
	    const char *head, size_t headlen, char *err, size_t errlen);
void	 http_forward_start(struct conn *);
struct buf;
int	 http_chunk_filter(struct conn *, struct buf *acc, struct buf *out);

/* inspect.c */
int	 inspect_wanted(const struct conn *);
void	 inspect_start(struct conn *, const void *reply, size_t n);

/* socks5.c */
extern const struct proto_handler socks5_proto;

/* socks5_udp.c */
struct udp_assoc;
int	 udp_assoc_open(struct conn *, struct sockaddr_storage *bnd,
	    const struct sockaddr_storage *from, uint16_t from_port);
void	 udp_assoc_close(struct udp_assoc *);
void	 udp_assoc_free(struct udp_assoc *);

#endif
