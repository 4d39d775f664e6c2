/* Shared by netproxy.c (the control connection) and netproxy_env.c. */
#ifndef EXECD_NETPROXY_INT_H
#define EXECD_NETPROXY_INT_H

#include <sys/queue.h>
#include <sys/types.h>

#include <stdint.h>

#include <jansson.h>

#include "buf.h"

struct netproxy_reg {
	TAILQ_ENTRY(netproxy_reg) entry;
	const char	*process_id;	/* in req's tags */
	json_t		*req;		/* the register request, to restore it */
	char		 id[32];
	char		 secret[64];
	char		 http[64];	/* "127.0.0.1:3128", "" for none */
	char		 socks[64];
	int		 allow_local;
	char		*ca_bundle;
	unsigned	 ask_ms;	/* policyDecisionTimeoutMs, 0: nobody is asked */
	json_t		*masked;	/* {env key: dummy} of a masked start, or NULL */
};

#define NP_TIMEOUT_MS		2000	/* one request and its reply */
#define NP_LINE_MAX		(64 * 1024)

/* netproxy_line.c: the control connection */
struct np_conn {
	char		*path;		/* the socket, or a name for our own proxy */
	int		 fd;
	struct buf	 in;
	long long	 next_id;
	unsigned	 retry_ms;	/* backoff before the next connect */
	pid_t		(*launch)(int);	/* our own proxy: start it on this fd */
	uint64_t	 launched_at;
	unsigned	 gen;		/* connections made */
	/* the proxy's own lines (netproxy_events.c sets it); stolen; NULL: dropped */
	void		(*on_event)(json_t *line);
};
extern struct np_conn	npc;

/* Connect (or start our own proxy); -1 with err. */
int		 np_connect(char *err, size_t errlen);
int		 np_send_line(const char *, size_t, uint64_t deadline);
/* The reply whose id is id, or NULL (timeout, EOF); events on the way are handed on. */
json_t		*np_recv_reply(long long id, uint64_t deadline);
/* A line that is not a reply is the proxy's own: hand it on.  1 if it was. */
int		 np_dispatch_event(json_t *);

/* netproxy_upstream.c: --tcp-upstream-proxy, canonical "host:port", or NULL */
#define NP_UPSTREAM_MAX		272
const char	*np_tcp_upstream(void);

/*
 * netproxy_cred.c: networkProxy.proxy's credentialMasking and
 * credentialProviders, checked as the reference decodes them.
 */
int		 netproxy_cred_check(json_t *proxy, int *masking, char *err, size_t errlen);

/* netproxy_mask.c: what a masked start registers and what its child sees */
int		 netproxy_mask_plan(json_t *params, json_t *env, json_t **brokered,
		    json_t **masked);
int		 netproxy_mask_env(json_t *masked, json_t *env);
/* Does a brokered credential go to an https:// prefix (inspection needed)? */
int		 netproxy_mask_needs_tls(json_t *brokered);

/* The proxy named its CA key (auth or register reply); NULL is fine. */
void		 np_key_seen(const char *path);
/* Someone hides it (so connect early, before any sandbox is planned). */
int		 np_key_wanted(void);

/* netproxy.c, for netproxy_events.c */
struct netproxy_reg *netproxy_find_credential(const char *id);
/* What the layer above takes: decision lines, questions (netproxy_events.c says). */
void		 netproxy_want(int decisions, int questions);
/* One request whose reply nobody waits for (req is stolen); -1 when not sent. */
int		 netproxy_send_oneway(json_t *req);



/* The register request for process/start params; 0, NETPROXY_EINVAL or -1. */
int	netproxy_build_request(const char *process_id, json_t *params, json_t **req,
	    char *err, size_t errlen);
/* The proxy refused a registration: how process/start reports it. */
int	netproxy_refusal(char *err, size_t errlen);

#endif
