/* Internal to the snapshot layer: one cache entry. */
#ifndef EXECD_SNAPSHOT_INT_H
#define EXECD_SNAPSHOT_INT_H

#include "snapshot/snapshot.h"

struct snapshot {
	char			*key;
	enum snapshot_state	 state;
	uint64_t		 stamp;		/* last use, or the failure's time */
	char			*script;	/* what the restored shell sources */
	size_t			 script_len;
	json_t			*env;		/* the login shell's environment */
	struct snapshot		*next;
};

/* Read a capture's output into s; -1 when it holds no snapshot. */
int	snapshot_parse(struct snapshot *s, const char *out, size_t len);

#endif
