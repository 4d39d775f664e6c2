/* Blocking whole-buffer I/O on a descriptor, retried across EINTR. */
#ifndef EXECD_FDIO_H
#define EXECD_FDIO_H

#include <stddef.h>

/* 0, or the errno of the write that failed (EAGAIN on a non-blocking fd). */
int	fd_write_all(int fd, const void *p, size_t n);
/* 0, or the errno of the read that failed; EPIPE at end of file. */
int	fd_read_full(int fd, void *p, size_t n);

#endif
