/*
 * Internal to the process module: one managed process and the table of
 * them.  The table reports upward through struct proc_events, registered
 * by its JSON-RPC face (proc_rpc.h).
 */
#ifndef EXECD_PROC_TABLE_H
#define EXECD_PROC_TABLE_H

#include <sys/types.h>

#include <stdint.h>

#include "buf.h"
#include "evloop.h"
#include "proc/proc_out.h"

struct sbx_guard;
struct proc;

#define PROC_WRITE_IDS	4096	/* remembered process/write ids per process */

/* What the table tells, and asks, the layer above it. */
struct proc_events {
	/* a chunk of output was kept as seq */
	void	(*output)(struct proc *p, uint64_t seq, enum proc_stream s,
		    const void *data, size_t len);
	/* the process exited (p->exit_code), as event seq */
	void	(*exited)(struct proc *p, uint64_t seq);
	/* exited and all its output read, as event seq */
	void	(*closed)(struct proc *p, uint64_t seq);
	/* p has new output or a new state */
	void	(*changed)(struct proc *p);
	/* p is about to be forgotten */
	void	(*discarded)(struct proc *p);
	/* the client's queue is full: leave output in the pipes */
	int	(*congested)(void);
	/* a client is attached now */
	int	(*attached)(void);
};

struct proc {
	char			*id;
	pid_t			 pid;
	int			 tty;
	int			 writable;	/* tty or pipeStdin */
	struct ev_io		 out_io, err_io, in_io;
	int			 out_open, err_open, in_open;
	int			 paused;	/* output reading stopped for back-pressure */
	unsigned		 pipe_asked;	/* bit per stream (out, err): asked to grow */
	size_t			 pipe_grown[2];	/* bytes out's and err's pipes grew by */
	size_t			 burst[2];	/* bytes read since the stream was last quiet */
	uint64_t		 burst_last[2];	/* ev_now() of its last read */
	unsigned		 paced;		/* bit per stream: reading held (proc_pipe.c) */
	struct ev_timer		 pace_timer;
	struct buf		 inbuf;		/* stdin not yet written */
	uint64_t		 next_seq;
	struct out_ring		 ring;
	int			 exited, closed;
	int			 terminated;	/* process/terminate found it running */
	int			 exit_code;
	int			 sandboxed;	/* started with a sandbox plan */
	int			 sandbox_denied;
	char			*write_ids[PROC_WRITE_IDS];
	size_t			 nwrite_ids;
	void			*face;		/* the layer above's (parked reads) */
	struct ev_timer		 kill_timer;	/* SIGKILL after the grace period */
	struct ev_timer		 expire_timer;	/* forget a closed process */
	void			*netreg;	/* execd-proxy registration */
	struct sbx_guard	*guards;	/* protected-name placeholders it needs */
	struct proc		*next;
};

struct proc_limits;

void		 proc_init(const struct proc_events *ev, const struct proc_limits *lim);
struct proc	*proc_find(const char *id);
struct proc	*proc_new(const char *id);
void		 proc_start_io(struct proc *p, int out_fd, int err_fd, int in_fd);
void		 proc_signal_group(struct proc *p, int sig);
void		 proc_terminate(struct proc *p);
/*
 * queue stdin bytes; -1 after a terminate or when over the limit.  Bytes
 * for a process that ended by itself are dropped, as the reference does.
 */
int		 proc_write_stdin(struct proc *p, const void *data, size_t len);
int		 proc_seen_write_id(struct proc *p, const char *wid);
void		 proc_remember_write_id(struct proc *p, const char *wid);
void		 proc_discard(struct proc *p);
/* read output again after a pause for back-pressure */
void		 proc_resume_output(void);
void		 proc_each(void (*fn)(struct proc *));

#endif
