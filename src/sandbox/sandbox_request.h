/* A process's sandbox request read: decoded, and its environment finished (sandbox_request.c). */
#ifndef EXECD_SANDBOX_REQUEST_H
#define EXECD_SANDBOX_REQUEST_H

#include <stddef.h>

#include <jansson.h>

struct sandbox_plan;

/*
 * Decoding, before lifecycle gating as the reference decodes params:
 * -1 with -32602 and the reference's message for a malformed `sandbox` or
 * managedNetwork.  params are the whole process/start params.  *ctx
 * becomes the sandbox context (the caller's to json_decref, NULL for no
 * sandbox), built once for sandbox_prepare().
 */
int	 sandbox_check(json_t *sandbox, json_t *params, json_t **ctx, int *code, char *msg,
	    size_t msglen);
/* managedNetwork.transparentTcp is true (sandbox_check has decoded it). */
int	 sandbox_managed_transparent(json_t *params);
/* The sandbox asks for Windows' native MXC level, which no Linux executor has. */
int	 sandbox_wants_mxc(json_t *sandbox);
/*
 * The command's working directory (as a path) and final environment (an
 * object of strings): loopback proxy endpoints named by its proxy
 * variables are routed out of a managed network namespace, as the
 * managedNetwork loopbackPorts are.  -1 when that cannot be done.
 */
int	 sandbox_finish(struct sandbox_plan *plan, const char *cwd, json_t *env);

#endif
