/* Building a child's environment from process/start's env and envPolicy. */
#ifndef EXECD_PROC_ENV_H
#define EXECD_PROC_ENV_H

#include <jansson.h>

#include "jsonx.h"

/* A new object: the child's environment. NULL with e set on bad params. */
json_t	*proc_env_build(json_t *env, json_t *policy, struct jx_err *e);
/* NULL-terminated "K=V" array, malloc'd in one block. */
char	**proc_env_array(json_t *env);

#endif
