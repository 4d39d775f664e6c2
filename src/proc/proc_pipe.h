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

#endif
