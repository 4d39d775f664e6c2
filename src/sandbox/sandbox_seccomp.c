/*
 * A sandboxed child's seccomp filter, one per network mode: compiled at
 * build time from seccomp_rules.c (which says what each refuses), so the
 * child after fork only makes one system call and allocates nothing.
 * execd's own filters are in sandbox_self.c.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include <linux/seccomp.h>

#include <errno.h>
#include <unistd.h>

#include "sandbox/sandbox_int.h"
#include "sandbox/seccomp_progs.h"
#include "util/fdpass.h"

const struct sock_fprog *
sbx_filter(enum sbx_net net, char *why, size_t whylen)
{
	switch (net) {
	case SBX_NET_OFF:
		return &seccomp_child_off_prog;
	case SBX_NET_MANAGED:
		return &seccomp_child_managed_prog;
	case SBX_NET_ENABLED:
		break;
	}
	return &seccomp_child_enabled_prog;
}

const struct sock_fprog *
sbx_filter_transparent(void)
{
	return &seccomp_child_transparent_prog;
}

/*
 * Transparent TCP's, in the command's process: the listener goes to execd
 * over sv before the command runs; this process keeps no copy (a
 * listener only execd holds, and once execd closes it, every notified
 * call fails with ENOSYS: closed, not open).
 */
int
sbx_filter_install_notify(const struct sock_fprog *prog, int sv)
{
	struct iovec	iov;
	char		one = 1;
	int		fd, e = 0;

	if ((fd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
	    SECCOMP_FILTER_FLAG_NEW_LISTENER, prog)) == -1)
		return errno;
	iov.iov_base = &one;
	iov.iov_len = 1;
	if (fdpass_send(sv, &iov, 1, &fd, 1, MSG_NOSIGNAL) == -1)
		e = errno;
	close(fd);
	return e;
}

/* In the child, after no_new_privs: one system call, nothing allocated. */
int
sbx_filter_install(const struct sock_fprog *prog)
{
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, prog) == -1)
		return errno;
	return 0;
}
