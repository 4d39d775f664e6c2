/*
 * process/read, write, signal and terminate: the requests on a process
 * that process/start (proc_methods.c) began, each decoded as the
 * reference's serde decodes it, map or sequence form.
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "proc/proc_rpc.h"
#include "proc/proc_table.h"
#include "rpc/rpc_serde.h"

/* The sequence (positional) forms of the params, as the reference's serde reads them. */
static const char *const read_fields[] = { "processId", "afterSeq", "maxBytes", "waitMs", NULL };
static const struct serde_struct read_struct = { "ReadParams", read_fields, 0 };
static const char *const write_fields[] = { "processId", "chunk", "writeId", NULL };
static const struct serde_struct write_struct = { "WriteParams", write_fields, 0 };
static const char *const signal_fields[] = { "processId", "signal", NULL };
static const struct serde_struct signal_struct = { "SignalParams", signal_fields, 0 };
static const char *const terminate_fields[] = { "processId", NULL };
static const struct serde_struct terminate_struct = { "TerminateParams", terminate_fields, 0 };

struct read_args {
	const char	*id;
	uint64_t	 after, max, wait;
	int		 has_max;
};

static int
read_decode(json_t *o, void *arg, struct jx_err *e)
{
	struct read_args	*a = arg;

	memset(a, 0, sizeof(*a));
	return jx_struct(o, "ReadParams", e) == -1 ||
	    jx_id(o, "processId", JX_REQ, &a->id, e) == -1 ||
	    jx_u64(o, "afterSeq", JX_OPT, &a->after, e) == -1 ||
	    (a->has_max = jx_uint(o, "maxBytes", JX_OPT, &a->max, "usize", e)) == -1 ||
	    jx_u64(o, "waitMs", JX_OPT, &a->wait, e) == -1 ? -1 : 0;
}

void
proc_m_read(struct rpc_req *req, json_t *params)
{
	struct jx_err		 e;
	struct read_args	 a;
	struct proc		*p;
	json_t			*o;
	long			 n;
	int			 rc;

	o = serde_struct_params(params, &read_struct, &n);
	rc = jx_in_order(o, read_decode, &a, &e);
	if (serde_struct_seq_end(&read_struct, n, rc, &e) == -1)
		rpc_fail_params(req, &e);
	else if (rpc_admit(req)) {
		if ((p = proc_find(a.id)) == NULL)
			rpc_fail(req, RPC_INVALID_REQUEST, "unknown process id %s", a.id);
		else
			proc_read(req, p, a.after, a.has_max == 1, a.max, a.wait);
	}
	json_decref(o);
}

static json_t *
write_status(const char *status)
{
	return json_pack("{s:s}", "status", status);
}

struct write_args {
	const char	*id, *chunk, *wid;
	size_t		 clen;
};

static int
write_decode(json_t *o, void *arg, struct jx_err *e)
{
	struct write_args	*a = arg;

	memset(a, 0, sizeof(*a));
	/* chunk is a ByteChunk: base64 decoded with the params, where it stands */
	return jx_struct(o, "WriteParams", e) == -1 ||
	    jx_id(o, "processId", JX_REQ, &a->id, e) == -1 ||
	    jx_str(o, "chunk", JX_REQ, &a->chunk, &a->clen, e) == -1 ||
	    (a->chunk != NULL && b64_valid(a->chunk, a->clen, e->msg, sizeof(e->msg)) == -1) ||
	    jx_id(o, "writeId", JX_REQ, &a->wid, e) == -1 ? -1 : 0;
}

void
proc_m_write(struct rpc_req *req, json_t *params)
{
	struct write_args	 a;
	struct jx_err	 e;
	const char	*id, *chunk, *wid;
	size_t		 clen, dlen;
	struct proc	*p;
	char		 err[128];
	void		*data;
	json_t		*o;
	long		 n;
	int		 rc;

	o = serde_struct_params(params, &write_struct, &n);
	rc = jx_in_order(o, write_decode, &a, &e);
	id = a.id, chunk = a.chunk, clen = a.clen, wid = a.wid;
	if (serde_struct_seq_end(&write_struct, n, rc, &e) == -1) {
		rpc_fail_params(req, &e);
		goto out;
	}
	if (!rpc_admit(req))
		goto out;
	if ((data = b64_decode(chunk, clen, &dlen, err, sizeof(err))) == NULL) {
		rpc_fail(req, RPC_INVALID_PARAMS, "%s", err);
		goto out;
	}
	if (*wid == '\0')
		rpc_fail(req, RPC_INVALID_PARAMS, "writeId must not be empty");
	else if ((p = proc_find(id)) == NULL)
		rpc_reply(req, write_status("unknownProcess"));
	else if (proc_seen_write_id(p, wid))
		rpc_reply(req, write_status("accepted"));
	else if (!p->writable)
		rpc_reply(req, write_status("stdinClosed"));
	else if (proc_write_stdin(p, data, dlen) == -1)
		rpc_fail(req, RPC_INTERNAL_ERROR, "failed to write to process stdin");
	else {
		proc_remember_write_id(p, wid);
		rpc_reply(req, write_status("accepted"));
	}
	free(data);
out:
	json_decref(o);
}

static int
signal_decode(json_t *o, void *arg, struct jx_err *e)
{
	static const char *const signals[] = { "interrupt", NULL };
	const char	**id = arg;
	json_t		 *sig;
	int		  which, r;

	*id = NULL;
	return jx_struct(o, "SignalParams", e) == -1 ||
	    jx_id(o, "processId", JX_REQ, id, e) == -1 ||
	    (r = jx_any(o, "signal", JX_REQ, &sig, e)) == -1 ||
	    (r == 1 && serde_unit_variant(sig, signals, &which, e) == -1) ? -1 : 0;
}

void
proc_m_signal(struct rpc_req *req, json_t *params)
{
	struct jx_err	 e;
	const char	*id;
	json_t		*o;
	int		 rc;
	struct proc	*p;
	long		 n;

	o = serde_struct_params(params, &signal_struct, &n);
	rc = jx_in_order(o, signal_decode, &id, &e);
	if (serde_struct_seq_end(&signal_struct, n, rc, &e) == -1)
		rpc_fail_params(req, &e);
	else if (rpc_admit(req)) {
		if ((p = proc_find(id)) != NULL)
			proc_signal_group(p, SIGINT);
		rpc_reply(req, json_object());
	}
	json_decref(o);
}

void
proc_m_terminate(struct rpc_req *req, json_t *params)
{
	struct jx_err	 e;
	const char	*id;
	struct proc	*p;
	int		 running, rc;
	json_t		*o;
	long		 n;

	o = serde_struct_params(params, &terminate_struct, &n);
	rc = jx_struct(o, "TerminateParams", &e) == -1 ||
	    jx_id(o, "processId", JX_REQ, &id, &e) == -1 ? -1 : 0;
	if (serde_struct_seq_end(&terminate_struct, n, rc, &e) == -1)
		rpc_fail_params(req, &e);
	else if (rpc_admit(req)) {
		p = proc_find(id);
		running = p != NULL && !p->exited;
		if (running)
			proc_terminate(p);
		rpc_reply(req, json_pack("{s:b}", "running", running));
	}
	json_decref(o);
}
