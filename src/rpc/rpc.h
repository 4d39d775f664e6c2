/*
 * JSON-RPC dispatch for one connection: the envelope, lifecycle gating,
 * request ordering and concurrency, replies and notifications.
 * Method handlers get a request and either answer at once or keep the
 * request and answer later (long-polls, http/request); every request gets
 * exactly one answer.  Answers to a request whose connection is gone are
 * dropped.
 */
#ifndef EXECD_RPC_H
#define EXECD_RPC_H

#include <stddef.h>

#include <jansson.h>

#include "jsonx.h"

#define RPC_INVALID_REQUEST	-32600
#define RPC_METHOD_NOT_FOUND	-32601
#define RPC_INVALID_PARAMS	-32602
#define RPC_INTERNAL_ERROR	-32603
#define RPC_NOT_FOUND		-32004
#define RPC_SESSION_ATTACHED	-32010

/* A transport above this many queued bytes is congested; below LOW it drained. */
#define RPC_HIGH_WATER		(4u * 1024 * 1024)
#define RPC_LOW_WATER		(1u * 1024 * 1024)

struct rpc_req;

typedef void	rpc_handler(struct rpc_req *req, json_t *params);

struct rpc_method {
	const char	*name;
	const char	*group;		/* in gating messages: "exec", "filesystem", ... */
	rpc_handler	*fn;
	int		 flags;
	/*
	 * A params member whose string, when long, the handler reads with
	 * rpc_req_string() rather than from the tree (NULL: none).
	 */
	const char	*blob;
};

/*
 * The handler decodes its params first and then calls rpc_admit(), as the
 * reference answers bad params before lifecycle gating.  Without the flag
 * the dispatcher gates before calling the handler.
 */
#define RPC_SELF_GATED	0x1

/* What a transport gives the dispatcher. */
struct rpc_transport {
	void		 *ctx;
	/* queue one serialised message; -1 if the connection is unusable */
	int		(*send)(void *ctx, const char *msg, size_t len);
	/*
	 * Optional (NULL: send only): room for one message of at most n bytes
	 * at the end of the queue, written in place, then queued with commit
	 * (its length); nothing else is sent between the two.  A message of
	 * megabytes (a bodyDelta) is then not built and copied again.
	 */
	char		*(*reserve)(void *ctx, size_t n);
	int		(*commit)(void *ctx, size_t n);
	/* bytes queued and not yet written */
	size_t		(*pending)(void *ctx);
	/* the dispatcher can take input again after rpc_input() said no */
	void		(*resume_input)(void *ctx);
	/* flush what is queued, then close */
	void		(*close)(void *ctx);
	/* the socket to hand to another instance (session resume), -1 if none */
	int		(*takeover_fd)(void *ctx);
	/*
	 * Optional: write what is queued now (before a hand-over: the 101 that
	 * waits to leave with the first answer); 0 when all of it went.
	 */
	int		(*flush)(void *ctx);
	/* drop the connection at once, silently: another instance took it */
	void		(*abandon)(void *ctx);
	/* "exec-server stdio", "exec-server websocket 127.0.0.1:5555" */
	char		  name[128];
	/* "" or "websocket ": what the reference says it failed to parse */
	const char	 *framing;
};

/*
 * What the connection lifecycle (initialize, then initialized) gives the
 * dispatcher, so that it can gate requests without knowing the session.
 */
struct rpc_gate {
	/* NULL when m may run now, else the error message */
	const char	*(*gate)(const struct rpc_method *m);
	/* a new connection is attached: it must initialize again */
	void		 (*connection_reset)(void);
	/* the peer sent "initialized": 0, or -1 when that breaks the protocol */
	int		 (*initialized)(void);
};

/* concurrency: requests of one connection that may be in flight at once */
void	rpc_init(unsigned concurrency);
/* Make a method table reachable; the table ends with a NULL name. */
void	rpc_register(const struct rpc_method *table);
void	rpc_set_gate(const struct rpc_gate *gate);
void	rpc_attach(struct rpc_transport *t);
/* One whole message from the peer. Returns 0 when more input may follow now, 1 to pause. */
int	rpc_input(const char *msg, size_t len);
/* The peer is gone (EOF, close, error). */
void	rpc_detach(void);
int	rpc_attached(void);
struct rpc_transport *rpc_transport(void);
/* Transport's queue went below its low-water mark. */
void	rpc_output_drained(void);
int	rpc_congested(void);
void	rpc_on_drain(void (*cb)(void));
/* Called when the connection goes away; modules release per-connection state. */
void	rpc_on_detach(void (*cb)(void));

/* 1: go on; 0: the request was answered with the gating error. */
int	rpc_admit(struct rpc_req *req);
void	rpc_reply(struct rpc_req *req, json_t *result);			/* steals result */
/*
 * The same with the result already serialised (a large fs/readFile: its
 * base64 needs no escaping and is not copied into jansson): the result is
 * the len bytes at buf + room, and buf has one byte more after them.  The
 * envelope is written in the room when it fits (RPC_REPLY_ROOM does for an
 * id of up to 48 bytes), else the whole is copied.  Takes buf.
 */
#define RPC_HAVE_REPLY_JSON 2
#define RPC_REPLY_ROOM	64
void	rpc_reply_json(struct rpc_req *req, char *buf, size_t room, size_t len);
void	rpc_fail(struct rpc_req *req, int code, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
/*
 * The same with error.data {"kind": kind} (NULL: no data), as the reference
 * types a failed process/start (ProcessStartErrorData: spawnNotFound, ...).
 */
void	rpc_fail_kind(struct rpc_req *req, int code, const char *kind, const char *fmt, ...)
	    __attribute__((format(printf, 4, 5)));
void	rpc_fail_params(struct rpc_req *req, const struct jx_err *e);	/* -32602 */
/* An OS error, coded and worded as the reference does (ENOENT -> -32004 ...). */
void	rpc_fail_errno(struct rpc_req *req, int errnum);
int	rpc_errno_code(int errnum);
int	rpc_req_alive(const struct rpc_req *req);
json_t	*rpc_req_id(const struct rpc_req *req);	/* borrowed */
/*
 * The text of v, a string in req's params.  The method's blob member, when
 * long, stands in the tree as "" and its text is the message's own: valid
 * until the handler returns.  NULL when out of memory.
 */
const char *rpc_req_string(const struct rpc_req *req, json_t *v, size_t *len);
void	rpc_notify(const char *method, json_t *params);		/* steals params */
/*
 * A request to the client (steals params): its id, or -1 when no client
 * is attached.  cb gets the response's result, or NULL for an error
 * response or when the connection goes first; never after rpc_call_cancel().
 */
typedef void	rpc_call_cb(void *arg, json_t *result);
long long rpc_call(const char *method, json_t *params, rpc_call_cb *cb, void *arg);
void	rpc_call_cancel(long long id);
/* The same, with params[key] set to base64(data): fast for large data. */
void	rpc_notify_b64(const char *method, json_t *params, const char *key,
	    const void *data, size_t len);
/*
 * A message the caller serialised up to a string's opening quote (head),
 * then base64(data), then tail: the hot path of process output, no
 * jansson at all.
 */
void	rpc_notify_raw_b64(const char *head, size_t hlen, const void *data, size_t len,
	    const char *tail, size_t tlen);

#endif
