/* Internal to the dispatcher: the output side (rpc_send.c) that rpc.c builds on. */
#ifndef EXECD_RPC_INT_H
#define EXECD_RPC_INT_H

#include <stddef.h>

#include <jansson.h>

struct rpc_transport;

/* Attach t (NULL: detach); a new connection generation begins. */
void		rpc_out_set(struct rpc_transport *t);
/* The generation: a request of an older one is not answered. */
unsigned	rpc_out_gen(void);

/* Send msg (stolen) on the attached transport, if any. */
void	rpc_send(json_t *msg);
void	rpc_send_error(json_t *id, int code, const char *msg);
/* The same with error.data (borrowed; NULL: none). */
void	rpc_send_error_data(json_t *id, int code, const char *msg, json_t *data);
/* rpc_send_error() for a text that may hold NUL bytes (a method name, a duplicate key) */
void	rpc_send_error_text(json_t *id, int code, const char *head, const void *text,
	    size_t len, const char *tail);

/* rpc_call.c: a response from the client (0: it was ours), the connection's end */
int	rpc_call_answer(json_t *id, json_t *response);
void	rpc_call_fail_all(void);

#endif
