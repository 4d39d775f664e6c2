/*
 * The seccomp filters' rules, compiled with libseccomp at build time by
 * seccomp_gen (so no instance links libseccomp or spends its start-up
 * compiling them): execd's own floor and allow-list (sandbox_self.c says
 * what each is for) and a sandboxed child's filter per network mode
 * (sandbox_seccomp.c).
 *
 * A sandboxed child's filter: default allow; listed calls fail with EPERM,
 * as the reference's filter answers:
 *  - always: ptrace, process_vm_readv/writev, kernel modules, kexec, bpf,
 *    perf_event_open, the keyring calls, every mount call (the mount
 *    namespace and Landlock must stay as built), io_uring (it makes
 *    sockets without socket(2)), userfaultfd, open_by_handle_at, and the
 *    host-wide calls below; socket/socketpair for AF_VSOCK; prlimit64
 *    setting another process's limits (without a pid namespace, as with an
 *    unrestricted file system, execd and its spawn helper are in sight,
 *    and every later command inherits the helper's; Landlock does not
 *    see the call); a set-user-ID or set-group-ID mode (setid_rules);
 *  - network off: socket and socketpair for any family but AF_UNIX, and
 *    no address at all, as the reference's restricted filter: connect,
 *    bind, listen, accept and accept4, sendto with a destination, and no
 *    AF_UNIX datagram socket, by socket() or socketpair(), SOCK_RAW
 *    included (the kernel makes it a datagram socket): a datagram
 *    socket, even one of a connected pair, sends wherever sendmsg's
 *    address says, a host daemon's socket by path too, and seccomp cannot
 *    see that address; stream and seqpacket socketpairs keep working;
 *  - managed network: socket only for AF_INET and AF_INET6 (the network
 *    namespace has nothing but the proxy routes), socketpair only for
 *    AF_UNIX stream and seqpacket: no AF_UNIX socket(), and no datagram
 *    pair, which could reach host daemons by path.
 * A sandboxed child's calls made for another architecture (int 0x80, x32)
 * kill it: the argument rules are built for the native one only.
 */
#include "config.h"

#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <linux/seccomp.h>
#include <linux/sockios.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <termios.h>

#include "sandbox/seccomp_rules.h"

/* What execd, and so every command it starts, is refused. */
static const char *const floor_denied[] = {
	"init_module", "finit_module", "delete_module",
	"kexec_load", "kexec_file_load",
	"reboot", "swapon", "swapoff", "iopl", "ioperm", "acct", "uselib",
	NULL
};

/* An instance's calls, with no argument checks. */
static const char *const self_allowed[] = {
	/* memory (malloc, thread stacks, libcrypto) */
	"brk", "mmap", "munmap", "mremap", "mprotect", "madvise",
	/* descriptors, and the filesystem methods (openat and *at everywhere) */
	"read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev",
	"open", "openat", "openat2", "close", "close_range", "lseek", "dup", "dup2", "dup3",
	"fcntl", "pipe", "pipe2", "fstat", "stat", "lstat", "newfstatat", "statx",
	"fstatfs", "statfs", "getdents", "getdents64", "readlink", "readlinkat", "access",
	"faccessat", "faccessat2", "mkdir", "mkdirat", "unlink", "unlinkat", "rmdir",
	"rename", "renameat", "renameat2", "symlink", "symlinkat", "chmod", "fchmod",
	"fchmodat", "fchown", "fchownat", "utimensat", "fsync", "fdatasync",
	"ftruncate", "fadvise64", "flock", "copy_file_range", "sendfile", "getcwd", "umask",
	"memfd_create",		/* the children's filters, exported as BPF */
	"inotify_init1", "inotify_add_watch", "inotify_rm_watch",
	/* the event loop and libcurl's */
	"epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2",
	"poll", "ppoll", "select", "pselect6", "eventfd2", "signalfd4",
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "restart_syscall",
	/* sockets: the client, the sidecar, resume hand-overs, http/request, DNS */
	"socketpair", "connect", "bind", "listen", "accept", "accept4", "sendto",
	"recvfrom", "sendmsg", "recvmsg", "sendmmsg", "recvmmsg", "getsockname",
	"getpeername", "getsockopt", "setsockopt", "shutdown",
	/* supervising the commands: signals to their groups, reaping, relays */
	"kill", "tgkill", "tkill", "wait4", "waitid", "pidfd_open",
	/* transparent TCP (sandbox_tcp.c): a connect's address, the socket it is on */
	"process_vm_readv", "pidfd_getfd",
	/* identity and limits */
	"getpid", "getppid", "gettid", "getuid", "geteuid", "getgid", "getegid",
	"getgroups", "getresuid", "getresgid", "capget", "prlimit64", "getrlimit",
	"uname", "sysinfo", "sched_getaffinity", "sched_yield",
	/* threads (libcurl's resolver) and time */
	"futex", "set_robust_list", "rseq", "set_tid_address", "sigaltstack",
	"clock_gettime", "clock_getres", "gettimeofday", "time", "nanosleep",
	"clock_nanosleep", "getrandom",
	/* building the children's sandboxes (no restricting call of its own) */
	"landlock_create_ruleset", "landlock_add_rule",
	"seccomp",		/* libseccomp's probes; a filter only ever narrows */
	"exit", "exit_group",
#if defined(__SANITIZE_ADDRESS__)
	/* AddressSanitizer's runtime, LeakSanitizer's stop-the-world at exit */
	"ptrace", "personality", "getrusage",
#endif
	NULL
};

