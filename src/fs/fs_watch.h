/* fs/watchMissing and its fs/missingChanged notification, on inotify. */
#ifndef EXECD_FS_WATCH_H
#define EXECD_FS_WATCH_H

#include "rpc/rpc.h"

extern const struct rpc_method fs_watch_methods[];

void	fs_watch_init(void);

#endif
