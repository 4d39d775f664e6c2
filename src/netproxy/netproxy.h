/*
 * execd's side of execd-proxy: every process is registered on the proxy's
 * control socket with its tags and policy, and its environment is pointed
 * at the proxy with credentials of its own.  See execd-proxy(8).
 */
#ifndef EXECD_NETPROXY_H
#define EXECD_NETPROXY_H

#include <stddef.h>

#include <jansson.h>

#define NETPROXY_EINVAL	-2	/* bad networkProxy params: answer -32602 with err */

#include <sys/types.h>

struct netproxy_reg;
struct netproxy_ask;

/* After ev_init(); path NULL leaves the proxy unused.  Connects lazily. */
int	netproxy_init(const char *control_path);
/*
 * Instead of a sidecar: an execd-proxy of our own, started by launch()
 * when the first managed process needs it, on a socketpair (fd is the
 * proxy's end: its standard input).  It ends when we do.
 */
int	netproxy_init_embedded(pid_t (*launch)(int fd));
int	netproxy_enabled(void);		/* a sidecar or our own */
/*
 * --tcp-upstream-proxy HOST:PORT: every registration sends its allowed
 * SOCKS5 TCP flows to this HTTP CONNECT proxy.  -1 with err if hp is not
 * HOST:PORT.
 */
int	netproxy_set_tcp_upstream(const char *hp, char *err, size_t errlen);
int	netproxy_embedded(void);
void	netproxy_shutdown(void);

/*
 * What the proxy reports about managed processes (the layer above turns
 * them into JSON-RPC).  decision: the params of one network/policyDecision
 * without processId (stolen).  ask: the proxy waits for a decision about
 * request ({protocol, host, port}, stolen); answer with netproxy_decide()
 * exactly once, within timeout_ms.
 */
struct netproxy_events {
	void	(*decision)(const char *process_id, json_t *params);
	void	(*ask)(struct netproxy_ask *, const char *process_id, json_t *request,
		    unsigned timeout_ms);
};
void	netproxy_set_events(const struct netproxy_events *);
/*
 * hide(path): a file the proxy names as its CA's private key (it gives
 * processes a bundle trusting that CA), to be kept out of every sandbox's
 * sight.  Called once per new path, before the process it came for starts.
 */
void	netproxy_set_key_hider(void (*hide)(const char *path));
/* Before a sandbox is planned: a sidecar's CA key known (and hidden). */
void	netproxy_before_sandbox(void);
/* decision "allow", "deny" or "ask"; reason may be NULL.  Frees q. */
void	netproxy_decide(struct netproxy_ask *q, const char *decision, const char *reason);

/*
 * Only check the networkProxy field of process/start params: 0, or
 * NETPROXY_EINVAL with err.  launch 0: what the reference checks while
 * decoding them; 1: also what it checks once the sandbox has been looked at
 * (an enabled proxy; transparent TCP needs SOCKS5).
 */
int	netproxy_check_params(json_t *start_params, int launch, char *err, size_t errlen);
/*
 * process/start's networkProxy decoded once, into execd-proxy's register
 * request for process_id (*req, to netproxy_register_req): 0, -1 when out
 * of memory, or NETPROXY_EINVAL with err and *late 0 when the reference
 * refuses it while decoding, 1 when once the sandbox has been looked at.
 */
int	netproxy_start_request(const char *process_id, json_t *start_params, json_t **req,
	    int *late, char *err, size_t errlen);
/* networkProxy.proxy.transparentTcp is true. */
int	netproxy_wants_transparent(json_t *start_params);
/*
 * Register one process.  start_params are the process/start params (for
 * metadata and networkProxy).  Returns 0 and *out, NETPROXY_EINVAL when
 * networkProxy is malformed (err is the reference's -32602 message), or -1
 * when the proxy cannot be reached or refuses (err says why; the process
 * must not start).  Blocks for at most about two seconds.
 */
int	netproxy_register(const char *process_id, json_t *start_params,
	    struct netproxy_reg **out, char *err, size_t errlen);
/*
 * The same for a process whose environment is env (not kept): with
 * credentialMasking, the credentials it can mask go to the proxy, and
 * netproxy_child_env() puts dummies in their place.
 */
int	netproxy_register_env(const char *process_id, json_t *start_params, json_t *env,
	    struct netproxy_reg **out, char *err, size_t errlen);
/* The same with the request netproxy_start_request() built (not kept). */
int	netproxy_register_req(json_t *req, json_t *start_params, json_t *env,
	    struct netproxy_reg **out, char *err, size_t errlen);
/* Point env (an object of strings) at the proxy; -1 on allocation failure. */
int	netproxy_child_env(const struct netproxy_reg *, json_t *env);
/* The process is gone: its credentials stop working.  NULL is fine. */
void	netproxy_unregister(struct netproxy_reg *);

#endif
