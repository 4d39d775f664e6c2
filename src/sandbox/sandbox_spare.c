/*
 * A sandbox's network namespace made ahead, in the spawn helper (a managed
 * network's, or one with the network off: both start with only loopback
 * up): a network namespace costs about half a millisecond to make (every
 * protocol's per-namespace set-up), the largest single part of a
 * namespaced start.  After a start that used one, the helper forks a
 * maker, which makes the next one, unused and private: a user namespace
 * mapping only execd's uid and gid (the plan's maps), a network namespace
 * owned by it with only loopback up, both sent back as descriptors; the
 * maker then exits.  The next start with a network namespace takes them
 * (once: a spare is never used twice) and its child joins them instead of
 * making its own (sandbox_apply.c), then makes a managed network's routes
 * there as it always does.
 *
 * Nothing runs in a spare before its sandbox does: the maker exits as soon
 * as it has sent them, and only the helper holds the descriptors
 * (close-on-exec, never passed on but to the child that uses them).  A
 * spare whose maps are not the plan's, or a maker that failed, is simply
 * not used, nor one not made yet (a start never waits for it): the child
 * makes its namespaces itself, as without a spare.  The maker runs at the
 * lowest priority, behind the start that it follows.
 */
#include "config.h"

#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "util/fdpass.h"
#include "sandbox/sandbox_int.h"

static struct {
	pid_t	pid;		/* the maker, -1 for none */
	int	sock;		/* where its descriptors come */
	char	uid_map[64], gid_map[64];
} spare = { -1, -1, "", "" };

/* In the maker: the namespaces, sent on s; never returns. */
static void __attribute__((noreturn))
maker_main(int s, const struct sandbox_plan *plan)
{
	struct iovec	iov;
	char		one = 1;
	int		fds[2];

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1)
		_exit(1);
	/* behind the start that is under way, which it must not slow down
	   (never real-time, even if execd is) */
	(void)sched_setscheduler(0, SCHED_OTHER, &(struct sched_param){ 0 });
	(void)setpriority(PRIO_PROCESS, 0, 19);
	/* only its end of the socket: none of the helper's descriptors */
	if (dup2(s, 0) == -1 || close_range(1, ~0U, 0) == -1)
		_exit(1);
	if (sbx_userns_enter(plan) != 0 || unshare(CLONE_NEWNET) == -1 ||
	    sbx_loopback_up() != 0)
		_exit(1);
	if ((fds[0] = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC)) == -1 ||
	    (fds[1] = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) == -1)
		_exit(1);
	iov.iov_base = &one;
	iov.iov_len = 1;
	_exit(fdpass_send(0, &iov, 1, fds, 2, MSG_NOSIGNAL) == 1 ? 0 : 1);
}

/*
 * The maker's descriptors into fds, and the maker reaped: 0 with both;
 * -1 when it failed, or (the maker kept) when it is not done yet: a start
 * never waits for a spare.
 */
static int
maker_collect(int fds[2])
{
	size_t		n = 0;
	char		one;
	int		got[FDPASS_MAX], ok;
	ssize_t		r;

	while ((r = fdpass_recv(spare.sock, &one, 1, got, &n, MSG_DONTWAIT)) == -1 &&
	    errno == EINTR)
		;
	if (r == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return -1;
	ok = r == 1 && n == 2;
	if (ok) {
		fds[0] = got[0];
		fds[1] = got[1];
	} else
		while (n > 0)
			close(got[--n]);
	close(spare.sock);
	while (waitpid(spare.pid, NULL, 0) == -1 && errno == EINTR)
		;
	spare.sock = -1;
	spare.pid = -1;
	return ok ? 0 : -1;
}

void
sandbox_spare_take(struct sandbox_plan *plan)
{
	int	fds[2] = { -1, -1 };

	if (spare.pid == -1 || plan == NULL || !plan->new_userns || !plan->new_netns)
		return;
	if (maker_collect(fds) == -1)
		return;
	/* made for another mapping (not expected: execd's ids do not change) */
	if (strcmp(spare.uid_map, plan->uid_map) != 0 ||
	    strcmp(spare.gid_map, plan->gid_map) != 0) {
		close(fds[0]);
		close(fds[1]);
		return;
	}
	plan->spare_userns = fds[0];
	plan->spare_netns = fds[1];
}

void
sandbox_spare_make(const struct sandbox_plan *plan)
{
	int	sv[2];

	if (spare.pid != -1 || plan == NULL || !plan->new_userns || !plan->new_netns)
		return;
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) == -1) {
		log_warn("spawn helper: spare namespaces: socketpair");
		return;
	}
	if ((spare.pid = fork()) == -1) {
		log_warn("spawn helper: spare namespaces: fork");
		close(sv[0]);
		close(sv[1]);
		return;
	}
	if (spare.pid == 0)
		maker_main(sv[1], plan);
	close(sv[1]);
	spare.sock = sv[0];
	memcpy(spare.uid_map, plan->uid_map, sizeof(spare.uid_map));
	memcpy(spare.gid_map, plan->gid_map, sizeof(spare.gid_map));
}
