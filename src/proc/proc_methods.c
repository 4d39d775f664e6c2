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
#include "proc/proc_table.h"
#include "rpc/rpc_serde.h"
#include "sandbox/sandbox.h"
#include "netproxy/netproxy.h"
#include "snapshot/snapshot.h"
#include "util/uri.h"

static void	m_start(struct rpc_req *, json_t *);

const struct rpc_method proc_methods[] = {
	{ "process/start", "exec", m_start, RPC_SELF_GATED },
	{ "process/read", "exec", proc_m_read, RPC_SELF_GATED },
	{ "process/write", "exec", proc_m_write, RPC_SELF_GATED },
	{ "process/signal", "exec", proc_m_signal, RPC_SELF_GATED },
	{ "process/terminate", "exec", proc_m_terminate, RPC_SELF_GATED },
	{ NULL, NULL, NULL, 0 },
};

struct start_params {
	const char	*id;
	json_t		*argv;
	const char	*cwd_uri;
	size_t		 cwd_len;
	json_t		*env;
	int		 tty;
	int		 pipe_stdin;
	const char	*arg0;
	size_t		 arg0_len;
	json_t		*env_policy;
	json_t		*sandbox;
	json_t		*network_proxy;
	json_t		*managed_network;
	int		 enforce_managed;
	struct snap_req	 snap;
};

/* telemetry only, unused, but refused as the reference refuses it */
static int
metadata_parse(json_t *params, struct jx_err *e)
{
	json_t		*md;
	const char	*s;
	size_t		 len;
	int		 r;

	/* every field of ExecMetadata has a default: [] is accepted */
	if (serde_empty_seq(params, "metadata", "ExecMetadata", 0, e) == -1)
		return -1;
	if ((r = jx_substruct(params, "metadata", JX_OPT, "ExecMetadata", &md, e)) <= 0)
		return r;
	/* threadId is a ThreadId, a UUID */
	if ((r = jx_str(md, "threadId", JX_OPT, &s, &len, e)) == -1 ||
	    (r == 1 && serde_uuid(s, len, e) == -1) ||
	    jx_str(md, "toolCallId", JX_OPT, &s, &len, e) == -1)
		return -1;
	return 0;
}

/* WireExecParams, in the reference's declaration order (its sequence form's) */
static const char *const start_fields[] = {
	"processId", "metadata", "argv", "cwd", "envPolicy", "shellSnapshot", "env", "tty",
	"pipeStdin", "arg0", "sandbox", "enforceManagedNetwork", "managedNetwork",
	"networkProxy", NULL
};
static const struct serde_struct start_struct = {
	"WireExecParams", start_fields, 1UL << 8 | 1UL << 11	/* pipeStdin, enforce... */
};

/* envPolicy is decoded with the params, as the reference's is: its errors come first. */
static int
env_policy_check(json_t *policy, struct jx_err *e)
{
	json_t	*none, *env;

	if (policy == NULL)
		return 0;
	if ((none = json_object()) == NULL) {
		snprintf(e->msg, sizeof(e->msg), "out of memory");
		return -1;
	}
	env = proc_env_build(none, policy, e);
	json_decref(none);
	json_decref(env);
	return env == NULL ? -1 : 0;
}

/* cwd is a PathUri: a malformed one fails the decoding (one naming no local path, later) */
static int
cwd_check(const struct start_params *sp, struct jx_err *e)
{
	char	*path;
	int	 code;

	if (sp->cwd_uri == NULL)
		return 0;
	if ((path = uri_to_path_n(sp->cwd_uri, sp->cwd_len, e, &code)) == NULL &&
	    code == RPC_INVALID_PARAMS)
		return -1;
	free(path);
	return 0;
}

