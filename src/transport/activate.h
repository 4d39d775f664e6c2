/*
 * Service-manager integration beyond systemd's LISTEN_FDS (listen.c):
 * launchd's named sockets on macOS, and systemd's readiness notification.
 */
#ifndef EXECD_ACTIVATE_H
#define EXECD_ACTIVATE_H

/* The Sockets key of the launchd plist whose listeners execd serves. */
#define ACTIVATE_LAUNCHD_SOCKETS	"Listeners"

/*
 * macOS: the listening sockets launchd holds for us (at most max, close-on-exec),
 * or 0 when not started by launchd.  Elsewhere always 0.
 */
int	activate_launchd(int *fds, int max);

/* Type=notify: tell systemd the sockets are being served (READY=1); once. */
void	activate_ready(void);

#endif