static const unsigned self_families[] = { AF_UNIX, AF_INET, AF_INET6, AF_NETLINK };

static const unsigned long self_ioctls[] = {
	TCGETS, TIOCGWINSZ, TIOCSWINSZ,	/* isatty(), the PTY's size */
	TIOCGPTN, TIOCSPTLCK,		/* posix_openpt, unlockpt, ptsname_r */
	FIONREAD, FIONBIO, FIOCLEX,	/* the resolver, libcurl */
	SIOCGIFINDEX,			/* scoped IPv6 addresses */
	/* transparent TCP's seccomp listeners */
	SECCOMP_IOCTL_NOTIF_RECV, SECCOMP_IOCTL_NOTIF_SEND, SECCOMP_IOCTL_NOTIF_ID_VALID,
	SECCOMP_IOCTL_NOTIF_ADDFD,
};

static const int self_prctls[] = {
	PR_GET_SECCOMP, PR_GET_NO_NEW_PRIVS, PR_GET_DUMPABLE, PR_CAPBSET_READ,
	PR_SET_NAME, PR_GET_NAME,
};

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

static int
deny_names(scmp_filter_ctx ctx, const char *const *names, char *why, size_t whylen)
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

/* A call refused for an AF_UNIX type (its low bits; the flags above them vary). */
static int
deny_type(scmp_filter_ctx ctx, int nr, unsigned type)
{
	return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
	    SCMP_A1_32(SCMP_CMP_MASKED_EQ, 0xf, type));
}

/*
 * No AF_UNIX datagram socket: sendmsg sends one wherever its address says,
 * connected pair or not, and SOCK_RAW is a datagram socket to the kernel.
 * (For socket() the family is AF_UNIX or refused already.)
 */
static int
no_datagrams(scmp_filter_ctx ctx, int sock)
{
	int	pair = SCMP_SYS(socketpair), rc;

	if ((rc = deny_type(ctx, pair, SOCK_DGRAM)) == 0)
		rc = deny_type(ctx, pair, SOCK_RAW);
	if (rc == 0 && sock)
		rc = deny_type(ctx, SCMP_SYS(socket), SOCK_DGRAM);
	if (rc == 0 && sock)
		rc = deny_type(ctx, SCMP_SYS(socket), SOCK_RAW);
	return rc;
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
			rc = no_datagrams(ctx, 1);
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
		if (rc == 0)
			rc = no_datagrams(ctx, 0);
		break;
	}
	return rc;
}

