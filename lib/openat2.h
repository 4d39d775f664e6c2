/* openat2(2), for lookups that must not follow what a race swapped in. */
#ifndef EXECD_OPENAT2_H
#define EXECD_OPENAT2_H

#include <linux/openat2.h>

/*
 * openat2 with O_CLOEXEC added, tried again while the kernel answers
 * EAGAIN (a rename elsewhere raced a RESOLVE_* lookup), up to 16 times;
 * -1 with errno (EAGAIN if it kept racing).
 */
int	openat2_retry(int dfd, const char *path, int oflags, unsigned long long resolve);

#endif
