/*
 * The process table's JSON-RPC face: the process methods, the
 * notifications of output, exit and close, and the parked process/read
 * long-polls.  The table itself (proc_table.h) knows no JSON-RPC.
 */
#ifndef EXECD_PROC_RPC_H
#define EXECD_PROC_RPC_H

#include <stdint.h>

#include "rpc/rpc.h"

struct proc;
struct proc_limits;

extern const struct rpc_method proc_methods[];

/* The table's entries for a running process (proc_io_methods.c) */
void	proc_m_read(struct rpc_req *, json_t *);
void	proc_m_write(struct rpc_req *, json_t *);
void	proc_m_signal(struct rpc_req *, json_t *);
void	proc_m_terminate(struct rpc_req *, json_t *);

/*
 * Start the process table with the face's callbacks.  What closes while no
 * client is attached is kept for lim->detached_keep_ms, until the session
 * ends (proc_end_session).
 */
void	proc_rpc_init(const struct proc_limits *lim);

/* Within the face (proc_read.c): process/read, answered now or parked. */
void	proc_read(struct rpc_req *req, struct proc *p, uint64_t after,
	    int has_max, uint64_t max_bytes, uint64_t wait_ms);
/* answer the parked reads that p now satisfies */
void	proc_wake(struct proc *p);
/* p is forgotten: its parked reads are answered with an error */
void	proc_read_discard(struct proc *p);

#endif
