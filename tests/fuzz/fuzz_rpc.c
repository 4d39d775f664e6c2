/*
 * JSON-RPC dispatch of every method with arbitrary params, in process: the
 * envelope parser, gating, the method table, each handler and whatever it
 * starts (processes, files, transfers), with the state of earlier inputs
 * kept as a long session would keep it.
 *
 * Input: byte 0 below 0x80, the whole input is one message from the client;
 * 0x80-0xfe, byte 0 picks a method from execd's own tables and the rest is
 * its params (JSON, or else a string); 0xff, the client disconnects and a
 * new one connects and initializes, then the rest is one message.
 *
 * Nothing the client asks for may reach outside (see README): the process
 * runs in fuzz_sandbox() (read-only file system but a scratch tmpfs and the
 * working directory, no network), and execve() is wrapped: a "spawned" process is a
 * fork of this one that prints its argv and exits, so no program named by
 * the fuzzer ever runs.
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "evloop.h"
#include "log.h"
#include "execd.h"
#include "discovery/discovery.h"
#include "fs/fs.h"
#include "http/http_req.h"
#include "proc/proc.h"
#include "proc/proc_rpc.h"
#include "rpc/rpc.h"
#include "session/session.h"
#include "fuzz.h"

/* ids of the requests this harness builds: "\u2603" and a number (raw inputs may use any) */
#define FUZZ_ID_MARK	"\xe2\x98\x83"
#define FUZZ_INFLIGHT	256
#define RESET_EVERY	400		/* inputs between reconnections */

int	__wrap_execve(const char *path, char *const argv[], char *const envp[]);

static const char	*methods[128];
static size_t		 nmethods;

static struct {
	struct rpc_transport	 t;
	int			 attached;
	int			 paused;
	int			 closed;	/* execd closed the connection */
	long long		 next_id;
	long long		 inflight[FUZZ_INFLIGHT];	/* our ids not yet answered */
	size_t			 ninflight;
	unsigned		 inputs;
} fz;

/* The "program" every process/start runs: print the argv, exit. */
int
__wrap_execve(const char *path, char *const argv[], char *const envp[])
{
	char	line[512];
	int	n, i, len = 0;

	for (i = 0; argv[i] != NULL && len < (int)sizeof(line) - 1; i++) {
		n = snprintf(line + len, sizeof(line) - (size_t)len, "%s%s", i ? " " : "",
		    argv[i]);
		if (n < 0)
			break;
		len += n;
	}
	if (len > (int)sizeof(line) - 1)
		len = (int)sizeof(line) - 1;
	line[len++] = '\n';
	(void)!write(1, line, (size_t)len);
	(void)!write(2, path, strlen(path));
	_exit(i % 4);
}

static int
inflight_take(long long id)
{
	size_t	i;

	for (i = 0; i < fz.ninflight; i++)
		if (fz.inflight[i] == id) {
			fz.inflight[i] = fz.inflight[--fz.ninflight];
			return 1;
		}
	return 0;
}

/* Every message execd sends must be one well-formed JSON-RPC object. */
static int
ft_send(void *ctx, const char *msg, size_t len)
{
	json_error_t	 je;
	json_t		*j, *id;

	if (!fz.attached)
		abort();	/* sent on a connection it was told is gone */
	if ((j = json_loadb(msg, len, 0, &je)) == NULL || !json_is_object(j)) {
		fprintf(stderr, "execd sent what is not a JSON object: %.*s\n", (int)len, msg);
		abort();
	}
	id = json_object_get(j, "id");
	if (id == NULL) {
		if (!json_is_string(json_object_get(j, "method")))
			abort();
	} else if ((json_object_get(j, "result") != NULL) ==
	    (json_object_get(j, "error") != NULL)) {
		fprintf(stderr, "a response needs exactly one of result, error: %.*s\n",
		    (int)len, msg);
		abort();
	} else if (json_is_string(id) && strncmp(json_string_value(id), FUZZ_ID_MARK,
	    strlen(FUZZ_ID_MARK)) == 0 &&
	    !inflight_take(strtoll(json_string_value(id) + strlen(FUZZ_ID_MARK), NULL, 10))) {
		fprintf(stderr, "answered twice, or never asked: %.*s\n", (int)len, msg);
		abort();
	}
	json_decref(j);
	return 0;
}

static size_t
ft_pending(void *ctx)
{
	return 0;
}

static void
ft_resume(void *ctx)
{
	fz.paused = 0;
}

static void
ft_close(void *ctx)
{
	fz.closed = 1;
}

