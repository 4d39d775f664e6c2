/* Internal to the dispatcher: what rpc.c and rpc_reply.c share. */
#ifndef EXECD_RPC_INT_H
#define EXECD_RPC_INT_H

#include <stddef.h>

#include <jansson.h>

struct rpc_method;

struct rpc_req {
	json_t		*id;
	const struct rpc_method *m;
	unsigned	 gen;		/* connection generation it came on */
	struct rpc_req	*next;		/* queue link */
	json_t		*params;
};

/* A request is finished: free it and let the next one in. */
void	rpc_req_done(struct rpc_req *req);
/* Send msg (stolen) on the attached transport, if any. */
void	rpc_send(json_t *msg);
void	rpc_send_error(json_t *id, int code, const char *msg);
/* rpc_send_error() for a text that may hold NUL bytes (a method name, a duplicate key) */
void	rpc_send_error_text(json_t *id, int code, const char *head, const void *text,
	    size_t len, const char *tail);

#endif
