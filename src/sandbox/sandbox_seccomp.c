/*
 * Seccomp filters, built with libseccomp for the running architecture.
 *
 * A sandboxed child gets one filter, compiled once per network mode in
 * the parent (exported as BPF, so that the child after fork only makes
 * one system call and allocates nothing).  Default: allow; listed calls
 * fail with EPERM, as the reference's filter answers:
 *  - always: ptrace, process_vm_readv/writev, kernel modules, kexec, bpf,
 *    perf_event_open, the keyring calls, every mount call (the mount
 *    namespace and Landlock must stay as built), io_uring (it makes
 *    sockets without socket(2)), userfaultfd, open_by_handle_at, and the
 *    host-wide calls below; socket/socketpair for AF_VSOCK;
 *  - network off: socket and socketpair for any family but AF_UNIX, and
 *    no address at all, as the reference's restricted filter: connect,
 *    bind, listen, accept and accept4, sendto with a destination, and
 *    socket() for an AF_UNIX datagram socket (unconnected, its only use
 *    would be sendmsg to a host daemon's socket by path, which seccomp
 *    cannot see); socketpair() and send() on its ends keep working;
 *  - managed network: socket only for AF_INET and AF_INET6 (the network
 *    namespace has nothing but the proxy routes), socketpair only for
 *    AF_UNIX: no AF_UNIX socket(), which could reach host daemons by path.
 * A sandboxed child's calls made for another architecture (int 0x80, x32)
 * kill it: the argument rules are built for the native one only.
 *
 * execd's own filters are in sandbox_self.c.
 */
#include "config.h"

#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <linux/seccomp.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <seccomp.h>

#include "log.h"
#include "sandbox/sandbox_int.h"

/* What no sandboxed command may do. */
static const char *const child_denied[] = {
	"ptrace", "process_vm_readv", "process_vm_writev",
	"init_module", "finit_module", "delete_module",
	"kexec_load", "kexec_file_load",
	"bpf", "perf_event_open",
	"add_key", "request_key", "keyctl",
	"mount", "umount2", "pivot_root", "mount_setattr", "move_mount", "open_tree",
	"fsopen", "fsconfig", "fsmount", "fspick",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"userfaultfd", "open_by_handle_at",
	"reboot", "swapon", "swapoff", "iopl", "ioperm", "acct", "uselib",
	NULL
};

/* With the network off: no address of any kind, AF_UNIX paths included. */
static const char *const no_address[] = {
	"connect", "bind", "listen", "accept", "accept4", NULL
};

int
sbx_deny_names(scmp_filter_ctx ctx, const char *const *names, char *why, size_t whylen)
{
	int	nr, rc;

	for (; *names != NULL; names++) {
		/* a call this architecture does not have needs no rule */
		if ((nr = seccomp_syscall_resolve_name(*names)) == __NR_SCMP_ERROR || nr < 0)
			continue;
		if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0)) < 0) {
			snprintf(why, whylen, "seccomp rule for %s: %s", *names, strerror(-rc));
			return -1;
		}
	}
	return 0;
}

static int
deny_arg0(scmp_filter_ctx ctx, int nr, enum scmp_compare op, unsigned v)
{
	return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, SCMP_A0_32(op, v));
}

/* socket(2)/socketpair(2) rules by address family (a 32-bit compare: it is an int). */
static int
family_rules(scmp_filter_ctx ctx, enum sbx_net net)
{
	int	sock = SCMP_SYS(socket), pair = SCMP_SYS(socketpair);
	int	rc = 0;
	unsigned f;

	switch (net) {
	case SBX_NET_ENABLED:
		rc = deny_arg0(ctx, sock, SCMP_CMP_EQ, AF_VSOCK);
		if (rc == 0)
			rc = deny_arg0(ctx, pair, SCMP_CMP_EQ, AF_VSOCK);
		break;
	case SBX_NET_OFF:
		rc = deny_arg0(ctx, sock, SCMP_CMP_NE, AF_UNIX);
		if (rc == 0)
			rc = deny_arg0(ctx, pair, SCMP_CMP_NE, AF_UNIX);
		if (rc == 0)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), sock, 1,
			    SCMP_A1_32(SCMP_CMP_MASKED_EQ, 0xf, SOCK_DGRAM));
		if (rc == 0)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(sendto), 1,
			    SCMP_A4_64(SCMP_CMP_NE, 0));
		break;
	case SBX_NET_MANAGED:
		rc = deny_arg0(ctx, sock, SCMP_CMP_LT, AF_INET);
		for (f = AF_INET + 1; rc == 0 && f < AF_INET6; f++)
			rc = deny_arg0(ctx, sock, SCMP_CMP_EQ, f);
		if (rc == 0)
			rc = deny_arg0(ctx, sock, SCMP_CMP_GT, AF_INET6);
		if (rc == 0)
			rc = deny_arg0(ctx, pair, SCMP_CMP_NE, AF_UNIX);
		break;
	}
	return rc;
}

