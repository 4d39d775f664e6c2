/* http/request: HTTP(S) requests made for the client, on libcurl's multi interface. */
#ifndef EXECD_HTTP_REQ_H
#define EXECD_HTTP_REQ_H

#include "rpc/rpc.h"

extern const struct rpc_method http_methods[];

/*
 * After ev_init(); fatal if libcurl cannot be set up.  max_message: the
 * largest answer the transport carries (0: 64 MiB), which bounds a body.
 */
void	http_req_init(size_t max_message);
/* Cancels every transfer; before exit. */
void	http_req_shutdown(void);
/* Later requests go through this proxy (libcurl proxy URL); NULL: direct. */
int	http_req_set_proxy(const char *url);

#endif
