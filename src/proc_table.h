/* Internal to the process module: one managed process and the table of them. */
#ifndef EXECD_PROC_TABLE_H
#define EXECD_PROC_TABLE_H

#include <sys/types.h>

#include <stdint.h>

#include "buf.h"
#include "evloop.h"
#include "proc_out.h"
#include "rpc.h"

struct sbx_guard;

#define PROC_WRITE_IDS	4096	/* remembered process/write ids per process */

struct proc_waiter {
	struct rpc_req		*req;
	struct proc		*p;
	uint64_t		 after;
	uint64_t		 max_bytes;
	int			 has_max;
	struct ev_timer		 timer;
	struct proc_waiter	*next;
};

struct proc {
	char			*id;
	pid_t			 pid;
	int			 tty;
	int			 writable;	/* tty or pipeStdin */
	struct ev_io		 out_io, err_io, in_io;
	int			 out_open, err_open, in_open;
	int			 paused;	/* output reading stopped for back-pressure */
	struct buf		 inbuf;		/* stdin not yet written */
	uint64_t		 next_seq;
	struct out_ring		 ring;
	int			 exited, closed;
	int			 exit_code;
	int			 sandboxed;	/* started with a sandbox plan */
	int			 sandbox_denied;
	char			*write_ids[PROC_WRITE_IDS];
	size_t			 nwrite_ids;
	struct proc_waiter	*waiters;
	struct ev_timer		 kill_timer;	/* SIGKILL after the grace period */
	struct ev_timer		 expire_timer;	/* forget a closed process */
	void			*netreg;	/* execd-proxy registration */
	struct sbx_guard	*guards;	/* protected-name placeholders it needs */
	struct proc		*next;
};

struct proc	*proc_find(const char *id);
struct proc	*proc_new(const char *id);
void		 proc_start_io(struct proc *p, int out_fd, int err_fd, int in_fd);
void		 proc_signal_group(struct proc *p, int sig);
void		 proc_terminate(struct proc *p);
/* process/read: answer now if possible, else park the waiter. */
void		 proc_read(struct rpc_req *req, struct proc *p, uint64_t after,
		    int has_max, uint64_t max_bytes, uint64_t wait_ms);
/* queue stdin bytes; -1 when stdin is gone */
int		 proc_write_stdin(struct proc *p, const void *data, size_t len);
int		 proc_seen_write_id(struct proc *p, const char *wid);
void		 proc_remember_write_id(struct proc *p, const char *wid);
void		 proc_discard(struct proc *p);
/* answer the parked reads that p now satisfies */
void		 proc_wake(struct proc *p);

#endif
