/* The JSON-RPC envelope: classifying one message from the peer. */
#ifndef EXECD_RPC_PARSE_H
#define EXECD_RPC_PARSE_H

#include <stddef.h>

#include <jansson.h>

enum rpc_msg_kind {
	RPC_MSG_MALFORMED,
	RPC_MSG_REQUEST,
	RPC_MSG_NOTIFICATION,
	RPC_MSG_RESPONSE,	/* a response or error object from the client */
};

struct rpc_msg {
	json_t		*root;
	json_t		*id;		/* borrowed from root */
	const char	*method;
	json_t		*params;	/* borrowed, NULL when absent */
};

/* err gets the reference's (serde's) wording of what is wrong. */
enum rpc_msg_kind rpc_parse(const char *data, size_t len, struct rpc_msg *m,
	    char *err, size_t errlen);
void	rpc_msg_clear(struct rpc_msg *m);

#endif
