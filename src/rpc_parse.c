#include "config.h"

#include <stdio.h>
#include <string.h>

#include "rpc_parse.h"

/* jansson's syntax errors, worded as serde_json words them. */
static void
rpc_syntax_error(const json_error_t *je, char *err, size_t errlen)
{
	const char	*what;

	switch (json_error_code(je)) {
	case json_error_premature_end_of_input:
		what = "EOF while parsing a value";
		break;
	case json_error_end_of_input_expected:
		what = "trailing characters";
		break;
	case json_error_invalid_utf8:
		what = "invalid unicode code point";
		break;
	case json_error_duplicate_key:
		what = "duplicate field";
		break;
	case json_error_numeric_overflow:
		what = "number out of range";
		break;
	case json_error_null_character:
		what = "control character (\\u0000-\\u001F) found while parsing a string";
		break;
	default:
		what = strstr(je->text, "near '") != NULL &&
		    (je->text[0] == '\'' || strncmp(je->text, "invalid token", 13) == 0) ?
		    "expected value" : "expected value";
		break;
	}
	snprintf(err, errlen, "%s at line %d column %d", what,
	    je->line > 0 ? je->line : 1, je->column > 0 ? je->column : 1);
}

static int
rpc_valid_id(json_t *id)
{
	return json_is_integer(id) || json_is_string(id);
}

enum rpc_msg_kind
rpc_parse(const char *data, size_t len, struct rpc_msg *m, char *err, size_t errlen)
{
	json_error_t	 je;
	json_t		*root, *method, *trace;

	memset(m, 0, sizeof(*m));
	root = json_loadb(data, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
	if (root == NULL) {
		rpc_syntax_error(&je, err, errlen);
		return RPC_MSG_MALFORMED;
	}
	m->root = root;
	if (!json_is_object(root)) {
		snprintf(err, errlen, "expected a JSON-RPC object");
		return RPC_MSG_MALFORMED;
	}
	m->id = json_object_get(root, "id");
	method = json_object_get(root, "method");
	m->params = json_object_get(root, "params");
	if (method != NULL) {
		if (!json_is_string(method)) {
			snprintf(err, errlen,
			    "data did not match any variant of untagged enum JSONRPCMessage");
			return RPC_MSG_MALFORMED;
		}
		m->method = json_string_value(method);
		if (m->id == NULL)
			return RPC_MSG_NOTIFICATION;
		if (!rpc_valid_id(m->id)) {
			snprintf(err, errlen,
			    "data did not match any variant of untagged enum JSONRPCMessage");
			return RPC_MSG_MALFORMED;
		}
		trace = json_object_get(root, "trace");
		if (trace != NULL && !json_is_null(trace) && !json_is_object(trace)) {
			snprintf(err, errlen,
			    "data did not match any variant of untagged enum JSONRPCMessage");
			return RPC_MSG_MALFORMED;
		}
		return RPC_MSG_REQUEST;
	}
	if (m->id != NULL && rpc_valid_id(m->id) &&
	    (json_object_get(root, "result") != NULL || json_object_get(root, "error") != NULL))
		return RPC_MSG_RESPONSE;
	snprintf(err, errlen, "data did not match any variant of untagged enum JSONRPCMessage");
	return RPC_MSG_MALFORMED;
}

void
rpc_msg_clear(struct rpc_msg *m)
{
	json_decref(m->root);
	memset(m, 0, sizeof(*m));
}
