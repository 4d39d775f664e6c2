/* Shared by netproxy.c (the control connection) and netproxy_env.c. */
#ifndef EXECD_NETPROXY_INT_H
#define EXECD_NETPROXY_INT_H

#include <sys/queue.h>

#include <jansson.h>

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
};

/* netproxy.c, for netproxy_events.c */
struct netproxy_reg *netproxy_find_credential(const char *id);
/* The control connection's generation: an answer is for the one it came on. */
unsigned	 netproxy_generation(void);
/* One request whose reply nobody waits for (req is stolen); -1 when not sent. */
int		 netproxy_send_oneway(json_t *req);

/* netproxy_events.c: a line from the proxy that is not a reply (stolen) */
void		 netproxy_event(json_t *line);
/* Drop what req asks the proxy to report when nobody above would take it. */
void		 netproxy_events_wanted(json_t *req);


/* The register request for process/start params; 0, NETPROXY_EINVAL or -1. */
int	netproxy_build_request(const char *process_id, json_t *params, json_t **req,
	    char *err, size_t errlen);
/* The proxy refused a registration: how process/start reports it. */
int	netproxy_refusal(char *err, size_t errlen);

#endif
