/* The process request handlers: process/start (the others on a running process: proc_io_methods.c). */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evloop.h"
#include "log.h"
#include "proc/proc_env.h"
#include "proc/proc_rpc.h"
#include "proc/proc_snapshot.h"
#include "proc/proc_spawn.h"
#include "proc/proc_start_req.h"
#include "proc/proc_table.h"
#include "rpc/rpc_serde.h"
#include "sandbox/sandbox.h"
#include "netproxy/netproxy.h"
#include "snapshot/snapshot.h"
#include "uri.h"

static void	m_start(struct rpc_req *, json_t *);

const struct rpc_method proc_methods[] = {
	{ "process/start", "exec", m_start, RPC_SELF_GATED },
	{ "process/read", "exec", proc_m_read, RPC_SELF_GATED },
	{ "process/write", "exec", proc_m_write, RPC_SELF_GATED },
	{ "process/signal", "exec", proc_m_signal, RPC_SELF_GATED },
	{ "process/terminate", "exec", proc_m_terminate, RPC_SELF_GATED },
	{ NULL, NULL, NULL, 0 },
};

/*
 * error.data.kind of a start that failed to spawn, as the reference types it
 * from the OS error (Rust's NotFound, PermissionDenied; anything else).
 */
#define SPAWN_FAILED	"spawnFailed"

static const char *
spawn_kind(int err)
{
	switch (err) {
	case ENOENT:
		return "spawnNotFound";
	case EACCES:
	case EPERM:
		return "spawnPermissionDenied";
	default:
		return SPAWN_FAILED;
	}
}

