/* The table of managed processes of this session, as the rest of execd sees it. */
#ifndef EXECD_PROC_H
#define EXECD_PROC_H

#include <sys/types.h>

#include <stddef.h>

/* The process table's limits, fixed at start-up. */
struct proc_limits {
	size_t		 max_stdin;		/* stdin bytes queued per process */
	size_t		 retention_bytes;	/* output kept per process */
	size_t		 retention_chunks;
	unsigned	 kill_grace_ms;		/* SIGTERM -> SIGKILL */
	unsigned	 closed_keep_ms;	/* a closed process stays readable */
	/* one that closes with no client attached: at least this (the resume TTL) */
	unsigned	 detached_keep_ms;
};

/* Kill every process group now (SIGKILL); children are still reaped by the loop. */
void	proc_kill_all(void);
/* Kill whatever is left among our children (escaped daemons), then reap them. */
void	proc_final_sweep(void);
size_t	proc_count(void);
/* The session is over: kill everything, forget every process. */
void	proc_end_session(void);

#endif
