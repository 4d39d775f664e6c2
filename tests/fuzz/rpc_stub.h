/* The dispatcher stand-in of the transport fuzz targets (rpc_stub.c). */
#ifndef EXECD_RPC_STUB_H
#define EXECD_RPC_STUB_H

#include <stddef.h>

#include "rpc/rpc.h"

#define STUB_REPLY	0x1	/* answer every message */
#define STUB_PAUSE	0x2	/* every third message: pause, resume on the next turn */
#define STUB_CLOSE	0x4	/* the fourth message: close the connection */

struct rpc_stub {
	struct rpc_transport	*t;
	unsigned		 knobs;
	int			 attached;
	int			 check_lines;
	size_t			 max_message;	/* what the transport was given */
	unsigned		 detaches, drained, send_failed;
	size_t			 messages, bytes;
	unsigned		 sum;
};

extern struct rpc_stub	stub;

void	rpc_stub_reset(unsigned knobs);

#endif
