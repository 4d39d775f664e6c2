/*
 * launchd hands a daemon its sockets only when asked by name, and systemd
 * waits for Type=notify services to say they are ready; both are here so
 * main.c stays the same on every platform.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef __APPLE__
#include <launch.h>
#endif

#include "log.h"
#include "transport/activate.h"

#ifdef __APPLE__
int
activate_launchd(int *fds, int max)
{
	int	*lfds = NULL, n = 0, r;
	size_t	 cnt = 0, i;

	r = launch_activate_socket(ACTIVATE_LAUNCHD_SOCKETS, &lfds, &cnt);
	if (r == ESRCH || r == ENOENT) {
		/* not under launchd, or a plist without the key (inetdCompatibility) */
		log_debug("launch_activate_socket %s: %s", ACTIVATE_LAUNCHD_SOCKETS, strerror(r));
		return 0;
	}
	if (r != 0) {
		log_warnx("launch_activate_socket %s: %s", ACTIVATE_LAUNCHD_SOCKETS, strerror(r));
		return 0;
	}
	/* one descriptor per address family the plist's Listeners resolved to */
	for (i = 0; i < cnt; i++) {
		if (n < max) {
			fcntl(lfds[i], F_SETFD, FD_CLOEXEC);
			fds[n++] = lfds[i];
		} else {
			log_warnx("launchd passed more than %d sockets: ignoring fd %d", max, lfds[i]);
			close(lfds[i]);
		}
	}
	free(lfds);
	return n;
}
#else
int
activate_launchd(int *fds, int max)
{
	return 0;
}
#endif

void
activate_ready(void)
{
	static const char	 ready[] = "READY=1";
	struct sockaddr_un	 sun = { .sun_family = AF_UNIX };
	const char		*path = getenv("NOTIFY_SOCKET");
	socklen_t		 len;
	size_t			 n;
	int			 fd;

	if (path == NULL)
		return;
	n = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || n < 2 || n >= sizeof(sun.sun_path)) {
		log_warnx("NOTIFY_SOCKET=%s: not a Unix socket path; not notifying", path);
		goto out;
	}
	memcpy(sun.sun_path, path, n);
	if (path[0] == '@')
		sun.sun_path[0] = '\0';		/* Linux abstract namespace */
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1) {
		log_warn("NOTIFY_SOCKET: socket");
		goto out;
	}
	if (sendto(fd, ready, sizeof(ready) - 1, MSG_NOSIGNAL, (struct sockaddr *)&sun, len) == -1)
		log_warn("NOTIFY_SOCKET %s", path);
	else
		log_debug("told the service manager READY=1");
	close(fd);
out:
	/* the processes we start are not the service systemd waits for */
	unsetenv("NOTIFY_SOCKET");
}
