/*
 * Internals of http/request shared by http_xfer.c (transfers, redirects,
 * lifecycle), http_resp.c (what comes back: headers, bodies, answers) and
 * http_multi.c (libcurl's multi interface on the event loop).
 */
#ifndef EXECD_HTTP_XFER_INT_H
#define EXECD_HTTP_XFER_INT_H

#include <sys/queue.h>

#include <stddef.h>
#include <stdint.h>

#include "http/http_curl.h"

#include "buf.h"
#include "http/http_xfer.h"

#define DELTA_MAX	(1024 * 1024)	/* decoded bytes per bodyDelta (reference) */
#define DELTA_GATHER	DELTA_MAX	/* what a delta collects before it goes out */
#define MAX_REDIRECTS	10
#define REDIR_DISCARD	(64 * 1024)	/* redirect body read to keep the connection */

struct xfer {
	TAILQ_ENTRY(xfer)	 entry;
	struct http_spec	*spec;
	struct rpc_req		*req;		/* NULL once answered */
	CURL			*easy;		/* of the current hop */
	struct curl_slist	*slist;
	struct http_url		 hop;		/* URL of the current hop */
	char			*method;	/* of the current hop */
	json_t			*hop_headers;	/* request headers of the current hop */
	int			 hop_body;	/* the current hop sends the body */
	unsigned		 redirects;
	uint64_t		 deadline;	/* ev_now() ms; 0: none */
	/* response of the current hop */
	json_t			*resp_headers;
	long			 status;
	int			 head_done;	/* the final header block is in */
	int			 follow_next;	/* the response is a redirect to next */
	struct http_url		 next;
	size_t			 discarded;
	struct buf		 body;
	uint64_t		 seq;		/* next bodyDelta */
	int			 paused;
	int			 dead;		/* answered or cancelled: reap it */
	char			 fail[256];	/* set by a callback that aborted */
	char			 errbuf[CURL_ERROR_SIZE];
};

/* http_resp.c: libcurl's header and write callbacks, the answers */
/* The largest message the transport carries (0: 64 MiB): what a body must fit in. */
void	http_resp_init(size_t max_message);
size_t	http_resp_header(char *p, size_t size, size_t nitems, void *arg);
size_t	http_resp_body(char *p, size_t size, size_t nitems, void *arg);
void	http_resp_fail(struct xfer *x, int code, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
void	http_resp_result(struct xfer *x, const void *body, size_t len);
void	http_resp_delta(struct xfer *x, const void *p, size_t n, int done,
	    const char *error);
void	http_resp_flush(struct xfer *x);

/* http_multi.c: after every libcurl call from the loop, after() runs */
int	 http_multi_init(void (*after)(void));
int	 http_multi_ready(void);	/* loads libcurl at the first transfer */
void	 http_multi_shutdown(void);
CURL	*http_multi_easy(void);	/* a handle with default options */
void	 http_multi_release(CURL *e, int never_paused);
int	 http_multi_add(CURL *e);
/* the next finished transfer, NULL when there is none */
struct xfer *http_multi_done(CURLcode *rc);
void	 http_multi_resume(CURL *e);
/* inside libcurl: its callbacks may be running */
int	 http_multi_inside(void);

#endif
