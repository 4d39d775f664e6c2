#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"

void
buf_compact(struct buf *b)
{
	if (b->off == 0 || b->len - b->off > b->off)
		return;
	memmove(b->data, b->data + b->off, b->len - b->off);
	b->len -= b->off;
	b->off = 0;
}

int
buf_reserve(struct buf *b, size_t more)
{
	size_t	 ncap;
	uint8_t	*n;

	if (b->cap - b->len >= more)
		return 0;
	/*
	 * Reclaim the consumed front before growing, when that moves no more
	 * than it frees: a queue of megabytes written out a pipe's worth at a
	 * time would otherwise move all it holds at every append.
	 */
	buf_compact(b);
	if (b->cap - b->len >= more)
		return 0;
	ncap = b->cap ? b->cap : 4096;
	while (ncap - b->len < more) {
		if (ncap > SIZE_MAX / 2)
			return -1;
		ncap *= 2;
	}
	if ((n = realloc(b->data, ncap)) == NULL)
		return -1;
	b->data = n;
	b->cap = ncap;
	return 0;
}

int
buf_append(struct buf *b, const void *p, size_t n)
{
	if (n == 0)
		return 0;
	if (buf_reserve(b, n) == -1)
		return -1;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

void
buf_consume(struct buf *b, size_t n)
{
	b->off += n;
	if (b->off >= b->len)
		b->off = b->len = 0;
}

void
buf_reset(struct buf *b)
{
	b->off = b->len = 0;
}

void
buf_free(struct buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}
