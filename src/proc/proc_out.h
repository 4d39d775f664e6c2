/* A process's output: the retained chunks and the seq counter they share with events. */
#ifndef EXECD_PROC_OUT_H
#define EXECD_PROC_OUT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

enum proc_stream {
	STREAM_STDOUT,
	STREAM_STDERR,
	STREAM_PTY,
};

struct out_chunk {
	uint64_t	 seq;
	enum proc_stream stream;
	size_t		 len;
	uint8_t		*data;
};

struct out_ring {
	struct out_chunk *c;
	size_t		  cap, head, n;	/* circular */
	size_t		  bytes;	/* retained */
	uint64_t	  dropped_bytes;	/* evicted over the retention bound */
	uint64_t	  dropped_chunks;
};

const char	*out_stream_name(enum proc_stream s);
/* Keeps the data (copied); evicts from the front past the bounds. */
int		 out_ring_push(struct out_ring *r, uint64_t seq, enum proc_stream s,
		    const void *data, size_t len, size_t max_bytes, size_t max_chunks);
/* Index of the first chunk with seq > after, r->n if none. */
size_t		 out_ring_find(const struct out_ring *r, uint64_t after);
const struct out_chunk *out_ring_at(const struct out_ring *r, size_t i);
void		 out_ring_free(struct out_ring *r);
/* {"seq","stream","chunk"} (+ processId when pid is not NULL) */
json_t		*out_chunk_json(const struct out_chunk *c, const char *pid);
/*
 * A process/output notification serialised up to its chunk's opening
 * quote, into buf: its length, or -1 when it does not fit (or out of memory).
 */
#define OUT_NOTE_TAIL	"\"}}"
int		 out_note_head(char *buf, size_t size, const char *pid, uint64_t seq,
		    enum proc_stream s);

#endif
