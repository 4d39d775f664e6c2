/*
 * What this kernel (and this execd's privileges) offer a sandbox, probed
 * once: seccomp, the Landlock ABI, and whether children can make mount and
 * network namespaces.  Both the parent's planning and the parent's
 * placeholder guards ask; nothing here knows about plans.
 *
 * The namespace probe forks.  Once execd narrows itself it may not, so
 * the code that starts the spawn helper hands in the helper's probe
 * (sandbox_set_ns_probe); before that, or without a helper, execd forks
 * the probe itself.
 *
 * For tests, EXECD_SANDBOX_DISABLE (comma separated: landlock-fs,
 * landlock, landlock-scope, namespaces, userns) makes execd act as if the
 * kernel lacked those (landlock-scope: a Landlock ABI before 6, which
 * scopes neither signals nor abstract sockets).
 */
#include "config.h"

#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/capability.h>

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "sandbox/sandbox_int.h"

static struct {
	int	probed;
	struct sbx_kernel k;
	int	ns_probed;
	int	(*ns_probe)(int direct);	/* NULL: fork the probe here */
} kst;

static int
knob(const char *word)
{
	const char	*v = getenv("EXECD_SANDBOX_DISABLE"), *p;
	size_t		 n = strlen(word);

	for (p = v; p != NULL && *p != '\0'; p += strcspn(p, ","), p += *p == ',') {
		if (strncmp(p, word, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return 1;
	}
	return 0;
}

static int
has_cap(int cap)
{
	struct __user_cap_header_struct	hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct	data[2];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data) == -1)
		return 0;
	return (data[cap / 32].effective & (1U << (cap % 32))) != 0;
}

static int
read_int(const char *path, int dflt)
{
	FILE	*f;
	int	 v;

	if ((f = fopen(path, "re")) == NULL)
		return dflt;
	if (fscanf(f, "%d", &v) != 1)
		v = dflt;
	fclose(f);
	return v;
}

const struct sbx_kernel *
sbx_kernel(void)
{
	if (kst.probed)
		return &kst.k;
	kst.probed = 1;
	kst.k.seccomp = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
	kst.k.landlock_abi = knob("landlock") ? 0 : sbx_landlock_probe();
	if (knob("landlock-scope") && kst.k.landlock_abi > 5)
		kst.k.landlock_abi = 5;
	kst.k.no_landlock_fs = knob("landlock-fs");
	kst.k.cap_last = read_int("/proc/sys/kernel/cap_last_cap", 63);
	log_info("sandbox: seccomp %s, Landlock ABI %d", kst.k.seccomp ? "yes" : "no",
	    kst.k.landlock_abi);
	return &kst.k;
}

int
sbx_ptrace_contained(void)
{
	return read_int("/proc/sys/kernel/yama/ptrace_scope", 0) >= 1;
}

int
sandbox_probe_ns(int direct)
{
	pid_t	pid;
	int	status;

	if ((pid = fork()) == -1) {
		log_warn("sandbox: namespace probe");
		return -1;
	}
	if (pid == 0) {
		if (!direct && unshare(CLONE_NEWUSER) == -1)
			_exit(1);
		if (unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC) == -1 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1)
			_exit(1);
		_exit(0);
	}
	while (waitpid(pid, &status, 0) == -1)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

void
sandbox_set_ns_probe(int (*probe)(int direct))
{
	kst.ns_probe = probe;
}

static int
probe_ns(int direct)
{
	return kst.ns_probe != NULL ? kst.ns_probe(direct) : sandbox_probe_ns(direct);
}

/*
 * Can a child make its namespaces?  In a user namespace whenever the
 * kernel allows it, as root too (the command's capabilities then reach no
 * further than its own namespaces); directly only as root with
 * CAP_SYS_ADMIN where user namespaces are refused.
 */
int
sbx_namespaces(void)
{
	int	ok, direct = 0;

	if (kst.ns_probed)
		return kst.k.ns_direct || kst.k.ns_userns;
	if (knob("namespaces")) {
		kst.ns_probed = 1;
		return 0;
	}
	if ((ok = knob("userns") ? 0 : probe_ns(0)) == 0 && has_cap(CAP_SYS_ADMIN)) {
		direct = 1;
		ok = probe_ns(1);
	}
	if (ok == -1)
		return 0;	/* asked again next time */
	kst.ns_probed = 1;
	if (ok) {
		kst.k.ns_direct = direct;
		kst.k.ns_userns = !direct;
	}
	log_info("sandbox: namespaces %s", kst.k.ns_direct ? "direct" :
	    kst.k.ns_userns ? "in a user namespace" : "unavailable");
	return kst.k.ns_direct || kst.k.ns_userns;
}
