/* fs methods: files, directories, trees, block handles, walks. */
#ifndef EXECD_FS_H
#define EXECD_FS_H

#include "rpc/rpc.h"

extern const struct rpc_method fs_methods[];

/* Once at start-up, before the first connection: capabilities, hooks. */
void	fs_init(void);

#endif
