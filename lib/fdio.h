/* Blocking whole-buffer I/O on a descriptor, retried across EINTR. */
#ifndef EXECD_FDIO_H
#define EXECD_FDIO_H

#include <stddef.h>
#include <sys/types.h>

/* 0, or the errno of the write that failed (EAGAIN on a non-blocking fd). */
int	fd_write_all(int fd, const void *p, size_t n);
/* 0, or the errno of the read that failed; EPIPE at end of file. */
int	fd_read_full(int fd, void *p, size_t n);
/*
 * A small file whole in one read (what /proc gives at once), NUL-terminated
 * in buf of size bytes: its length, or -1 (open or read failed, or empty).
 */
ssize_t	path_read_small(const char *path, char *buf, size_t size);

#endif
