#include "config.h"

#include "fs.h"

const struct rpc_method fs_methods[] = {
	{ NULL, NULL, NULL },
};
