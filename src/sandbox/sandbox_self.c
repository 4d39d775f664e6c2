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
 *
 * The lists, with why each call is there, are in seccomp_rules.c: both
 * programs are compiled at build time (seccomp_gen), so an instance loads
 * them with one system call each and links no libseccomp.
 */
#include "config.h"

#include <sys/prctl.h>
#include <sys/syscall.h>

#include <linux/seccomp.h>

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "sandbox/sandbox_int.h"
#include "sandbox/sandbox_self.h"
#include "sandbox/seccomp_progs.h"

/* On every thread (there is only one yet, but a library may have started one). */
static int
load(const struct sock_fprog *prog, const char *what)
{
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, prog) != 0) {
		log_warn("seccomp (%s)", what);
		return -1;
	}
	return 0;
}

int
sandbox_self_floor(int no_new_privs)
{
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
	return load(&seccomp_floor_prog, "floor");
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

int
sandbox_self_narrow(void)
{
	struct sigaction	sa;

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
	return load(&seccomp_self_prog, "allow-list");
}
