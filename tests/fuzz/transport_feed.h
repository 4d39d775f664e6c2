/* Feeding a transport of execd through a socket pair, in pieces (transport_feed.c). */
#ifndef EXECD_TRANSPORT_FEED_H
#define EXECD_TRANSPORT_FEED_H

#include <stddef.h>
#include <stdint.h>

#include "transport/conn.h"

/* The transport under test: takes over c, -1 if it refused. */
typedef int	feed_start_fn(struct conn *c);

/*
 * Start the transport on one end of a socket pair with the first pre_len
 * bytes already read (as the sniffer leaves them), write the rest to the
 * other end in pieces of chunk bytes, then EOF; run the loop until the
 * transport has closed the connection.  Aborts if it never does.
 */
void	feed_transport(feed_start_fn *start, const uint8_t *data, size_t size,
	    size_t pre_len, size_t chunk);

#endif
