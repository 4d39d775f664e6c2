/* What the process table reports, told to the client as notifications. */
#include "config.h"

#include "proc/proc.h"
#include "proc/proc_rpc.h"
#include "proc/proc_table.h"
#include "session/session.h"

static void
on_output(struct proc *p, uint64_t seq, enum proc_stream s, const void *data, size_t len)
{
	json_t	*note;
	char	 head[512];
	int	 n;

	if (!rpc_attached())
		return;
	if ((n = out_note_head(head, sizeof(head), p->id, seq, s)) > 0) {
		rpc_notify_raw_b64(head, (size_t)n, data, len, OUT_NOTE_TAIL,
		    sizeof(OUT_NOTE_TAIL) - 1);
		return;
	}
	note = json_pack("{s:o,s:I,s:s}", "processId", jx_id_json(p->id), "seq", (json_int_t)seq,
	    "stream", out_stream_name(s));
	if (note != NULL)
		rpc_notify_b64("process/output", note, "chunk", data, len);
}

static void
on_exited(struct proc *p, uint64_t seq)
{
	rpc_notify("process/exited", json_pack("{s:o,s:I,s:i,s:b}", "processId", jx_id_json(p->id),
	    "seq", (json_int_t)seq, "exitCode", p->exit_code,
	    "sandboxDenied", p->sandbox_denied));
}

static void
on_closed(struct proc *p, uint64_t seq)
{
	rpc_notify("process/closed", json_pack("{s:o,s:I}", "processId", jx_id_json(p->id),
	    "seq", (json_int_t)seq));
}

static const struct proc_events events = {
	.output = on_output,
	.exited = on_exited,
	.closed = on_closed,
	.changed = proc_wake,
	.discarded = proc_read_discard,
	.congested = rpc_congested,
	.attached = rpc_attached,
};

/*
 * Reads parked by the gone connection are answered (and dropped) now.  A
 * pause for the gone connection's congestion ends: while the session waits
 * for a client, the children are drained into their retention and reaped.
 */
static void
detached(void)
{
	proc_each(proc_wake);
	proc_resume_output();
}

void
proc_rpc_init(const struct proc_limits *lim)
{
	proc_init(&events, lim);
	rpc_on_drain(proc_resume_output);
	rpc_on_detach(detached);
	session_set_capability("shellSnapshotV2", 1);
}
