/*
 * activate_launchd() as compiled for macOS (-D__APPLE__), run against a fake
 * launch_activate_socket(3) with the behaviours launch.h documents: ESRCH
 * when not started by launchd, ENOENT for a name the plist does not have,
 * otherwise a malloc'd array of descriptors the caller owns and frees.
 * usage: activate_launchd none|nokey|error|two|many; exit 0 when right.
 */
#include "config.h"

#include <sys/socket.h>

#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <launch.h>

#include "log.h"
#include "transport/activate.h"

static const char	*behaviour;
static int		 given[32];
static size_t		 ngiven;

static int
listener(void)
{
	struct sockaddr_in	sin = { .sin_family = AF_INET,
				    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int			fd;

	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 || listen(fd, 1) == -1) {
		perror("listener");
		exit(99);
	}
	return fd;
}

int
launch_activate_socket(const char *name, int **fds, size_t *cnt)
{
	size_t	i, n;

	if (strcmp(behaviour, "none") == 0)
		return ESRCH;
	if (strcmp(behaviour, "error") == 0)
		return EPERM;
	if (strcmp(behaviour, "nokey") == 0 || strcmp(name, "Listeners") != 0)
		return ENOENT;
	n = strcmp(behaviour, "many") == 0 ? 20 : 2;
	if ((*fds = calloc(n, sizeof(int))) == NULL)
		return ENOMEM;
	for (i = 0; i < n; i++)
		(*fds)[i] = given[i] = listener();
	*cnt = ngiven = n;
	return 0;
}

static int
fail(const char *what)
{
	fprintf(stderr, "activate_launchd %s: %s\n", behaviour, what);
	return 1;
}

int
main(int argc, char *argv[])
{
	int	fds[16], n, i, v;

	if (argc != 2)
		return 2;
	behaviour = argv[1];
	log_init("activate_launchd", LOG_DEST_STDERR, LOG_INFO);
	n = activate_launchd(fds, 16);
	if (strcmp(behaviour, "none") == 0 || strcmp(behaviour, "nokey") == 0 ||
	    strcmp(behaviour, "error") == 0)
		return n == 0 ? 0 : fail("expected no sockets");
	if (n != (int)(ngiven < 16 ? ngiven : 16))
		return fail("wrong number of sockets");
	for (i = 0; i < n; i++) {
		if (fds[i] != given[i])
			return fail("not the sockets launchd gave");
		if (!(fcntl(fds[i], F_GETFD) & FD_CLOEXEC))
			return fail("a socket is not close-on-exec");
		v = 0;
		if (getsockopt(fds[i], SOL_SOCKET, SO_ACCEPTCONN, &v, &(socklen_t){ sizeof(v) }) == -1 ||
		    !v)
			return fail("not a listening socket");
	}
	for (i = n; i < (int)ngiven; i++)
		if (fcntl(given[i], F_GETFD) != -1 || errno != EBADF)
			return fail("a socket beyond the limit was left open");
	return 0;
}
