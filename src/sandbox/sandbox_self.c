/*
 * execd's filters on itself.
 *
 * The floor (main, every process of ours and so every command): not
 * dumpable, so processes of the same user cannot ptrace execd or read its
 * memory (commands become dumpable again when they exec); and unless
 * --allow-setuid, no_new_privs and EPERM for the host-wide calls that
 * nothing run by execd has business making, for the native and compat
 * architectures.  It cannot be more than that: whatever is here confines
 * every unsandboxed command too.
 *
 * The allow-list (serve.c, each instance once its spawn helper is
 * forked, so no command inherits it): no_new_privs, and only the calls
 * execd itself makes, grouped below with why each is there.  Anything
 * else raises SIGSYS: the instance writes "seccomp refused system call N"
 * to stderr and dies of it, as a compromised instance should.  No fork,
 * no exec (commands are started by the helper), no ptrace, no mount, no
 * namespaces; clone only for threads (libcurl's resolver), sockets only
 * for AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK, prctl and ioctl only
 * with the operations listed.
 */
#include "config.h"

#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <linux/sockios.h>

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <seccomp.h>

#include "log.h"
#include "sandbox/sandbox_int.h"
#include "sandbox/sandbox_self.h"

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
};

static const int self_prctls[] = {
	PR_GET_SECCOMP, PR_GET_NO_NEW_PRIVS, PR_GET_DUMPABLE, PR_CAPBSET_READ,
	PR_SET_NAME, PR_GET_NAME,
};

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
filter_new(uint32_t dflt)
{
	scmp_filter_ctx	ctx;
	int		rc;

	if ((ctx = seccomp_init(dflt)) == NULL) {
		log_warnx("seccomp_init failed");
		return NULL;
	}
	if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1)) < 0 ||
	    (rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS)) < 0) {
		log_warnx("seccomp_attr_set: %s", strerror(-rc));
		seccomp_release(ctx);
		return NULL;
	}
	return ctx;
}

int
sandbox_self_floor(int no_new_privs)
{
	scmp_filter_ctx	ctx;
	char		why[256];
	int		rc, r = -1;

	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1) {
		log_warn("prctl(PR_SET_DUMPABLE)");
		return -1;
	}
	if (!no_new_privs)
		return 0;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1) {
		log_warn("prctl(PR_SET_NO_NEW_PRIVS)");
		return -1;
	}
	if ((ctx = filter_new(SCMP_ACT_ALLOW)) == NULL)
		return -1;
	if ((rc = add_compat_arches(ctx)) < 0) {
		log_warnx("seccomp floor: %s", strerror(-rc));
		goto out;
	}
	if (sbx_deny_names(ctx, floor_denied, why, sizeof(why)) == -1) {
		log_warnx("%s", why);
		goto out;
	}
	if ((rc = seccomp_load(ctx)) < 0) {
		log_warnx("seccomp_load (floor): %s", strerror(-rc));
		goto out;
	}
	r = 0;
out:
	seccomp_release(ctx);
	return r;
}

/* Say which call it was, then die of the signal: async-signal-safe only. */
static void
self_refused(int signo, siginfo_t *si, void *uc)
{
	static const char text[] = "execd: seccomp refused system call ";
	char		 msg[sizeof(text) + 16], *p = msg + sizeof(msg);
	unsigned	 nr = (unsigned)si->si_syscall;
	struct sigaction sa;
	sigset_t	 set;

	*--p = '\n';
	do
		*--p = (char)('0' + nr % 10);
	while ((nr /= 10) != 0);
	p -= sizeof(text) - 1;
	memcpy(p, text, sizeof(text) - 1);
	(void)!write(STDERR_FILENO, p, (size_t)(msg + sizeof(msg) - p));
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigaction(SIGSYS, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGSYS);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	kill(getpid(), SIGSYS);
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

int
sandbox_self_narrow(void)
{
	scmp_filter_ctx		 ctx;
	struct sigaction	 sa;
	const char *const	*n;
	int			 nr, rc, r = -1;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1) {
		log_warn("prctl(PR_SET_NO_NEW_PRIVS)");
		return -1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = self_refused;
	sa.sa_flags = SA_SIGINFO;
	if (sigaction(SIGSYS, &sa, NULL) == -1) {
		log_warn("sigaction(SIGSYS)");
		return -1;
	}
	if ((ctx = filter_new(SCMP_ACT_TRAP)) == NULL)
		return -1;
	for (n = self_allowed; *n != NULL; n++) {
		/* a call this architecture does not have needs no rule */
		if ((nr = seccomp_syscall_resolve_name(*n)) == __NR_SCMP_ERROR || nr < 0)
			continue;
		if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0)) < 0 && rc != -EEXIST)
			goto fail;
	}
	if ((rc = allow_args(ctx)) < 0 || (rc = seccomp_load(ctx)) < 0)
		goto fail;
	r = 0;
	goto out;
fail:
	log_warnx("seccomp allow-list: %s", strerror(-rc));
out:
	seccomp_release(ctx);
	return r;
}