/* Fields in declaration order: a sequence's errors come as serde's. */
static int
start_decode(json_t *params, void *arg, struct jx_err *e)
{
	struct start_params	*sp = arg;
	json_t			*unused;

	memset(sp, 0, sizeof(*sp));
	return jx_struct(params, "WireExecParams", e) == -1 ||
	    jx_id(params, "processId", JX_REQ, &sp->id, e) == -1 ||
	    metadata_parse(params, e) == -1 ||
	    jx_strarray(params, "argv", JX_REQ, &sp->argv, e) == -1 ||
	    jx_str(params, "cwd", JX_REQ, &sp->cwd_uri, &sp->cwd_len, e) == -1 ||
	    cwd_check(sp, e) == -1 ||
	    serde_empty_seq(params, "envPolicy", "ExecEnvPolicy", 5, e) == -1 ||
	    jx_substruct(params, "envPolicy", JX_OPT, "ExecEnvPolicy", &sp->env_policy, e) == -1 ||
	    env_policy_check(sp->env_policy, e) == -1 ||
	    snap_req_parse(params, &sp->snap, e) == -1 ||
	    jx_strmap(params, "env", JX_REQ, &sp->env, e) == -1 ||
	    jx_bool(params, "tty", JX_REQ, &sp->tty, e) == -1 ||
	    jx_bool(params, "pipeStdin", JX_DEFAULT, &sp->pipe_stdin, e) == -1 ||
	    jx_str(params, "arg0", JX_OPT, &sp->arg0, &sp->arg0_len, e) == -1 ||
	    serde_empty_seq(params, "sandbox", "WireFileSystemSandboxContext", 10, e) == -1 ||
	    jx_substruct(params, "sandbox", JX_OPT, "WireFileSystemSandboxContext",
	    &sp->sandbox, e) == -1 ||
	    jx_bool(params, "enforceManagedNetwork", JX_DEFAULT, &sp->enforce_managed, e) == -1 ||
	    serde_empty_seq(params, "managedNetwork", "ManagedNetworkSandboxContext", 0, e) == -1 ||
	    jx_substruct(params, "managedNetwork", JX_OPT, "ManagedNetworkSandboxContext",
	    &sp->managed_network, e) == -1 ||
	    serde_empty_seq(params, "networkProxy", "RemoteNetworkProxyLaunchConfig", 5, e) == -1 ||
	    jx_substruct(params, "networkProxy", JX_OPT, "RemoteNetworkProxyLaunchConfig",
	    &sp->network_proxy, e) == -1 ||
	    (sp->network_proxy != NULL && jx_any(sp->network_proxy, "proxy", JX_REQ, &unused,
	    e) == -1) ? -1 : 0;
}

/* serde's order: the first bad field of the input, then the first missing one */
static int
start_parse(json_t *params, long n, struct start_params *sp, struct jx_err *e)
{
	return serde_struct_seq_end(&start_struct, n, jx_in_order(params, start_decode, sp, e),
	    e);
}

/*
 * No argument or variable may reach exec cut at a NUL: refuse the spawn as
 * the reference's process library does, with its words (a pty spawn says
 * the same of its environment as of its arguments).
 */
/*
 * A NUL in a variable's name or value.  Names are checked where the client
 * wrote them too: jansson's copies of a map cut its keys at a NUL.
 */
static int
env_has_nul(json_t *map)
{
	const char	*k;
	json_t		*v;
	size_t		 klen;

	json_object_keylen_foreach(map, k, klen, v)
		if (strlen(k) != klen || jx_has_nul(v))
			return 1;
	return 0;
}

/*
 * No argument or variable may reach exec cut at a NUL: refuse the spawn as
 * the reference's process library does, with its words (a pty spawn says
 * the same of its environment as of its arguments).
 */
static const char *
start_nul(const struct start_params *sp, json_t *env)
{
	json_t	*v;
	size_t	 i;

	json_array_foreach(sp->argv, i, v)
		if (jx_has_nul(v))
			return "nul byte found in provided data";
	if (sp->arg0 != NULL && strlen(sp->arg0) != sp->arg0_len)
		return "nul byte found in provided data";
	if (env_has_nul(sp->env) || env_has_nul(env) ||
	    env_has_nul(json_object_get(sp->env_policy, "set")))
		return sp->tty ? "nul byte found in provided data" :
		    "data provided contains a nul byte";
	return NULL;
}

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

/*
 * The network and sandbox modes the reference (0.171.0) checks once params
 * are decoded, in its order; -1 when req was answered.  Transparent TCP
 * on a kernel that cannot give it (sandbox_tcp.c) is refused as a sandbox
 * this executor cannot give, as the native MXC level is: the capability
 * networkProxyTransparentTcp then says false.
 */
