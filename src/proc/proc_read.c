/* process/read: selecting retained chunks and long-polling for new ones. */
#include "config.h"

#include <stdlib.h>

#include "log.h"
#include "proc/proc_rpc.h"
#include "proc/proc_table.h"

/* A process/read parked until p has what it asks for, or its wait is over. */
struct proc_waiter {
	struct rpc_req		*req;
	struct proc		*p;
	uint64_t		 after;
	uint64_t		 max_bytes;
	int			 has_max;
	struct ev_timer		 timer;
	struct proc_waiter	*next;
};

/* The reference's selection rules, see protocol.md §6.3. */
static json_t *
proc_read_result(struct proc *p, uint64_t after, int has_max, uint64_t max_bytes,
    size_t *nchunks)
{
	json_t			*chunks, *j;
	const struct out_chunk	*c;
	uint64_t		 total = 0, next;
	size_t			 i;

	chunks = json_array();
	next = p->next_seq;
	*nchunks = 0;
	for (i = out_ring_find(&p->ring, after); i < p->ring.n; i++) {
		c = out_ring_at(&p->ring, i);
		if (has_max && *nchunks > 0 && total + c->len > max_bytes)
			break;
		if ((j = out_chunk_json(c, NULL)) == NULL)
			break;
		json_array_append_new(chunks, j);
		(*nchunks)++;
		total += c->len;
		if (has_max)
			next = c->seq + 1;
		if (has_max && total >= max_bytes)
			break;
	}
	return json_pack("{s:o,s:I,s:b,s:o,s:b,s:n,s:b}", "chunks", chunks,
	    "nextSeq", (json_int_t)next, "exited", p->exited,
	    "exitCode", p->exited ? json_integer(p->exit_code) : json_null(),
	    "closed", p->closed, "failure", "sandboxDenied", p->sandbox_denied);
}

/* 1 when a read must be answered now rather than wait. */
static int
proc_read_ready(struct proc *p, uint64_t after, size_t nchunks)
{
	return nchunks > 0 || p->closed || (p->exited && after < p->next_seq - 1);
}

static void
proc_waiter_unlink(struct proc_waiter *w)
{
	struct proc_waiter	**pp;

	for (pp = (struct proc_waiter **)&w->p->face; *pp != NULL; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			return;
		}
}

static void
proc_waiter_answer(struct proc_waiter *w, json_t *result)
{
	proc_waiter_unlink(w);
	ev_timer_stop(&w->timer);
	rpc_reply(w->req, result);
	free(w);
}

static void
proc_waiter_timeout(struct ev_timer *t, void *arg)
{
	struct proc_waiter	*w = arg;
	size_t			 n;

	proc_waiter_answer(w, proc_read_result(w->p, w->after, w->has_max, w->max_bytes, &n));
}

/* Something happened to p: answer the reads it satisfies. */
void
proc_wake(struct proc *p)
{
	struct proc_waiter	*w, *next;
	json_t			*r;
	size_t			 n;

	for (w = p->face; w != NULL; w = next) {
		next = w->next;
		if (!rpc_req_alive(w->req)) {
			proc_waiter_answer(w, json_null());
			continue;
		}
		r = proc_read_result(p, w->after, w->has_max, w->max_bytes, &n);
		if (proc_read_ready(p, w->after, n))
			proc_waiter_answer(w, r);
		else
			json_decref(r);
	}
}

void
proc_read(struct rpc_req *req, struct proc *p, uint64_t after, int has_max,
    uint64_t max_bytes, uint64_t wait_ms)
{
	struct proc_waiter	*w;
	json_t			*r;
	size_t			 n;

	r = proc_read_result(p, after, has_max, max_bytes, &n);
	if (r == NULL) {
		rpc_fail(req, RPC_INTERNAL_ERROR, "out of memory");
		return;
	}
	if (wait_ms == 0 || proc_read_ready(p, after, n)) {
		rpc_reply(req, r);
		return;
	}
	json_decref(r);
	if ((w = calloc(1, sizeof(*w))) == NULL) {
		rpc_fail(req, RPC_INTERNAL_ERROR, "out of memory");
		return;
	}
	w->req = req;
	w->p = p;
	w->after = after;
	w->has_max = has_max;
	w->max_bytes = max_bytes;
	ev_timer_init(&w->timer, proc_waiter_timeout, w);
	ev_timer_start(&w->timer, wait_ms > 24ULL * 3600 * 1000 ? 24ULL * 3600 * 1000 : wait_ms);
	w->next = p->face;
	p->face = w;
}

void
proc_read_discard(struct proc *p)
{
	struct proc_waiter	*w;

	while ((w = p->face) != NULL) {
		p->face = w->next;
		ev_timer_stop(&w->timer);
		rpc_fail(w->req, RPC_INVALID_REQUEST, "unknown process id %s", p->id);
		free(w);
	}
}
