/* process/start's params decoded once, in the reference's order and words. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc/proc_env.h"
#include "proc/proc_start_req.h"
#include "rpc/rpc.h"
#include "rpc/rpc_serde.h"
#include "uri.h"


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
const struct serde_struct proc_start_struct = {
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
	char		*path;
	enum uri_status	 us;

	if (sp->cwd_uri == NULL)
		return 0;
	if ((path = uri_to_path_n(sp->cwd_uri, sp->cwd_len, e, &us)) == NULL &&
	    us == URI_MALFORMED)
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
int
proc_start_parse(json_t *params, long n, struct start_params *sp, struct jx_err *e)
{
	return serde_struct_seq_end(&proc_start_struct, n, jx_in_order(params, start_decode, sp, e),
	    e);
}

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
 * the reference's process library does, with its words (0.171.0: one for
 * the arguments, another for the environment, but a pty spawn that looks
 * its bare program up along PATH says the arguments' words of it).
 */
const char *
proc_start_nul(const struct start_params *sp, json_t *env)
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
		return sp->tty && strchr(json_string_value(json_array_get(sp->argv, 0)), '/') ==
		    NULL ? "nul byte found in provided data" : "data provided contains a nul byte";
	return NULL;
}

