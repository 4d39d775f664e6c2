#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peerns.h"

/* The levels of pid namespaces a status file lists (NSpid), or -1. */
static int
pidns_depth(const char *status)
{
	char	*line = NULL, *p;
	size_t	 cap = 0;
	FILE	*f;
	int	 n = -1;

	if ((f = fopen(status, "re")) == NULL)
		return -1;
	while (n == -1 && getline(&line, &cap, f) != -1) {
		if (strncmp(line, "NSpid:", 6) != 0)
			continue;
		for (n = 0, p = line + 6; *p != '\0'; n++) {
			p += strspn(p, " \t\n");
			if (*p == '\0')
				break;
			p += strcspn(p, " \t\n");
		}
	}
	free(line);
	fclose(f);
	return n;
}

int
peerns_same(pid_t pid, const char *ns)
{
	char		path[64];
	struct stat	peer, self;

	snprintf(path, sizeof(path), "/proc/self/ns/%s", ns);
	if (stat(path, &self) == -1)
		return 0;
	snprintf(path, sizeof(path), "/proc/%ld/ns/%s", (long)pid, ns);
	if (stat(path, &peer) == -1)
		return errno == EACCES || errno == EPERM ? -1 : 0;
	return peer.st_dev == self.st_dev && peer.st_ino == self.st_ino;
}

int
peerns_same_pid(pid_t pid)
{
	char	status[64];
	int	same, depth;

	if (pid <= 0)
		return -1;
	if ((same = peerns_same(pid, "pid")) != -1)
		return same;
	snprintf(status, sizeof(status), "/proc/%ld/status", (long)pid);
	if ((depth = pidns_depth(status)) == -1)
		return -1;
	return depth == pidns_depth("/proc/self/status");
}