static int
start_check_modes(struct rpc_req *req, json_t *params, json_t *sandbox)
{
	char	msg[512];
	int	transparent = netproxy_wants_transparent(params);

	if (sandbox_managed_transparent(params) && !transparent) {
		rpc_fail(req, RPC_INVALID_PARAMS, "transparent TCP requires an executor-local "
		    "managed proxy");
		return -1;
	}
	if (sandbox != NULL && sandbox_wants_mxc(sandbox)) {
		rpc_fail_kind(req, RPC_INVALID_PARAMS, "sandboxUnavailable",
		    "native MXC is unavailable on this executor");
		return -1;
	}
	if (transparent && sandbox == NULL) {
		rpc_fail(req, RPC_INVALID_PARAMS, "transparent TCP requires a managed Linux sandbox");
		return -1;
	}
	if (netproxy_enabled() &&
	    netproxy_check_params(params, 1, msg, sizeof(msg)) == NETPROXY_EINVAL) {
		rpc_fail(req, RPC_INVALID_PARAMS, "%s", msg);
		return -1;
	}
	if (transparent && !sandbox_transparent_supported()) {
		rpc_fail_kind(req, RPC_INVALID_PARAMS, "sandboxUnavailable",
		    "transparent TCP is unavailable on this executor");
		return -1;
	}
	return 0;
}

/* Register with execd-proxy and point env at it; -1 when req was answered. */
static int
start_register(struct rpc_req *req, json_t *params, const char *id, json_t *env,
    struct netproxy_reg **reg)
{
	char	err[512];
	int	rv;

	rv = netproxy_register_env(id, params, env, reg, err, sizeof(err));
	if (rv == NETPROXY_EINVAL) {
		rpc_fail(req, RPC_INVALID_PARAMS, "%s", err);
		return -1;
	}
	if (rv != 0) {
		/* never launch with open network when the sidecar is not there */
		rpc_fail(req, RPC_INTERNAL_ERROR, "%s", err);
		return -1;
	}
	if (netproxy_child_env(*reg, env) == -1) {
		netproxy_unregister(*reg);
		*reg = NULL;
		rpc_fail(req, RPC_INTERNAL_ERROR, "out of memory");
		return -1;
	}
	return 0;
}

static void	start_with(struct rpc_req *, json_t *, long, int);
static proc_snapshot_resume start_resume;

/* Capture first, then start: 0 when the start waits for it now. */
static int
start_capture(struct rpc_req *req, json_t *params, long n, const char *key,
    const struct spawn_req *rq, struct sandbox_plan *sbx)
{
	if (proc_snapshot_capture(key, rq, sbx) == -1)
		return -1;
	if (proc_snapshot_wait(key, req, params, n, start_resume) == -1)
		return -1;
	return 0;
}

/* A start that waited for a shell snapshot's capture: it goes on, unless its client left. */
static void
start_resume(struct rpc_req *req, json_t *params, long n)
{
	if (!rpc_req_alive(req)) {
		rpc_fail(req, RPC_INTERNAL_ERROR, "the session ended");
		return;
	}
	start_with(req, params, n, 1);
}

enum snap_use { SNAP_PLAIN, SNAP_RESTORE, SNAP_CAPTURE, SNAP_WAIT };

/*
 * What the login shell's snapshot does for this start: nothing, restore it
 * (*env becomes the snapshot's), or have it captured first.  A start
 * resumed after a capture never waits again.
 */
static enum snap_use
snap_decide(const struct start_params *sp, json_t **env, int resumed, char **keyp,
    struct snapshot **sp_out)
{
	struct snapshot	*s;
	json_t		*senv;
	char		*key;

	*keyp = NULL;
	if (!snap_req_applies(&sp->snap, sp->argv))
		return SNAP_PLAIN;
	if ((key = snap_req_key(&sp->snap, sp->cwd_uri, sp->env_policy, sp->sandbox)) == NULL)
		return SNAP_PLAIN;
	s = snapshot_find(key, ev_now());
	if (s == NULL && !resumed && snapshot_begin(key, ev_now()) != NULL) {
		*keyp = key;
		return SNAP_CAPTURE;
	}
	if (s != NULL && snapshot_state(s) == SNAPSHOT_CAPTURING && !resumed) {
		*keyp = key;
		return SNAP_WAIT;
	}
	free(key);
	if (s == NULL || snapshot_state(s) != SNAPSHOT_READY)
		return SNAP_PLAIN;
	if ((senv = snapshot_env(s, sp->snap.name, sp->env_policy, sp->env)) == NULL)
		return SNAP_PLAIN;
	json_decref(*env);
	*env = senv;
	*sp_out = s;
	return SNAP_RESTORE;
}

