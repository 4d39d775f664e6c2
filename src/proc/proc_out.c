#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "jsonx.h"
#include "proc/proc_out.h"

const char *
out_stream_name(enum proc_stream s)
{
	switch (s) {
	case STREAM_STDOUT:
		return "stdout";
	case STREAM_STDERR:
		return "stderr";
	default:
		return "pty";
	}
}

static void
out_ring_evict(struct out_ring *r)
{
	struct out_chunk *c = &r->c[r->head];

	r->bytes -= c->len;
	r->dropped_bytes += c->len;
	r->dropped_chunks++;
	free(c->data);
	r->head = (r->head + 1) % r->cap;
	r->n--;
}

static int
out_ring_grow(struct out_ring *r)
{
	struct out_chunk	*n;
	size_t			 ncap = r->cap ? r->cap * 2 : 16, i;

	if ((n = calloc(ncap, sizeof(*n))) == NULL)
		return -1;
	for (i = 0; i < r->n; i++)
		n[i] = r->c[(r->head + i) % r->cap];
	free(r->c);
	r->c = n;
	r->cap = ncap;
	r->head = 0;
	return 0;
}

int
out_ring_push(struct out_ring *r, uint64_t seq, enum proc_stream s, const void *data,
    size_t len, size_t max_bytes, size_t max_chunks)
{
	struct out_chunk	*c;
	uint8_t			*copy;

	if ((copy = malloc(len)) == NULL)
		return -1;
	memcpy(copy, data, len);
	while (r->n > 0 && (r->bytes + len > max_bytes || r->n >= max_chunks))
		out_ring_evict(r);
	if (r->n == r->cap && out_ring_grow(r) == -1) {
		free(copy);
		return -1;
	}
	c = &r->c[(r->head + r->n) % r->cap];
	c->seq = seq;
	c->stream = s;
	c->len = len;
	c->data = copy;
	r->n++;
	r->bytes += len;
	return 0;
}

const struct out_chunk *
out_ring_at(const struct out_ring *r, size_t i)
{
	return &r->c[(r->head + i) % r->cap];
}

size_t
out_ring_find(const struct out_ring *r, uint64_t after)
{
	size_t	lo = 0, hi = r->n, mid;

	/* seqs grow along the ring: binary search */
	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (out_ring_at(r, mid)->seq <= after)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void
out_ring_free(struct out_ring *r)
{
	while (r->n > 0)
		out_ring_evict(r);
	free(r->c);
	memset(r, 0, sizeof(*r));
}

/*
 * The process id as a JSON string (escaped once by jansson, the way the
 * rest of the message would have been): one process streams many chunks,
 * so the last one is kept.
 */
static const char *
out_id_json(const char *pid, size_t *len)
{
	static char	*raw, *enc;
	static size_t	 enclen;
	json_t		*j;
	char		*e;

	if (raw != NULL && strcmp(raw, pid) == 0) {
		*len = enclen;
		return enc;
	}
	if ((j = jx_id_json(pid)) == NULL)
		return NULL;
	e = jx_dump(j, len);
	json_decref(j);
	if (e == NULL)
		return NULL;
	free(raw);
	free(enc);
	if ((raw = strdup(pid)) == NULL) {
		free(e);
		enc = NULL;
		return NULL;
	}
	enc = e;
	enclen = *len;
	return enc;
}

/* The same bytes json_pack() and jx_dump() made of it, without them: the hot path. */
int
out_note_head(char *buf, size_t size, const char *pid, uint64_t seq, enum proc_stream s)
{
	const char	*id;
	size_t		 idlen;
	int		 n;

	if ((id = out_id_json(pid, &idlen)) == NULL || idlen > size)
		return -1;
	n = snprintf(buf, size, "{\"method\":\"process/output\",\"params\":{\"processId\":%s,"
	    "\"seq\":%llu,\"stream\":\"%s\",\"chunk\":\"", id, (unsigned long long)seq,
	    out_stream_name(s));
	return n < 0 || (size_t)n >= size ? -1 : n;
}

json_t *
out_chunk_json(const struct out_chunk *c, const char *pid)
{
	char	*b;
	json_t	*j;

	if ((b = b64_encode(c->data, c->len, NULL)) == NULL)
		return NULL;
	if (pid != NULL)
		j = json_pack("{s:o,s:I,s:s,s:s}", "processId", jx_id_json(pid), "seq", (json_int_t)c->seq,
		    "stream", out_stream_name(c->stream), "chunk", b);
	else
		j = json_pack("{s:I,s:s,s:s}", "seq", (json_int_t)c->seq,
		    "stream", out_stream_name(c->stream), "chunk", b);
	free(b);
	return j;
}
