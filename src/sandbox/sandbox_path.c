/*
 * A path opened as planning named it: no symlink followed on the way.  The
 * child's mounts and execd's placeholders both go through it, so a link
 * swapped in since a path was checked leads nowhere.
 */
#include "config.h"

#include <sys/syscall.h>

#include <linux/openat2.h>

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "sandbox/sandbox.h"
#include "sandbox/sandbox_int.h"

int
sbx_open_real(const char *path, int flags)
{
	struct open_how	how = { .flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
	    .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	int		fd, tries = 0;

	/* EAGAIN: a rename elsewhere raced the lookup; a few more tries */
	do
		fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
	while (fd == -1 && errno == EAGAIN && ++tries < 16);
	return fd;
}
