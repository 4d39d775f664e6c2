/* Growing a child's output pipe once it has filled (proc_pipe.c). */
#ifndef EXECD_PROC_PIPE_H
#define EXECD_PROC_PIPE_H

#include <stddef.h>

/*
 * A read took all the pipe fd held up to its default size: grow it, within
 * the instance's budget.  The bytes it grew by (0: it did not), to give
 * back with proc_pipe_release() when the pipe is closed.
 */
size_t	proc_pipe_grow(int fd);
void	proc_pipe_release(size_t bytes);

struct proc;
struct ev_io;
/* bytes were read from p's stream io in this wakeup; short: the pipe is empty */
void	proc_pipe_pace(struct proc *p, struct ev_io *io, size_t bytes, int short_read);
/* p's stream io closes, or p goes: nothing to resume */
void	proc_pipe_unpace(struct proc *p, struct ev_io *io);

#endif