/* Its sequence form read as the map of its fields, which the rest consults. */
static void
m_start(struct rpc_req *req, json_t *raw)
{
	json_t	*params;
	long	 n;

	params = serde_struct_params(raw, &start_struct, &n);
	start_with(req, params, n, 0);
	json_decref(params);
}

static void
start_with(struct rpc_req *req, json_t *params, long n, int resumed)
{
	struct start_params	 sp;
	struct spawn_req	 rq;
	struct spawn_res	 res;
	struct jx_err		 e;
	struct proc		*p;
	struct netproxy_reg	*reg = NULL;
	struct sandbox_plan	*sbx = NULL;
	json_t			*env = NULL;
	char			**av = NULL, **envp = NULL, *cwd = NULL, msg[512], *words;
	const char		*nul;
	int			 err, code, restore_fd = -1, again = 0;
	enum snap_use		 use = SNAP_PLAIN;
	struct snapshot		*snap = NULL;
	char			*snap_key = NULL;

	if (start_parse(params, n, &sp, &e) == -1) {
		rpc_fail_params(req, &e);
		return;
	}
	if (sp.snap.given && (sp.snap.scope_len == 0 || sp.snap.scope_len > SNAPSHOT_SCOPE_MAX)) {
		rpc_fail(req, RPC_INVALID_PARAMS, "shell snapshot scope must be non-empty and "
		    "at most %d bytes", SNAPSHOT_SCOPE_MAX);
		return;
	}
	if (sandbox_check(sp.sandbox, params, &code, msg, sizeof(msg)) == -1) {
		rpc_fail(req, code, "%s", msg);
		return;
	}
	if (netproxy_enabled() &&
	    netproxy_check_params(params, 0, msg, sizeof(msg)) == NETPROXY_EINVAL) {
		rpc_fail(req, RPC_INVALID_PARAMS, "%s", msg);
		return;
	}
	if (start_check_modes(req, params, sp.sandbox) == -1)
		return;
	if (!rpc_admit(req))
		return;
	if (json_array_size(sp.argv) == 0) {
		rpc_fail(req, RPC_INVALID_PARAMS, "argv must not be empty");
		return;
	}
	if (snap_req_applies(&sp.snap, sp.argv) && !snapshot_shell_supported(sp.snap.name)) {
		rpc_fail(req, RPC_INVALID_PARAMS, "shell snapshots are unsupported for shell `%s`",
		    sp.snap.name);
		return;
	}
	if (sp.sandbox != NULL)
		netproxy_before_sandbox();
	/* the reference prepares the sandbox before it looks at cwd and the id */
	if (sandbox_prepare(sp.sandbox, params, &sbx, &code, msg, sizeof(msg)) == -1) {
		rpc_fail(req, code, "%s", msg);
		return;
	}
	if ((cwd = uri_to_path_n(sp.cwd_uri, sp.cwd_len, &e, &code)) == NULL) {
		/* a well-formed URI naming no local path: the reference's cwd wording */
		if (code == RPC_INVALID_REQUEST)
			rpc_fail(req, RPC_INVALID_PARAMS, "cwd URI `%s` is not valid on this "
			    "exec-server host: %s", sp.cwd_uri, jx_err_whole(e.msg));
		else
			rpc_fail_params(req, &e);
		goto done;
	}
	if (proc_find(sp.id) != NULL) {
		rpc_fail(req, RPC_INVALID_REQUEST, "process %s already exists", sp.id);
		goto done;
	}
	if (sp.network_proxy != NULL && !netproxy_enabled()) {
		rpc_fail(req, RPC_INVALID_REQUEST, "network proxy launch is not supported");
		goto done;
	}
	if (*json_string_value(json_array_get(sp.argv, 0)) == '\0') {
		rpc_fail_kind(req, RPC_INTERNAL_ERROR, SPAWN_FAILED, "missing program for %s spawn",
		    sp.tty ? "PTY" : "pipe");
		goto done;
	}
	if ((env = proc_env_build(sp.env, sp.env_policy, &e)) == NULL) {
		rpc_fail_params(req, &e);
		goto done;
	}
	use = snap_decide(&sp, &env, resumed, &snap_key, &snap);
	if (use == SNAP_WAIT) {
		if (proc_snapshot_wait(snap_key, req, params, n, start_resume) == 0)
			goto done;	/* answered once the capture is over */
		use = SNAP_PLAIN;
	}
	if (sp.tty && (words = proc_pty_nul_words(json_array_get(sp.argv, 0), cwd, env,
	    sp.arg0 != NULL)) != NULL) {
		rpc_fail_kind(req, RPC_INTERNAL_ERROR, SPAWN_FAILED, "%s", words);
		free(words);
		goto done;
	}
	if ((nul = start_nul(&sp, env)) != NULL) {
		rpc_fail_kind(req, RPC_INTERNAL_ERROR, SPAWN_FAILED, "%s", nul);
		goto done;
	}
	/*
	 * Only a process whose network is managed (networkProxy) is registered
	 * and gets the proxy's variables, as in the reference; any other gets
	 * exactly the environment it asked for.
	 */
	if (sp.network_proxy != NULL && start_register(req, params, sp.id, env, &reg) == -1)
		goto done;
	if (sandbox_finish(sbx, cwd, env) == -1) {
		rpc_fail(req, RPC_INVALID_REQUEST, "sandbox intent cannot be enforced on this executor");
		goto done;
	}
	if ((av = use == SNAP_PLAIN ? argv_array(sp.argv) :
	    snap_req_argv(&sp.snap, sp.argv, use == SNAP_CAPTURE ? NULL : snap)) == NULL ||
	    (envp = proc_env_array(env)) == NULL) {
		rpc_fail(req, RPC_INTERNAL_ERROR, "out of memory");
		goto done;
	}
	memset(&rq, 0, sizeof(rq));
	rq.restore_fd = -1;
	rq.argv = av;
	rq.arg0 = sp.arg0;
	rq.envp = envp;
	rq.cwd = cwd;
	rq.tty = sp.tty;
	rq.pipe_stdin = sp.pipe_stdin;
	rq.rows = 24;
	rq.cols = 80;
	rq.sandbox = sbx;
	rq.spawned = sandbox_spawned;
	rq.spawned_arg = sbx;
	if (use == SNAP_CAPTURE) {
		/* the capture runs where the command would, sandbox and all */
		rq.arg0 = NULL;
		/* its output is read as bytes: never through a terminal */
		rq.tty = 0;
		rq.pipe_stdin = 0;
		/* else it could not start: the command runs plain, with a sandbox of its own */
		again = start_capture(req, params, n, snap_key, &rq, sbx) == -1;
		use = SNAP_PLAIN;
		goto done;
	}
	if (use == SNAP_RESTORE && snapshot_uses_fd(sp.snap.name) &&
	    (rq.restore_fd = restore_fd = snapshot_fd(snap, sp.snap.name)) == -1) {
		rpc_fail_kind(req, RPC_INTERNAL_ERROR, SPAWN_FAILED,
		    "cannot restore the shell snapshot");
		goto done;
	}
	if (proc_spawn(&rq, &res, &err, msg, sizeof(msg)) == -1) {
		rpc_fail_kind(req, RPC_INTERNAL_ERROR, spawn_kind(err), "%s", msg);
		goto done;
	}
	if ((p = proc_new(sp.id)) == NULL) {
		kill(-res.pid, SIGKILL);
		rpc_fail(req, RPC_INTERNAL_ERROR, "out of memory");
		goto done;
	}
	p->netreg = reg;
	reg = NULL;
	p->pid = res.pid;
	p->sandboxed = sbx != NULL;
	p->guards = sandbox_take_guards(sbx);
	sandbox_started(sbx, res.pid);
	p->tty = sp.tty;
	p->writable = sp.tty || sp.pipe_stdin;
	log_info("process %s started: pid %ld, %s", p->id, (long)p->pid, av[0]);
	/* the response goes first, then the output notifications */
	rpc_reply(req, json_pack("{s:o,s:s}", "processId", jx_id_json(sp.id), "sandboxType",
	    sandbox_type(sbx)));
	proc_start_io(p, res.out_fd, res.err_fd, res.in_fd);
done:
	if (use == SNAP_CAPTURE)	/* refused before it could start */
		snapshot_done(snap_key, NULL, 0, ev_now());
	if (restore_fd != -1)
		close(restore_fd);
	free(snap_key);
	netproxy_unregister(reg);
	sandbox_plan_free(sbx);
	free(cwd);
	free(av);
	free(envp);
	json_decref(env);
	if (again)
		start_with(req, params, n, 1);
}