/* x86_64 also runs i386 and x32 code, aarch64 arm code. */
static int
add_compat_arches(scmp_filter_ctx ctx)
{
	uint32_t	native = seccomp_arch_native();
	int		rc = 0;

	if (native == SCMP_ARCH_X86_64) {
		if ((rc = seccomp_arch_add(ctx, SCMP_ARCH_X86)) == 0 || rc == -EEXIST)
			rc = seccomp_arch_add(ctx, SCMP_ARCH_X32);
	} else if (native == SCMP_ARCH_AARCH64)
		rc = seccomp_arch_add(ctx, SCMP_ARCH_ARM);
	return rc == -EEXIST ? 0 : rc;
}

/* A filter for every thread of ours; calls of a foreign architecture kill. */
static scmp_filter_ctx
filter_new(uint32_t dflt, char *why, size_t whylen)
{
	scmp_filter_ctx	ctx;
	int		rc;

	if ((ctx = seccomp_init(dflt)) == NULL) {
		snprintf(why, whylen, "seccomp_init failed");
		return NULL;
	}
	/*
	 * A binary tree of the call numbers, not a list: fewer instructions
	 * run per call, and the kernel's action cache, built at load by
	 * running the program for every call number, is quicker to make.
	 */
	if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS)) < 0 ||
	    (rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2)) < 0) {
		snprintf(why, whylen, "seccomp_attr_set: %s", strerror(-rc));
		seccomp_release(ctx);
		return NULL;
	}
	return ctx;
}

static int
allow_args(scmp_filter_ctx ctx)
{
	size_t	i;
	int	rc = 0;

	for (i = 0; rc == 0 && i < sizeof(self_families) / sizeof(*self_families); i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
		    SCMP_A0_32(SCMP_CMP_EQ, self_families[i]));
	for (i = 0; rc == 0 && i < sizeof(self_ioctls) / sizeof(*self_ioctls); i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
		    SCMP_A1_64(SCMP_CMP_EQ, self_ioctls[i]));
	for (i = 0; rc == 0 && i < sizeof(self_prctls) / sizeof(*self_prctls); i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1,
		    SCMP_A0_32(SCMP_CMP_EQ, (unsigned)self_prctls[i]));
#if defined(__SANITIZE_ADDRESS__)
	/* LeakSanitizer's tracer is a clone sharing the memory, not a thread */
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 0);
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 0);
#else
	/* threads only: a new process would be outside the helper's reach */
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
		    SCMP_A0_64(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
#endif
	/* its flags are out of a filter's sight: glibc falls back to clone */
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	return rc;
}

scmp_filter_ctx
rules_floor(char *why, size_t whylen)
{
	scmp_filter_ctx	ctx;
	int		rc;

	if ((ctx = filter_new(SCMP_ACT_ALLOW, why, whylen)) == NULL)
		return NULL;
	if ((rc = add_compat_arches(ctx)) < 0) {
		snprintf(why, whylen, "seccomp floor: %s", strerror(-rc));
		seccomp_release(ctx);
		return NULL;
	}
	if (deny_names(ctx, floor_denied, why, whylen) == -1) {
		seccomp_release(ctx);
		return NULL;
	}
	return ctx;
}

scmp_filter_ctx
rules_self(char *why, size_t whylen)
{
	scmp_filter_ctx		 ctx;
	const char *const	*n;
	int			 nr, rc = 0;

	if ((ctx = filter_new(SCMP_ACT_TRAP, why, whylen)) == NULL)
		return NULL;
	for (n = self_allowed; *n != NULL; n++) {
		/* a call this architecture does not have needs no rule */
		if ((nr = seccomp_syscall_resolve_name(*n)) == __NR_SCMP_ERROR || nr < 0)
			continue;
		if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0)) < 0 && rc != -EEXIST)
			break;
		rc = 0;
	}
	if (rc < 0 || (rc = allow_args(ctx)) < 0) {
		snprintf(why, whylen, "seccomp allow-list: %s", strerror(-rc));
		seccomp_release(ctx);
		return NULL;
	}
	return ctx;
}

