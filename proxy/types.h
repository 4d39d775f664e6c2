/*
 * execd-proxy: the types every folder shares (configuration, policy,
 * registrations, connections and the tables through which lower layers
 * call up).  Functions are declared per folder, and a folder uses only
 * the folders below it:
 *
 *	main.c -> front/ -> proto/ -> relay/ -> tls/ -> policy/ -> lib/
 *
 * front/front.h, proto/proto.h, relay/relay.h, tls/tls.h, policy/policy.h.
 */
#ifndef EXECD_PROXY_TYPES_H
#define EXECD_PROXY_TYPES_H

#include <sys/queue.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "buf.h"
#include "evloop.h"

#define PROXY_HOST_MAX		253	/* a DNS name, as the reference bounds it */
#define PROXY_ADDRS_MAX		16	/* resolved addresses kept per request */
#define PROXY_HEAD_MAX		(32 * 1024)	/* request / response head */
#define PROXY_CRED_ID_LEN	16	/* "x" + 15 hex digits */
#define PROXY_CRED_SECRET_LEN	32	/* hex of 16 random bytes */

/* -------------------------------------------------------------- policy */

struct portrange {
	uint16_t	lo, hi;
};

enum proxy_mode {
	MODE_FULL,
	MODE_LIMITED,		/* GET/HEAD/OPTIONS over plain HTTP only */
};

/* What a request carries besides its method (limited mode allows neither). */
#define REQ_BODY	0x01
#define REQ_UPGRADE	0x02
/* A CONNECT (or SOCKS5 to 443) whose inner requests will be inspected. */
#define REQ_INSPECTED	0x04

/* What host_parse() made of a host. */
#define HOST_NAME	0
#define HOST_ADDR	1

/* An address or a network of the policy: "192.0.2.0/24", "2001:db8::1". */
struct addr_net {
	int		family;		/* AF_INET, AF_INET6 */
	uint8_t		a[16];		/* network byte order */
	unsigned	bits;
};

/* One allow or deny entry: a name or glob (text), or an address network. */
struct pattern {
	char		*text;		/* normalised; canonical for an address */
	int		 is_net;
	struct addr_net	 net;
};

/* One policy: the global one from the file, or a process's narrower one. */
struct policy {
	struct pattern	 *allow;
	size_t		  nallow;
	int		  has_allowlist;	/* 0: no allowlist, nothing to match */
	int		  deny_nets;	/* deny has address entries: resolve to check */
	struct pattern	 *deny;
	size_t		  ndeny;
	struct portrange *ports;	/* NULL: every port */
	size_t		  nports;
	int		  allow_local;
	enum proxy_mode	  mode;
	int		  enabled;	/* 0: every request refused (proxy_disabled) */
	int		  socks5;	/* SOCKS5 TCP permitted */
	int		  socks5_udp;	/* SOCKS5 UDP ASSOCIATE permitted */
	/*
	 * A process's own (execd's --tcp-upstream-proxy): its SOCKS5 TCP
	 * flows go to this HTTP CONNECT proxy only; allowed 0: to none.
	 */
	struct upstream	 *tcp_upstream;
	int		  tcp_upstream_allowed;
};

/* What a check concluded. */
struct verdict {
	int		 allow;
	const char	*reason;	/* "allow", "denied", "not_allowed", ... */
	const char	*source;	/* "baseline_policy", "process_policy", "mode_guard" */
};

enum proxy_proto {
	PROTO_HTTP,		/* absolute-URI forwarding */
	PROTO_HTTP_CONNECT,
	PROTO_SOCKS5,
	PROTO_SOCKS5_UDP,
};

/* ---------------------------------------------------------- configuration */

enum audit_dest {
	AUDIT_NONE,
	AUDIT_STDERR,
	AUDIT_FILE,
	AUDIT_SYSLOG,
};

enum audit_overflow {
	AUDIT_BLOCK,		/* stop taking new work until the sink catches up */
	AUDIT_DROP,		/* count and report what does not fit */
};

struct upstream {
	char		 host[PROXY_HOST_MAX + 1];
	uint16_t	 port;
	char		*auth;		/* "Basic ..." for Proxy-Authorization, or NULL */
};

