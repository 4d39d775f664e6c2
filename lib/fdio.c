#include "config.h"

#include <errno.h>
#include <limits.h>
#include <unistd.h>

#include "fdio.h"

int
fd_write_all(int fd, const void *p, size_t n)
{
	const char	*s = p;
	ssize_t		 w;

	while (n > 0) {
		if ((w = write(fd, s, n > SSIZE_MAX ? SSIZE_MAX : n)) == -1) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

int
fd_read_full(int fd, void *p, size_t n)
{
	char	*s = p;
	ssize_t	 r;

	while (n > 0) {
		if ((r = read(fd, s, n > SSIZE_MAX ? SSIZE_MAX : n)) == -1) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (r == 0)
			return EPIPE;
		s += r;
		n -= (size_t)r;
	}
	return 0;
}
