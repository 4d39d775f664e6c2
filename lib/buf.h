/* A growable byte buffer with a read offset. */
#ifndef EXECD_BUF_H
#define EXECD_BUF_H

#include <stddef.h>
#include <stdint.h>

struct buf {
	uint8_t	*data;
	size_t	 off;		/* first unread byte */
	size_t	 len;		/* end of valid bytes */
	size_t	 cap;
};

#define buf_avail(b)	((b)->len - (b)->off)
#define buf_head(b)	((b)->data + (b)->off)

int	buf_reserve(struct buf *b, size_t more);	/* room for more bytes at the tail */
int	buf_append(struct buf *b, const void *p, size_t n);
void	buf_consume(struct buf *b, size_t n);
/*
 * Move what is left to the front when that moves no more than was consumed:
 * a queue that keeps its data near the front keeps writing into the same
 * pages, where sweeping on to its capacity would touch (and fault in)
 * fresh ones.
 */
void	buf_compact(struct buf *b);
void	buf_reset(struct buf *b);
void	buf_free(struct buf *b);

#endif
