#include "config.h"

#include <errno.h>
#include <fcntl.h>
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

ssize_t
path_read_small(const char *path, char *buf, size_t size)
{
	ssize_t	n;
	int	fd;

	if (size == 0 || (fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	do
		n = read(fd, buf, size - 1);
	while (n == -1 && errno == EINTR);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return n;
}
