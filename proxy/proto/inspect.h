/* An inspected tunnel's state, shared by inspect.c and inspect_req.c. */
#ifndef EXECD_PROXY_INSPECT_H
#define EXECD_PROXY_INSPECT_H

#include <openssl/ssl.h>

#include "types.h"
#include "relay/relay.h"

#define INS_BUF		(32 * 1024)	/* plaintext held each way */

enum ins_phase {
	IP_REPLY,	/* the plain CONNECT or SOCKS5 reply going out */
	IP_ACCEPT,	/* TLS handshake with the client */
	IP_HEAD,	/* reading the inner request head */
	IP_CONNECT,	/* TLS handshake with the target */
	IP_FORWARD,	/* the request up, the response down */
	IP_ANSWER,	/* our own answer to the client, over TLS */
	IP_LINGER,	/* done: draining the client until it closes */
};

struct inspect {
	SSL		*cs, *us;	/* towards the client, towards the target */
	enum ins_phase	 phase;
	struct buf	 plain;		/* IP_REPLY */
	struct buf	 head;		/* the inner request head */
	struct buf	 rhead;		/* the response head */
	struct buf	 up, down;	/* plaintext on its way */
	uint32_t	 cwant, uwant;	/* what each TLS session waits for */
	uint64_t	 req_left;	/* body bytes the client may still send */
	int		 req_chunked;	/* ... until it stops */
	int		 resp_started;	/* the final response head went down */
	int		 resp_bounded;
	uint64_t	 resp_left;
	int		 no_body;	/* HEAD, 204, 304 */
	int		 u_eof;
	struct inner_req req;
	struct verdict	 verdict;
	const char	*result;	/* for the tunnel's close record */
};

/* inspect_req.c */
void	 inspect_wipe(struct buf *);
int	 inspect_decide(struct conn *);
int	 inspect_answer(struct conn *, int status, const char *phrase, const char *extra,
	    const char *body);
int	 inspect_response_head(struct conn *);

#endif