/* The compiled program, read back from libseccomp's BPF export. */
static struct sock_fprog *
export_prog(scmp_filter_ctx ctx, char *why, size_t whylen)
{
	struct sock_fprog	*prog = NULL;
	off_t			 size;
	ssize_t			 n;
	void			*code = NULL;
	int			 fd, rc;

	if ((fd = memfd_create("execd-seccomp", MFD_CLOEXEC)) == -1) {
		snprintf(why, whylen, "memfd_create: %s", strerror(errno));
		return NULL;
	}
	if ((rc = seccomp_export_bpf(ctx, fd)) < 0) {
		snprintf(why, whylen, "seccomp_export_bpf: %s", strerror(-rc));
		goto out;
	}
	if ((size = lseek(fd, 0, SEEK_END)) <= 0 || size % sizeof(struct sock_filter) != 0 ||
	    size / sizeof(struct sock_filter) > BPF_MAXINSNS) {
		snprintf(why, whylen, "seccomp filter of unexpected size %lld", (long long)size);
		goto out;
	}
	if ((code = malloc((size_t)size)) == NULL || (prog = calloc(1, sizeof(*prog))) == NULL) {
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	if ((n = pread(fd, code, (size_t)size, 0)) != size) {
		snprintf(why, whylen, "reading the seccomp filter back: %s",
		    n == -1 ? strerror(errno) : "short read");
		free(prog);
		prog = NULL;
		goto out;
	}
	prog->len = (unsigned short)(size / sizeof(struct sock_filter));
	prog->filter = code;
	code = NULL;
out:
	free(code);
	close(fd);
	return prog;
}

static struct sock_fprog *
build_child(enum sbx_net net, char *why, size_t whylen)
{
	scmp_filter_ctx		 ctx;
	struct sock_fprog	*prog = NULL;
	int			 rc;

	if ((ctx = seccomp_init(SCMP_ACT_ALLOW)) == NULL) {
		snprintf(why, whylen, "seccomp_init failed");
		return NULL;
	}
	/* the child sets no_new_privs itself, before Landlock */
	if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS)) < 0 ||
	    (rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0)) < 0) {
		snprintf(why, whylen, "seccomp_attr_set: %s", strerror(-rc));
		goto out;
	}
	if (sbx_deny_names(ctx, child_denied, why, whylen) == -1 ||
	    (net == SBX_NET_OFF && sbx_deny_names(ctx, no_address, why, whylen) == -1))
		goto out;
	if ((rc = family_rules(ctx, net)) < 0) {
		snprintf(why, whylen, "seccomp socket rules: %s", strerror(-rc));
		goto out;
	}
	prog = export_prog(ctx, why, whylen);
out:
	seccomp_release(ctx);
	return prog;
}

const struct sock_fprog *
sbx_filter(enum sbx_net net, char *why, size_t whylen)
{
	static struct sock_fprog	*cache[SBX_NET_MANAGED + 1];

	if (cache[net] == NULL && (cache[net] = build_child(net, why, whylen)) == NULL)
		log_warnx("sandbox: %s", why);
	return cache[net];
}

/* In the child, after no_new_privs: one system call, nothing allocated. */
int
sbx_filter_install(const struct sock_fprog *prog)
{
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, prog) == -1)
		return errno;
	return 0;
}