static char **
argv_array(json_t *argv)
{
	char	**av;
	size_t	 i, n = json_array_size(argv);

	if ((av = calloc(n + 1, sizeof(*av))) == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		av[i] = (char *)json_string_value(json_array_get(argv, i));
	return av;
}

enum snap_use { SNAP_PLAIN, SNAP_RESTORE, SNAP_CAPTURE, SNAP_WAIT };

/*
 * One process/start, its params decoded once (the sandbox context and
 * execd-proxy's register request with them), and what the phases make of
 * it.  The plan's part is remade when a start goes on after a capture.
 */
struct start {
	struct rpc_req		*req;
	json_t			*params;	/* the map form, ours: sp points into it */
	struct start_params	 sp;
	json_t			*sbx_ctx;	/* sandbox_check's context; NULL: none */
	int			 sbx_code;	/* its refusal, when sbx_msg[0] */
	char			 sbx_msg[512];
	json_t			*np_req;	/* execd-proxy's register request */
	int			 np_rv, np_late; /* its refusal (np_msg), and when */
	char			 np_msg[512];
	int			 transparent;	/* networkProxy's transparentTcp */
	int			 managed_transparent;
	/* the plan */
	struct sandbox_plan	*sbx;
	char			*cwd;
	json_t			*env;
	enum snap_use		 use;
	struct snapshot		*snap;
	char			*snap_key;
};

/* What a phase left: the start was answered, waits for a capture, or goes on. */
enum start_next { START_ANSWERED, START_WAITS, START_AGAIN, START_ON };

static void
start_free(struct start *st)
{
	json_decref(st->np_req);
	json_decref(st->sbx_ctx);
	json_decref(st->params);
	free(st);
}

/*
 * Parse: the params, then the sandbox context and the proxy request
 * decoded from them; their refusals are kept for the check, which answers
 * them in the reference's order.  -1 when req was answered.
 */
static int
start_parse_all(struct start *st, long n)
{
	struct start_params	*sp = &st->sp;
	struct jx_err		 e;

	if (proc_start_parse(st->params, n, sp, &e) == -1) {
		rpc_fail_params(st->req, &e);
		return -1;
	}
	if (sandbox_check(sp->sandbox, st->params, &st->sbx_ctx, &st->sbx_code, st->sbx_msg,
	    sizeof(st->sbx_msg)) == 0)
		st->sbx_msg[0] = '\0';
	if (netproxy_enabled() && sp->network_proxy != NULL)
		st->np_rv = netproxy_start_request(sp->id, st->params, &st->np_req,
		    &st->np_late, st->np_msg, sizeof(st->np_msg));
	st->transparent = netproxy_wants_transparent(st->params);
	st->managed_transparent = sandbox_managed_transparent(st->params);
	return 0;
}

/*
 * The network and sandbox modes the reference (0.171.0) checks once params
 * are decoded, in its order; -1 when req was answered.  Transparent TCP
 * on a kernel that cannot give it (sandbox_tcp.c) is refused as a sandbox
 * this executor cannot give, as the native MXC level is: the capability
 * networkProxyTransparentTcp then says false.
 */
static int
start_check_modes(const struct start *st)
{
	struct rpc_req	*req = st->req;
	json_t		*sandbox = st->sp.sandbox;

	if (st->managed_transparent && !st->transparent) {
		rpc_fail(req, RPC_INVALID_PARAMS, "transparent TCP requires an executor-local "
		    "managed proxy");
		return -1;
	}
	if (sandbox != NULL && sandbox_wants_mxc(sandbox)) {
		rpc_fail_kind(req, RPC_INVALID_PARAMS, "sandboxUnavailable",
		    "native MXC is unavailable on this executor");
		return -1;
	}
	if (st->transparent && sandbox == NULL) {
		rpc_fail(req, RPC_INVALID_PARAMS, "transparent TCP requires a managed Linux sandbox");
		return -1;
	}
	if (st->np_rv == NETPROXY_EINVAL && st->np_late) {
		rpc_fail(req, RPC_INVALID_PARAMS, "%s", st->np_msg);
		return -1;
	}
	if (st->transparent && !sandbox_transparent_supported()) {
		rpc_fail_kind(req, RPC_INVALID_PARAMS, "sandboxUnavailable",
		    "transparent TCP is unavailable on this executor");
		return -1;
	}
	return 0;
}

/* Check: what the decoded params may not ask for; -1 when req was answered. */
static int
start_check(const struct start *st)
{
	const struct start_params	*sp = &st->sp;
	struct rpc_req			*req = st->req;

	if (sp->snap.given && (sp->snap.scope_len == 0 ||
	    sp->snap.scope_len > SNAPSHOT_SCOPE_MAX)) {
		rpc_fail(req, RPC_INVALID_PARAMS, "shell snapshot scope must be non-empty and "
		    "at most %d bytes", SNAPSHOT_SCOPE_MAX);
		return -1;
	}
	if (st->sbx_msg[0] != '\0') {
		rpc_fail(req, st->sbx_code, "%s", st->sbx_msg);
		return -1;
	}
	if (st->np_rv == NETPROXY_EINVAL && !st->np_late) {
		rpc_fail(req, RPC_INVALID_PARAMS, "%s", st->np_msg);
		return -1;
	}
	if (start_check_modes(st) == -1 || !rpc_admit(req))
		return -1;
	if (json_array_size(sp->argv) == 0) {
		rpc_fail(req, RPC_INVALID_PARAMS, "argv must not be empty");
		return -1;
	}
	if (snap_req_applies(&sp->snap, sp->argv) && !snapshot_shell_supported(sp->snap.name)) {
		rpc_fail(req, RPC_INVALID_PARAMS, "shell snapshots are unsupported for shell `%s`",
		    sp->snap.name);
		return -1;
	}
	return 0;
}

/* Plan: the sandbox, cwd, the environment; -1 when req was answered. */
static int
start_plan(struct start *st)
{
	const struct start_params	*sp = &st->sp;
	struct rpc_req			*req = st->req;
	struct jx_err			 e;
	char				 msg[512];
	enum uri_status			 us;
	int				 code;

	if (sp->sandbox != NULL)
		netproxy_before_sandbox();
	/* the reference prepares the sandbox before it looks at cwd and the id */
	if (sandbox_prepare(st->sbx_ctx, st->params, &st->sbx, &code, msg, sizeof(msg)) == -1) {
		rpc_fail(req, code, "%s", msg);
		return -1;
	}
	if ((st->cwd = uri_to_path_n(sp->cwd_uri, sp->cwd_len, &e, &us)) == NULL) {
		/* a well-formed URI naming no local path: the reference's cwd wording */
		if (us == URI_NOT_LOCAL)
			rpc_fail(req, RPC_INVALID_PARAMS, "cwd URI `%s` is not valid on this "
			    "exec-server host: %s", sp->cwd_uri, jx_err_whole(e.msg));
		else
			rpc_fail_params(req, &e);
		return -1;
	}
	if (proc_find(sp->id) != NULL) {
		rpc_fail(req, RPC_INVALID_REQUEST, "process %s already exists", sp->id);
		return -1;
	}
	if (sp->network_proxy != NULL && !netproxy_enabled()) {
		rpc_fail(req, RPC_INVALID_REQUEST, "network proxy launch is not supported");
		return -1;
	}
	/* empty, not one cut at a NUL: that is the NUL's error, later */
	if (json_string_length(json_array_get(sp->argv, 0)) == 0) {
		rpc_fail_kind(req, RPC_INTERNAL_ERROR, SPAWN_FAILED, "missing program for %s spawn",
		    sp->tty ? "PTY" : "pipe");
		return -1;
	}
	if ((st->env = proc_env_build(sp->env, sp->env_policy, &e)) == NULL) {
		rpc_fail_params(req, &e);
		return -1;
	}
	return 0;
}

static void
start_plan_free(struct start *st)
{
	if (st->use == SNAP_CAPTURE)	/* refused before it could start */
		snapshot_done(st->snap_key, NULL, 0, ev_now());
	free(st->snap_key);
	sandbox_plan_free(st->sbx);
	free(st->cwd);
	json_decref(st->env);
	st->snap_key = NULL;
	st->sbx = NULL;
	st->cwd = NULL;
	st->env = NULL;
	st->snap = NULL;
	st->use = SNAP_PLAIN;
}

/*
 * What the login shell's snapshot does for this start: nothing, restore it
 * (st->env becomes the snapshot's), or have it captured first.  A start
 * resumed after a capture never waits again.
 */
static enum snap_use
snap_decide(struct start *st, int resumed)
{
	const struct start_params	*sp = &st->sp;
	struct snapshot			*s;
	json_t				*senv;
	char				*key;

	if (!snap_req_applies(&sp->snap, sp->argv))
		return SNAP_PLAIN;
	if ((key = snap_req_key(&sp->snap, sp->cwd_uri, sp->env_policy, sp->sandbox)) == NULL)
		return SNAP_PLAIN;
	s = snapshot_find(key, ev_now());
	if (s == NULL && !resumed && snapshot_begin(key, ev_now()) != NULL) {
		st->snap_key = key;
		return SNAP_CAPTURE;
	}
	if (s != NULL && snapshot_state(s) == SNAPSHOT_CAPTURING && !resumed) {
		st->snap_key = key;
		return SNAP_WAIT;
	}
	free(key);
	if (s == NULL || snapshot_state(s) != SNAPSHOT_READY)
		return SNAP_PLAIN;
	if ((senv = snapshot_env(s, sp->snap.name, sp->env_policy, sp->env)) == NULL)
		return SNAP_PLAIN;
	json_decref(st->env);
	st->env = senv;
	st->snap = s;
	return SNAP_RESTORE;
}

static proc_snapshot_resume start_resume;

/* Snapshot: decided, and waited for when another start captures it. */
static enum start_next
start_snapshot(struct start *st, int resumed)
{
	st->use = snap_decide(st, resumed);
	if (st->use != SNAP_WAIT)
		return START_ON;
	st->use = SNAP_PLAIN;
	if (proc_snapshot_wait(st->snap_key, start_resume, st) == 0)
		return START_WAITS;	/* answered once the capture is over */
	return START_ON;
}

/* Register with execd-proxy and point env at it; -1 when req was answered. */
static int
start_register(struct start *st, struct netproxy_reg **reg)
{
	char	err[512];
	int	rv = -1;

	*reg = NULL;
	if (st->np_req == NULL)
		snprintf(err, sizeof(err), "out of memory");
	else
		rv = netproxy_register_req(st->np_req, st->params, st->env, reg, err,
		    sizeof(err));
	if (rv == NETPROXY_EINVAL) {
		rpc_fail(st->req, RPC_INVALID_PARAMS, "%s", err);
		return -1;
	}
	if (rv != 0) {
		/* never launch with open network when the sidecar is not there */
		rpc_fail(st->req, RPC_INTERNAL_ERROR, "%s", err);
		return -1;
	}
	if (netproxy_child_env(*reg, st->env) == -1) {
		netproxy_unregister(*reg);
		*reg = NULL;
		rpc_fail(st->req, RPC_INTERNAL_ERROR, "out of memory");
		return -1;
	}
	return 0;
}

/*
 * Capture first, then start: the capture runs where the command would,
 * sandbox and network and all, its output read as bytes (never through a
 * terminal).
 * Else it could not start: the command runs plain, with a sandbox of its own.
 */
static enum start_next
start_capture(struct start *st, struct spawn_req *rq, struct netproxy_reg *reg)
{
	rq->arg0 = NULL;
	rq->tty = 0;
	rq->pipe_stdin = 0;
	st->use = SNAP_PLAIN;
	if (proc_snapshot_capture(st->snap_key, rq, st->sbx, reg) == -1 ||
	    proc_snapshot_wait(st->snap_key, start_resume, st) == -1)
		return START_AGAIN;
	return START_WAITS;
}

/* Reply: the process is in the table; the response goes first, then its output. */
static void
start_reply(struct start *st, struct proc *p, const struct spawn_res *res, const char *prog)
{
	p->pid = res->pid;
	p->sandboxed = st->sbx != NULL;
	p->guards = sandbox_take_guards(st->sbx);
	sandbox_started(st->sbx, res->pid);
	p->tty = st->sp.tty;
	p->writable = st->sp.tty || st->sp.pipe_stdin;
	log_info("process %s started: pid %ld, %s", p->id, (long)p->pid, prog);
	rpc_reply(st->req, json_pack("{s:o,s:s}", "processId", jx_id_json(st->sp.id),
	    "sandboxType", sandbox_type(st->sbx)));
	proc_start_io(p, res->out_fd, res->err_fd, res->in_fd);
}

/* Launch: the last refusals, execd-proxy, the spawn (or the capture first). */
static enum start_next
start_launch(struct start *st)
{
	const struct start_params	*sp = &st->sp;
	struct rpc_req			*req = st->req;
	struct spawn_req		 rq;
	struct spawn_res		 res;
	struct proc			*p;
	struct netproxy_reg		*reg = NULL;
	char				**av = NULL, **envp = NULL, msg[512], *words;
	const char			*nul;
	int				 err, restore_fd = -1;
	enum start_next			 next = START_ANSWERED;

	if (sp->tty && (words = proc_pty_nul_words(json_array_get(sp->argv, 0), st->cwd,
	    st->env, sp->arg0 != NULL)) != NULL) {
		rpc_fail_kind(req, RPC_INTERNAL_ERROR, SPAWN_FAILED, "%s", words);
		free(words);
		goto done;
	}
	if ((nul = proc_start_nul(sp, st->env)) != NULL) {
		rpc_fail_kind(req, RPC_INTERNAL_ERROR, SPAWN_FAILED, "%s", nul);
		goto done;
	}
	/*
	 * Only a process whose network is managed (networkProxy) is registered
	 * and gets the proxy's variables, as in the reference; any other gets
	 * exactly the environment it asked for.
	 */
	if (sp->network_proxy != NULL && start_register(st, &reg) == -1)
		goto done;
	if (sandbox_finish(st->sbx, st->cwd, st->env) == -1) {
		rpc_fail(req, RPC_INVALID_REQUEST, "sandbox intent cannot be enforced on this executor");
		goto done;
	}
	if ((av = st->use == SNAP_PLAIN ? argv_array(sp->argv) :
	    snap_req_argv(&sp->snap, sp->argv, st->use == SNAP_CAPTURE ? NULL : st->snap)) == NULL ||
	    (envp = proc_env_array(st->env)) == NULL) {
		rpc_fail(req, RPC_INTERNAL_ERROR, "out of memory");
		goto done;
	}
	memset(&rq, 0, sizeof(rq));
	rq.restore_fd = -1;
	rq.argv = av;
	rq.arg0 = sp->arg0;
	rq.envp = envp;
	rq.cwd = st->cwd;
	rq.tty = sp->tty;
	rq.pipe_stdin = sp->pipe_stdin;
	rq.rows = 24;
	rq.cols = 80;
	rq.sandbox = st->sbx;
	rq.spawned = sandbox_spawned;
	rq.spawned_arg = st->sbx;
	if (st->use == SNAP_CAPTURE) {
		/* the capture's network is this registration's; the command registers anew */
		next = start_capture(st, &rq, reg);
		reg = NULL;
		goto done;
	}
	if (st->use == SNAP_RESTORE && snapshot_uses_fd(sp->snap.name) &&
	    (rq.restore_fd = restore_fd = snapshot_fd(st->snap, sp->snap.name)) == -1) {
		rpc_fail_kind(req, RPC_INTERNAL_ERROR, SPAWN_FAILED,
		    "cannot restore the shell snapshot");
		goto done;
	}
	if (proc_spawn(&rq, &res, &err, msg, sizeof(msg)) == -1) {
		rpc_fail_kind(req, RPC_INTERNAL_ERROR, spawn_kind(err), "%s", msg);
		goto done;
	}
	if ((p = proc_new(sp->id)) == NULL) {
		kill(-res.pid, SIGKILL);
		rpc_fail(req, RPC_INTERNAL_ERROR, "out of memory");
		goto done;
	}
	p->netreg = reg;
	reg = NULL;
	start_reply(st, p, &res, av[0]);
done:
	if (restore_fd != -1)
		close(restore_fd);
	netproxy_unregister(reg);
	free(av);
	free(envp);
	return next;
}

/*
 * Plan, snapshot, launch, reply; a start whose capture could not start
 * goes through them once more, resumed (it then never waits).
 */
static void
start_run(struct start *st, int resumed)
{
	enum start_next	next;

	do {
		next = START_ANSWERED;
		if (start_plan(st) == 0 && (next = start_snapshot(st, resumed)) == START_ON)
			next = start_launch(st);
		start_plan_free(st);
		if (next == START_WAITS)
			return;		/* start_resume goes on */
		resumed = 1;
	} while (next == START_AGAIN);
	start_free(st);
}

/* A start that waited for a shell snapshot's capture: it goes on, unless its client left. */
static void
start_resume(void *arg, int ended)
{
	struct start	*st = arg;

	if (ended || !rpc_req_alive(st->req)) {
		rpc_fail(st->req, RPC_INTERNAL_ERROR, "the session ended");
		start_free(st);
		return;
	}
	start_run(st, 1);
}

/*
 * process/start, as bubblewrap's main() lists its setup: parse, check,
 * then plan, snapshot, launch and reply (start_run).  Its sequence form is
 * read as the map of its fields, which the rest consults.
 */
static void
m_start(struct rpc_req *req, json_t *raw)
{
	struct start	*st;
	long		 n;

	if ((st = calloc(1, sizeof(*st))) == NULL) {
		log_warn("process/start");
		rpc_fail(req, RPC_INTERNAL_ERROR, "out of memory");
		return;
	}
	st->req = req;
	st->params = serde_struct_params(raw, &proc_start_struct, &n);
	if (start_parse_all(st, n) == -1 || start_check(st) == -1) {
		start_free(st);
		return;
	}
	start_run(st, 0);
}