struct proxy_conf {
	int			 refs;
	unsigned		 generation;
	struct policy		 policy;
	struct sockaddr_storage	 http_addr;
	int			 has_http;
	struct sockaddr_storage	 socks_addr;
	int			 has_socks;
	char			*control_path;
	char			*dns_servers;	/* c-ares CSV, NULL: system resolver */
	char			*ca_bundle;	/* handed to clients for CA variables */
	/* HTTPS inspection (read at start; tls/) */
	int			 inspect;	/* 0: limited mode refuses HTTPS */
	char			*state_dir;	/* the generated CA and the bundle */
	char			*inspect_ca_cert, *inspect_ca_key;	/* or a given CA */
	char			*bundle_dir;	/* the bundle; NULL: state_dir */
	char			*upstream_ca;	/* trust for targets; NULL: the system's */
	char			*system_ca;	/* copied into the bundle */
	char		       **inspect_hosts;	/* patterns inspected in full mode too */
	size_t			 ninspect_hosts;
	unsigned		 handshake_ms;
	unsigned		 leaf_cache;
	struct upstream		*upstream;
	unsigned		 max_conns;
	unsigned		 max_conns_client;
	unsigned		 max_pending;	/* connections not yet authenticated */
	unsigned		 max_pending_source;	/* ... per source address */
	unsigned		 idle_ms;
	unsigned		 connect_ms;
	unsigned		 header_ms;
	unsigned		 dns_ms;
	int			 splice;	/* 0: relays copy with read/write */
	char			 loopback_cc[16];	/* TCP_CONGESTION on loopback, "": the host's */
	enum audit_dest		 audit;
	char			*audit_path;
	enum audit_overflow	 audit_overflow;
};

/* ------------------------------------------------------------ registrations */

struct conn;
struct ctl_client;

struct reg {
	LIST_ENTRY(reg)		 hash;
	TAILQ_ENTRY(reg)	 owner_entry;
	TAILQ_HEAD(, conn)	 conns;
	struct ctl_client	*owner;		/* control connection that made it */
	char			 id[PROXY_CRED_ID_LEN + 1];
	char			 secret[PROXY_CRED_SECRET_LEN + 1];
	json_t			*tags;		/* object, echoed in audit events */
	struct policy		*policy;	/* narrower per-process policy, or NULL */
	struct broker		*broker;	/* brokered credentials, or NULL */
	unsigned		 nconns;
	uint64_t		 created;
	int			 events;	/* owner wants a line per decision */
	unsigned		 ask_ms;	/* >0: allowlist misses go to the owner */
	unsigned		 asking;	/* its connections waiting for an answer */
};

/* -------------------------------------------------------------- connections */

/* Where a chunked request body is (http_head.c, chunk_scan()). */
struct chunk_scan {
	int		 state;
	uint64_t	 left;		/* data bytes of the chunk still to come */
	size_t		 line;		/* bytes of the current size line */
	size_t		 total;		/* of the trailers */
	unsigned	 digits;
	int		 done;		/* the last chunk and its trailers are through */
};

/* One direction of a relay: bytes read from src are written to dst. */
struct half {
	int		*src, *dst;
	int		 pipe[2];	/* splice(2) through this, -1: read/write */
	size_t		 inpipe;
	size_t		 pipe_size;	/* what the pipe holds */
	int		 bulk;		/* pipe enlarged for a bulk transfer */
	int		 src_dry;	/* the last splice from src took all it had */
	struct buf	 pend;		/* written before anything else */
	int		 eof;		/* src said EOF */
	int		 shut;		/* dst got shutdown(SHUT_WR) */
	uint64_t	 bytes;
	int		 bounded;	/* src may send only left more bytes ... */
	uint64_t	 left;		/* ... and is not read after them */
	/* while set, bytes from src collect in acc and this decides */
	int		(*filter)(struct conn *, struct buf *acc, struct buf *out);
	struct buf	 acc;
};

enum conn_state {
	CS_GREETING,		/* reading a request head or SOCKS greeting */
	CS_DIALING,		/* policy, DNS and connect in progress */
	CS_RELAY,
	CS_REPLY,		/* flushing a final reply to the client */
	CS_LINGER,		/* reply sent: draining input until EOF */
	CS_UDP,			/* a SOCKS5 UDP association lives while this is open */
	CS_DEAD,
};

enum dial_fail {
	DIAL_OK,
	DIAL_DENIED,		/* policy said no; c->verdict holds why */
	DIAL_DNS,		/* name did not resolve */
	DIAL_TIMEOUT,
	DIAL_REFUSED,
	DIAL_UNREACH,
	DIAL_UPSTREAM,		/* anything else on the way out */
};

struct resolve_req;
struct udp_assoc;
struct inspect;

/*
 * The stage that drives a connection after its greeting: dial_start()
 * and tunnel_start() install theirs, and the connection core calls it
 * for upstream events, timeouts and interest without naming it.
 */
