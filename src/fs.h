/* The filesystem methods. */
#ifndef EXECD_FS_H
#define EXECD_FS_H

#include "rpc.h"

extern const struct rpc_method fs_methods[];

#endif
