/*
 * A sandboxed child's seccomp filter, one per network mode: compiled at
 * build time from seccomp_rules.c (which says what each refuses), so the
 * child after fork only makes one system call and allocates nothing.
 * execd's own filters are in sandbox_self.c.
 */
#include "config.h"

#include <sys/syscall.h>

#include <linux/seccomp.h>

#include <errno.h>
#include <unistd.h>

#include "sandbox/sandbox_int.h"
#include "sandbox/seccomp_progs.h"

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

/* In the child, after no_new_privs: one system call, nothing allocated. */
int
sbx_filter_install(const struct sock_fprog *prog)
{
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, prog) == -1)
		return errno;
	return 0;
}
