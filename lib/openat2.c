#include "config.h"

#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "openat2.h"

#define OPENAT2_RETRIES	16

int
openat2_retry(int dfd, const char *path, int oflags, unsigned long long resolve)
{
	struct open_how	how;
	int		fd, i;

	memset(&how, 0, sizeof(how));
	how.flags = (unsigned long long)(oflags | O_CLOEXEC);
	how.resolve = resolve;
	for (i = 0; i < OPENAT2_RETRIES; i++)
		if ((fd = (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how))) != -1 ||
		    errno != EAGAIN)
			break;
	return fd;
}
