/* Our direct children, as the kernel lists them: a subreaper's view. */
#include "config.h"

#include <sys/types.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "util/children.h"

/* PIDs of our direct children, from /proc (they include adopted orphans). */
size_t
children_list(pid_t *out, size_t max)
{
	char		 path[320], buf[4096], *s, *end;
	struct dirent	*de;
	DIR		*d;
	size_t		 n = 0;
	ssize_t		 r;
	int		 fd;

	if ((d = opendir("/proc/self/task")) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL && n < max) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/children", de->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
			continue;
		r = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (r <= 0)
			continue;
		buf[r] = '\0';
		for (s = buf; n < max; s = end) {
			long v = strtol(s, &end, 10);
			if (end == s)
				break;
			out[n++] = (pid_t)v;
		}
	}
	closedir(d);
	return n;
}