static void
input(const char *msg, size_t len)
{
	if (rpc_input(msg, len) == 1)
		fz.paused = 1;
}

static void
send_json(json_t *m)
{
	char	*s;

	if ((s = json_dumps(m, JSON_COMPACT)) != NULL) {
		input(s, strlen(s));
		free(s);
	}
	json_decref(m);
}

static void
request(const char *method, json_t *params)
{
	json_t	*m;
	char	 id[32];

	if (fz.ninflight == FUZZ_INFLIGHT) {
		json_decref(params);
		return;
	}
	snprintf(id, sizeof(id), FUZZ_ID_MARK "%lld", fz.next_id);
	fz.inflight[fz.ninflight++] = fz.next_id++;
	m = json_pack("{s:s,s:s}", "id", id, "method", method);
	if (params != NULL)
		json_object_set_new(m, "params", params);
	send_json(m);
}

static void
connect_client(void)
{
	memset(&fz.t, 0, sizeof(fz.t));
	fz.t.send = ft_send;
	fz.t.pending = ft_pending;
	fz.t.resume_input = ft_resume;
	fz.t.close = ft_close;
	snprintf(fz.t.name, sizeof(fz.t.name), "exec-server fuzz");
	fz.t.framing = "";
	fz.attached = 1;
	fz.paused = fz.closed = 0;
	rpc_attach(&fz.t);
	request("initialize", json_pack("{s:s}", "clientName", "fuzz"));
	send_json(json_pack("{s:s}", "method", "initialized"));
}

/* The client goes away; execd must end what it started. */
static void
disconnect_client(void)
{
	int	i;

	fz.attached = 0;
	rpc_detach();
	fz.ninflight = 0;
	for (i = 0; i < 400 && proc_count() > 0; i++)
		fuzz_pump(i < 10 ? 0 : 5);
	if (proc_count() > 0) {
		fprintf(stderr, "%zu processes left 2 s after the client went away\n",
		    proc_count());
		abort();
	}
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const struct rpc_method	*tables[] = { session_methods, proc_methods, fs_methods,
				    discovery_methods, http_methods }, *m;
	struct proc_limits	 limits = { .max_stdin = 1024 * 1024,
				    .retention_bytes = 64 * 1024, .retention_chunks = 50000,
				    .kill_grace_ms = 20,
				    .closed_keep_ms = 20 };
	size_t			 i;

	fuzz_sandbox();
	log_init("execd-fuzz", LOG_DEST_STDERR, getenv("FUZZ_LOG") ? LOG_DEBUG : LOG_CRIT);
	/* answers come fast and state stays small; the rest as execd's defaults */
	conf.concurrency = 16;
	conf.closed_keep_ms = 20;
	conf.kill_grace_ms = 20;
	conf.max_message = 1024 * 1024;
	conf.retention_bytes = 64 * 1024;
	conf.header_timeout_ms = 1000;
	signal(SIGPIPE, SIG_IGN);
	for (i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		for (m = tables[i]; m->name != NULL && nmethods < 128; m++)
			methods[nmethods++] = m->name;
	if (ev_init() == -1)
		return -1;
	rpc_init(conf.concurrency);
	rpc_set_gate(&session_lifecycle);
	for (i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		rpc_register(tables[i]);
	proc_rpc_init(&limits);
	http_req_init(conf.max_message);
	fz.next_id = 1;
	connect_client();
	return 0;
}

static void
structured(uint8_t pick, const uint8_t *p, size_t n)
{
	json_error_t	 je;
	json_t		*params = NULL;

	if (n > 0 && (params = json_loadb((const char *)p, n, JSON_DECODE_ANY, &je)) == NULL)
		params = json_stringn((const char *)p, n);
	request(methods[pick % nmethods], params);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int	i;

	if (size == 0)
		return 0;
	if (data[0] == 0xff || fz.closed || fz.paused || ++fz.inputs % RESET_EVERY == 0 ||
	    proc_count() > 32) {
		disconnect_client();
		connect_client();
	}
	if (data[0] >= 0x80 && data[0] < 0xff)
		structured(data[0] & 0x7f, data + 1, size - 1);
	else if (data[0] == 0xff)
		input((const char *)data + 1, size - 1);
	else
		input((const char *)data, size);
	/* let quick answers, spawned children and their output go through */
	for (i = 0; i < 3; i++)
		fuzz_pump(0);
	for (i = 0; i < 5 && (fz.ninflight > 1 || proc_count() > 0); i++)
		fuzz_pump(1);
	return 0;
}
