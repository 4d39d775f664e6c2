/*
 * Test driver for src/netproxy/netproxy.c: one JSON command per line on stdin, one
 * JSON answer per line on stdout, on the same event loop execd uses.
 *   {"cmd":"register","process_id":"p1","params":{...process/start...}}
 *     -> {"rc":0,"env":{...}} or {"rc":-1|-2,"error":"..."}
 *   {"cmd":"unregister","process_id":"p1"}  -> {"rc":0}
 *   {"cmd":"check","params":{...}}          -> {"rc":0} or {"rc":-2,"error":"..."}
 *   {"cmd":"wait","ms":500}                 -> {"rc":0} after running the loop
 * Usage: netproxy_helper CONTROL-SOCKET
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "evloop.h"
#include "jsonx.h"
#include "log.h"
#include "netproxy/netproxy.h"

#define MAX_PROCS	64

static struct {
	char			 id[64];
	struct netproxy_reg	*reg;
} procs[MAX_PROCS];

static struct ev_io	in_io;
static struct ev_timer	wait_tmr;
static struct buf	in;

static void
answer(json_t *o)
{
	char	*s = jx_dump(o, NULL);

	json_decref(o);
	printf("%s\n", s ? s : "{}");
	fflush(stdout);
	free(s);
}

static void
do_register(json_t *cmd)
{
	const char	*pid = json_string_value(json_object_get(cmd, "process_id"));
	json_t		*params = json_object_get(cmd, "params"), *env;
	char		 err[512];
	int		 rc, i;

	for (i = 0; i < MAX_PROCS && procs[i].reg != NULL; i++)
		;
	if (pid == NULL || params == NULL || i == MAX_PROCS) {
		answer(json_pack("{s:i, s:s}", "rc", -1, "error", "bad command"));
		return;
	}
	if ((rc = netproxy_register(pid, params, &procs[i].reg, err, sizeof(err))) != 0) {
		answer(json_pack("{s:i, s:s}", "rc", rc, "error", err));
		return;
	}
	snprintf(procs[i].id, sizeof(procs[i].id), "%s", pid);
	env = json_deep_copy(json_object_get(params, "env"));
	if (env == NULL)
		env = json_object();
	rc = netproxy_child_env(procs[i].reg, env);
	answer(json_pack("{s:i, s:o}", "rc", rc, "env", env));
}

static void
do_unregister(json_t *cmd)
{
	const char	*pid = json_string_value(json_object_get(cmd, "process_id"));
	int		 i;

	for (i = 0; i < MAX_PROCS; i++)
		if (procs[i].reg != NULL && pid != NULL && strcmp(procs[i].id, pid) == 0) {
			netproxy_unregister(procs[i].reg);
			procs[i].reg = NULL;
			answer(json_pack("{s:i}", "rc", 0));
			return;
		}
	answer(json_pack("{s:i, s:s}", "rc", -1, "error", "unknown process"));
}

static void
do_check(json_t *cmd)
{
	char	err[512];
	int	rc = netproxy_check_params(json_object_get(cmd, "params"), 1, err, sizeof(err));

	if (rc == 0)
		answer(json_pack("{s:i}", "rc", 0));
	else
		answer(json_pack("{s:i, s:s}", "rc", rc, "error", err));
}

static void
waited(struct ev_timer *t, void *arg)
{
	answer(json_pack("{s:i}", "rc", 0));
	ev_io_set(&in_io, EPOLLIN);
}

static void
command(const char *line, size_t len)
{
	json_t		*cmd = json_loadb(line, len, 0, NULL);
	const char	*c = json_string_value(json_object_get(cmd, "cmd"));

	if (c == NULL)
		answer(json_pack("{s:i, s:s}", "rc", -1, "error", "bad command"));
	else if (strcmp(c, "register") == 0)
		do_register(cmd);
	else if (strcmp(c, "unregister") == 0)
		do_unregister(cmd);
	else if (strcmp(c, "check") == 0)
		do_check(cmd);
	else if (strcmp(c, "wait") == 0) {
		/* stop reading commands until the loop has run that long */
		ev_io_set(&in_io, 0);
		ev_timer_start(&wait_tmr, (uint64_t)json_integer_value(json_object_get(cmd, "ms")));
	} else
		answer(json_pack("{s:i, s:s}", "rc", -1, "error", "unknown command"));
	json_decref(cmd);
}

static void
readable(struct ev_io *io, uint32_t events, void *arg)
{
	ssize_t	 n;
	uint8_t	*nl;
	size_t	 len;

	if (buf_reserve(&in, 65536) == -1)
		fatal("buf");
	n = read(STDIN_FILENO, in.data + in.len, in.cap - in.len);
	if (n <= 0) {
		if (n == -1 && errno == EINTR)
			return;
		ev_io_del(&in_io);
		ev_break();
		return;
	}
	in.len += (size_t)n;
	while (in_io.events != 0 &&
	    (nl = memchr(buf_head(&in), '\n', buf_avail(&in))) != NULL) {
		len = (size_t)(nl - buf_head(&in));
		command((const char *)buf_head(&in), len);
		buf_consume(&in, len + 1);
	}
}

int
main(int argc, char *argv[])
{
	int	i;

	if (argc != 2) {
		fprintf(stderr, "usage: netproxy_helper control-socket\n");
		return 2;
	}
	log_init("netproxy_helper", LOG_DEST_STDERR, LOG_DEBUG);
	if (ev_init() == -1 || netproxy_init(argv[1]) == -1)
		return 1;
	ev_timer_init(&wait_tmr, waited, NULL);
	if (ev_io_add(&in_io, STDIN_FILENO, EPOLLIN, readable, NULL) == -1)
		return 1;
	ev_run();
	for (i = 0; i < MAX_PROCS; i++)
		if (procs[i].reg != NULL)
			netproxy_unregister(procs[i].reg);
	netproxy_shutdown();
	buf_free(&in);
	ev_free();
	return 0;
}
