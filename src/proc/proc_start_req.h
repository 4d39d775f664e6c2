/*
 * process/start's params (WireExecParams) decoded into one struct, with
 * the reference's errors in its order (proc_start_req.c); the handler is
 * proc_methods.c.
 */
#ifndef EXECD_PROC_START_REQ_H
#define EXECD_PROC_START_REQ_H

#include <stddef.h>

#include <jansson.h>

#include "jsonx.h"
#include "proc/proc_snapshot.h"

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

struct serde_struct;

/* Its fields, for serde_struct_params() to read its sequence form as a map. */
extern const struct serde_struct proc_start_struct;

/* Decode params (n: serde_struct_params' count); -1 with e. Points into params. */
int	 proc_start_parse(json_t *params, long n, struct start_params *sp,
	    struct jx_err *e);
/*
 * No argument or variable may reach exec cut at a NUL: the reference's
 * words refusing the spawn (env is the final environment), or NULL.
 */
const char *proc_start_nul(const struct start_params *sp, json_t *env);

#endif
