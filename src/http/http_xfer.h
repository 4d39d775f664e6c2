/*
 * The transfers behind http/request: libcurl's multi interface on execd's
 * event loop, redirects handled here (the reference's rules, not curl's),
 * buffered or streamed bodies, and the asynchronous JSON-RPC answer.
 */
#ifndef EXECD_HTTP_XFER_H
#define EXECD_HTTP_XFER_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "http/http_url.h"
#include "rpc/rpc.h"

/* A validated request. */
struct http_spec {
	char		*method;
	struct http_url	 url;
	json_t		*headers;	/* {"lower-case name": ["value", ...]} in send order */
	void		*body;		/* NULL: none */
	size_t		 bodylen;
	uint64_t	 timeout_ms;	/* 0: none */
	int		 follow;	/* redirectPolicy "follow" */
	int		 stream;	/* streamResponse */
	char		*request_id;
};

/* Frees what a spec holds, and spec. */
void	http_spec_free(struct http_spec *spec);

/* Takes spec (and frees it); answers req when the response (or its headers) is in. */
void	http_xfer_start(struct rpc_req *req, struct http_spec *spec);
int	http_xfer_stream_active(const char *request_id);
/* max_message bounds a response body (http_resp.c); 0: 64 MiB */
int	http_xfer_init(size_t max_message);
void	http_xfer_shutdown(void);
/*
 * url NULL: connect directly.  cainfo: the bundle to verify HTTPS targets
 * with (an inspecting proxy's, trusting its CA); NULL: libcurl's default.
 */
int	http_xfer_set_proxy(const char *url, const char *cainfo);

#endif
