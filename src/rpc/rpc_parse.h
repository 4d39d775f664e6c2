/*
 * The JSON-RPC envelope: classifying one message from the peer as the
 * reference (serde_json) does, with its error texts and positions.
 */
#ifndef EXECD_RPC_PARSE_H
#define EXECD_RPC_PARSE_H

#include <stddef.h>

#include <jansson.h>

#include "buf.h"

enum rpc_msg_kind {
	RPC_MSG_MALFORMED,	/* err says why; answered with id -1 */
	RPC_MSG_REQUEST,
	RPC_MSG_NOTIFICATION,
	RPC_MSG_RESPONSE,	/* a response or error object from the client */
	/*
	 * Only Unicode whitespace: the reference's stdio reader skips the
	 * line; elsewhere it is RPC_MSG_MALFORMED (err is set).
	 */
	RPC_MSG_BLANK,
	/*
	 * Not UTF-8: the reference's stdio reader fails and the connection
	 * ends; elsewhere it is RPC_MSG_MALFORMED (err is set).
	 */
	RPC_MSG_NOT_UTF8,
};

struct rpc_msg {
	json_t		*root;
	json_t		*id;		/* borrowed from root */
	const char	*method;	/* may hold NUL bytes: see method_len */
	size_t		 method_len;
	json_t		*params;	/* borrowed, NULL when absent */
	struct buf	 err;		/* serde's words; may hold NUL bytes */
	/*
	 * A long string member of params kept out of the tree: the empty
	 * string standing in its place (borrowed, NULL: none) and its text,
	 * which points into the message.
	 */
	json_t		*blob;
	const char	*blob_text;
	size_t		 blob_len;
};

/* Whether a request to method takes its params member key unparsed. */
typedef int	rpc_blob_fn(const char *method, size_t mlen, const char *key, size_t klen);

/*
 * Integers above INT64_MAX that fit a u64 are read as INT64_MAX ("very
 * large"); larger or smaller integers and reals beyond a double's range are
 * read as the real +-1e308.  The id is judged on the number as written.
 * A string member of params of SCAN_BLOB_MIN bytes or more, written
 * without escapes, for which blob() says yes, is left out of the tree
 * (see m->blob): jansson would copy and check it byte by byte again.
 */
enum rpc_msg_kind rpc_parse(const char *data, size_t len, struct rpc_msg *m,
	    rpc_blob_fn *blob);
void	rpc_msg_clear(struct rpc_msg *m);

#endif