/*
 * No set-user-ID or set-group-ID bit on what a command makes or changes:
 * nosuid holds in its own view only, and on the host such a file in a
 * writable root (/tmp, say) would run as execd's user for anyone.  Every
 * call that sets a mode, by the argument holding it; open and openat only
 * when they create (O_CREAT, O_TMPFILE).  openat2 keeps its mode where a
 * filter cannot see it: ENOSYS, and the C library falls back to openat.
 */
static int
setid_rules(scmp_filter_ctx ctx)
{
	static const struct {
		const char	*name;
		unsigned	 mode, flags;	/* argument numbers; flags 0: none */
	} calls[] = {
		{ "chmod", 1, 0 }, { "fchmod", 1, 0 }, { "fchmodat", 2, 0 },
		{ "fchmodat2", 2, 0 }, { "creat", 1, 0 }, { "mknod", 1, 0 },
		{ "mknodat", 2, 0 }, { "open", 2, 1 }, { "openat", 3, 2 },
	};
	static const unsigned	bits[] = { S_ISUID, S_ISGID };
	static const unsigned	creating[] = { O_CREAT, O_TMPFILE & ~O_DIRECTORY };
	size_t			i, b, k;
	int			nr, rc = 0;

	for (i = 0; rc == 0 && i < sizeof(calls) / sizeof(*calls); i++) {
		if ((nr = seccomp_syscall_resolve_name(calls[i].name)) == __NR_SCMP_ERROR ||
		    nr < 0)
			continue;
		for (b = 0; rc == 0 && b < sizeof(bits) / sizeof(*bits); b++) {
			if (calls[i].flags == 0) {
				rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
				    SCMP_CMP32(calls[i].mode, SCMP_CMP_MASKED_EQ, bits[b], bits[b]));
				continue;
			}
			for (k = 0; rc == 0 && k < sizeof(creating) / sizeof(*creating); k++)
				rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 2,
				    SCMP_CMP32(calls[i].flags, SCMP_CMP_MASKED_EQ, creating[k],
				    creating[k]),
				    SCMP_CMP32(calls[i].mode, SCMP_CMP_MASKED_EQ, bits[b], bits[b]));
		}
	}
	if (rc == 0 && (nr = seccomp_syscall_resolve_name("openat2")) != __NR_SCMP_ERROR &&
	    nr >= 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
	return rc;
}

scmp_filter_ctx
rules_child(enum sbx_net net, char *why, size_t whylen)
{
	scmp_filter_ctx		 ctx;
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
	if (deny_names(ctx, child_denied, why, whylen) == -1 ||
	    (net == SBX_NET_OFF && deny_names(ctx, no_address, why, whylen) == -1))
		goto out;
	if ((rc = family_rules(ctx, net)) < 0) {
		snprintf(why, whylen, "seccomp socket rules: %s", strerror(-rc));
		goto out;
	}
	/* its own limits (pid 0), and anyone's read, stay allowed */
	if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prlimit64), 2,
	    SCMP_A0_32(SCMP_CMP_NE, 0), SCMP_A2_64(SCMP_CMP_NE, 0))) < 0) {
		snprintf(why, whylen, "seccomp prlimit rule: %s", strerror(-rc));
		goto out;
	}
	if ((rc = setid_rules(ctx)) < 0) {
		snprintf(why, whylen, "seccomp mode rules: %s", strerror(-rc));
		goto out;
	}
	return ctx;
out:
	seccomp_release(ctx);
	return NULL;
}


/*
 * Transparent TCP: the managed network's filter, and every connect(2)
 * notified to execd's listener (sandbox_tcp.c), which swaps in a socket
 * connected through the proxy or lets the kernel go on in the sandbox's
 * own namespace.
 */
scmp_filter_ctx
rules_child_transparent(char *why, size_t whylen)
{
	scmp_filter_ctx	ctx;
	int		rc;

	if ((ctx = rules_child(SBX_NET_MANAGED, why, whylen)) == NULL)
		return NULL;
	if ((rc = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(connect), 0)) < 0) {
		snprintf(why, whylen, "seccomp connect rule: %s", strerror(-rc));
		seccomp_release(ctx);
		return NULL;
	}
	return ctx;
}
