/*
 * A stand-in for the JSON-RPC dispatcher under the transport targets
 * (fuzz_jsonl, fuzz_ws): it checks what a transport hands up, answers some
 * messages, and pauses and resumes input as the real one does.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "evloop.h"
#include "rpc/rpc.h"
#include "rpc_stub.h"

struct rpc_stub	stub;
static struct ev_timer	resume_timer;

static void
stub_resume(struct ev_timer *t, void *arg)
{
	if (stub.t != NULL)
		stub.t->resume_input(stub.t->ctx);
}

void
rpc_stub_reset(unsigned knobs)
{
	memset(&stub, 0, sizeof(stub));
	stub.knobs = knobs;
	ev_timer_init(&resume_timer, stub_resume, NULL);
}

void
rpc_attach(struct rpc_transport *t)
{
	stub.t = t;
	stub.attached = 1;
}

int
rpc_attached(void)
{
	return stub.attached;
}

void
rpc_detach(void)
{
	ev_timer_stop(&resume_timer);
	stub.attached = 0;
	stub.detaches++;
}

void
rpc_output_drained(void)
{
	stub.drained++;
}

int
rpc_input(const char *msg, size_t len)
{
	static const char	reply[] = "{\"id\":1,\"result\":{}}";
	unsigned		sum = 0;
	size_t			i;

	if (!stub.attached)
		return 1;
	if (len > stub.max_message)
		abort();	/* a transport let an over-long message through */
	/* touch every byte: ASan sees a message that is not all there */
	for (i = 0; i < len; i++)
		sum += (unsigned char)msg[i];
	stub.sum += sum;
	stub.messages++;
	stub.bytes += len;
	if (stub.check_lines && memchr(msg, '\n', len) != NULL)
		abort();	/* newline-JSON handed up a message with a newline in it */
	if ((stub.knobs & STUB_REPLY) && stub.t->send(stub.t->ctx, reply, sizeof(reply) - 1) == -1)
		stub.send_failed++;
	if ((stub.knobs & STUB_PAUSE) && stub.messages % 3 == 0) {
		ev_timer_start(&resume_timer, 0);
		return 1;
	}
	if ((stub.knobs & STUB_CLOSE) && stub.messages == 4)
		stub.t->close(stub.t->ctx);
	return 0;
}
