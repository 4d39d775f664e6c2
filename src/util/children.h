/* Our direct children, as the kernel lists them. */
#ifndef EXECD_CHILDREN_H
#define EXECD_CHILDREN_H

#include <sys/types.h>

#include <stddef.h>

/* PIDs of our direct children, adopted orphans included (for a subreaper); the count. */
size_t	children_list(pid_t *out, size_t max);

#endif
