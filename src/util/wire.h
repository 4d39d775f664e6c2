/*
 * The spawn helper's message format: integers and length-prefixed byte
 * strings (paths need not be UTF-8, so no JSON), and descriptors passed
 * alongside with SCM_RIGHTS, named in the message by their index.  Each
 * side encodes its own part: spawn/spawner.c the request, sandbox/
 * sandbox_wire.c the plan in it; this knows neither.
 */
#ifndef EXECD_UTIL_WIRE_H
#define EXECD_UTIL_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define WIRE_MAX_FDS	8
#define WIRE_NONE	UINT32_MAX	/* a NULL string, an absent descriptor */

struct wire_out {
	struct buf	b;
	int		fds[WIRE_MAX_FDS];
	size_t		nfds;
	int		failed;		/* out of memory or of descriptor slots */
};

struct wire_in {
	const uint8_t	*p, *end;
	const int	*fds;
	size_t		 nfds;
	int		 bad;		/* truncated or inconsistent: reject the message */
};

void		 wire_u32(struct wire_out *w, uint32_t v);
void		 wire_u64(struct wire_out *w, uint64_t v);
void		 wire_str(struct wire_out *w, const char *s);
void		 wire_bytes(struct wire_out *w, const void *p, size_t n);
void		 wire_fd(struct wire_out *w, int fd);

uint32_t	 wire_get_u32(struct wire_in *r);
uint64_t	 wire_get_u64(struct wire_in *r);
const char	*wire_get_str(struct wire_in *r);
const void	*wire_get_bytes(struct wire_in *r, size_t *n);
int		 wire_get_fd(struct wire_in *r);

#endif
