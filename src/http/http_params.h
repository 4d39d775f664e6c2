/*
 * http/request's params, decoded key by key in the order the client sent
 * them, so the first offending field is the one reported, worded as the
 * reference's decoder does (it describes every JSON number as "number").
 */
#ifndef EXECD_HTTP_PARAMS_H
#define EXECD_HTTP_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "jsonx.h"

struct http_params {
	const char	*method;
	size_t		 method_len;	/* a NUL in it makes it invalid */
	const char	*url;
	const char	*request_id;
	json_t		*headers;	/* borrowed array */
	void		*body;		/* decoded, malloc'd */
	size_t		 bodylen;
	int		 has_timeout;
	uint64_t	 timeout_ms;
	int		 follow;
	int		 stream;
};

/* 0, or -1 with e set (answer -32602 with it); p->body is the caller's to free. */
int	http_params_decode(json_t *params, struct http_params *p, struct jx_err *e);

#endif