struct conn_stage {
	/* CS_DIALING, CS_RELAY: the descriptor fd is ready */
	void		(*io)(struct conn *, int fd, uint32_t events);
	void		(*timeout)(struct conn *);		/* CS_DIALING: timer ran out */
	uint32_t	(*interest)(struct conn *, int fd);	/* CS_RELAY: events for fd */
	void		(*cancel)(struct conn *);		/* closing; may be NULL */
};

/*
 * A protocol's entry points.  The listener hands its table to every
 * connection it accepts; the connection core, the dialler and the relay
 * call up through it and never name a protocol's functions.
 */
struct proto_handler {
	const char	*name;			/* "HTTP", "SOCKS5" */
	enum proxy_proto kind;			/* what a new connection starts as */
	int		 forwarding;		/* it starts as a forwarded request */
	void		(*input)(struct conn *);	/* client bytes while greeting */
	void		(*dial_done)(struct conn *);	/* c->fail says how it went */
	/* a forwarded request failed after the dial (response filter, idle) */
	void		(*failed)(struct conn *, enum dial_fail);
	void		(*close)(struct conn *);	/* descriptors it added go; may be NULL */
	void		(*release)(struct conn *);	/* its memory goes, at reap; may be NULL */
};

struct src_count;

struct conn {
	TAILQ_ENTRY(conn)	 entry;
	TAILQ_ENTRY(conn)	 reg_entry;
	TAILQ_ENTRY(conn)	 pend_entry;	/* oldest first, while counted_pending */
	struct src_count	*src;		/* its source's count, while pending */
	const struct proto_handler *pp;
	const struct conn_stage	*stage;		/* NULL while greeting */
	enum conn_state		 state;
	enum proxy_proto	 proto;
	/*
	 * A forwarded request (set by proto/, which knows which): its
	 * response ends it, an upstream proxy takes it with no handshake,
	 * and a failure after the dial is the protocol's to answer.  relay/
	 * reads this flag and names no protocol.
	 */
	int			 forwarded;
	/*
	 * Raw TCP from a SOCKS5 CONNECT (set by proto/): a process's own
	 * TCP upstream (policy tcp_upstream) takes it.
	 */
	int			 raw_tcp;
	int			 cfd, ufd;
	struct ev_io		 cio, uio;
	struct ev_timer		 timer;
	struct proxy_conf	*conf;		/* policy in force for this request */
	struct reg		*reg;
	char			 client[64];
	struct buf		 in;		/* client bytes not yet consumed */
	struct buf		 out;		/* final reply before close */
	uint64_t		 started, last_io;
	int			 counted_pending;

	/* the request */
	char			 method[16];
	char			 host[PROXY_HOST_MAX + 1];	/* canonical */
	uint16_t		 port;
	int			 is_literal;	/* host is the address lit */
	struct sockaddr_storage	 lit;
	char			 rawhost[256];	/* a host refused as invalid, for audit */
	size_t			 rawhostlen;
	int			 has_rawhost;	/* rawhost is set, maybe empty */
	int			 socks_step;
	struct buf		 uhead;		/* rewritten request head */
	int			 want_upgrade;
	struct chunk_scan	 chunks;	/* a chunked request body */
	struct buf		 early;		/* sent behind an Upgrade: held until 101 */
	int			 req_shape;	/* REQ_BODY, REQ_UPGRADE */

	/* dialing */
	int			 dial_phase;
	uint32_t		 uwant;		/* upstream events wanted while dialling */
	struct resolve_req	*rq;
	struct sockaddr_storage	 addrs[PROXY_ADDRS_MAX];	/* vetted targets */
	size_t			 naddrs, addr_i;
	char			 addr[64];	/* the address dialled */
	int			 via_upstream;
	const struct upstream	*up;		/* the upstream proxy of this dial, or NULL */
	int			 tcp_route;	/* up is the process's tcp_upstream */
	struct sockaddr_storage	 upaddrs[PROXY_ADDRS_MAX];	/* upstream proxy */
	size_t			 nup, up_i;
	struct verdict		 verdict;
	int			 undecided;	/* only the allowlist missed: ask */
	uint64_t		 ask_id;	/* while waiting for the owner's answer */
	int			 override;	/* the owner allowed an allowlist miss */
	int			 asked_ask;	/* the owner answered "ask" (a deny) */
	char			 decider_reason[256];
	enum dial_fail		 fail;
	int			 allowed;	/* an allow was audited: audit the close */
	const char		*result;	/* for the close record */

	struct half		 c2u, u2c;
	struct udp_assoc	*udp;		/* SOCKS5 UDP ASSOCIATE */
	struct inspect		*ins;		/* an inspected tunnel's TLS and requests */
	int			 inspect;	/* the tunnel is to be inspected */
	int			 audited_close;
};

TAILQ_HEAD(connlist, conn);

#endif
