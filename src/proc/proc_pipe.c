/*
 * A child's output pipe grows when it has filled: a read that took the
 * whole default 64 KiB found the child blocked on a full pipe, writing
 * faster than the client is served.  With room for PIPE_BULK the child
 * writes on while the instance encodes and sends, and each of the
 * instance's wakeups takes more at once (fewer context switches per MiB).
 * Output that never fills the pipe is never touched: nothing here delays
 * or adds a system call to small outputs.
 *
 * Grown pipe pages count against the user's fs.pipe-user-pages-soft; past
 * it, the kernel gives the user's (unprivileged) new pipes one or two pages
 * each, which would slow every other pipe of theirs.  So an instance grows
 * pipes by at most an eighth of that allowance (and PIPE_BUDGET_MAX) at a
 * time, given back as each pipe closes; a sysctl that cannot be read means
 * no growth.  A pipe is asked to grow once; any refusal (a PTY, EPERM over
 * pipe-max-size or the user's limit, ENOMEM) leaves it as it was.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include "evloop.h"
#include "fdio.h"
#include "proc/proc_pipe.h"
#include "proc/proc_table.h"

#define PIPE_BULK		(1024 * 1024)
#define PIPE_BUDGET_MAX		(4 * PIPE_BULK)
#define PIPE_SHARE		8	/* of the user's soft allowance */

static struct {
	int	read;		/* the sysctls were read (budget is set) */
	size_t	budget;		/* bytes this instance may still grow pipes by */
	size_t	bulk;		/* the size a grown pipe gets */
} pp;

static long
sysctl_long(const char *path)
{
	char	buf[32], *end;
	long	v;

	if (path_read_small(path, buf, sizeof(buf)) == -1)
		return -1;
	errno = 0;
	v = strtol(buf, &end, 10);
	if (errno != 0 || end == buf || v < 0 || (*end != '\n' && *end != '\0'))
		return -1;
	return v;
}

/* Once, at the first pipe that filled: the budget and the grown size. */
static void
pipe_budget_init(void)
{
	long	soft, max, page;

	pp.read = 1;
	soft = sysctl_long("/proc/sys/fs/pipe-user-pages-soft");
	max = sysctl_long("/proc/sys/fs/pipe-max-size");
	page = sysconf(_SC_PAGESIZE);
	if (soft < 0 || max <= 0 || page <= 0)
		return;
	pp.bulk = (size_t)max < PIPE_BULK ? (size_t)max : PIPE_BULK;
	/* 0: no soft limit */
	if (soft == 0 || (unsigned long)soft > PIPE_BUDGET_MAX / PIPE_SHARE / (unsigned long)page)
		pp.budget = PIPE_BUDGET_MAX;
	else
		pp.budget = (size_t)soft * (size_t)page / PIPE_SHARE;
}

size_t
proc_pipe_grow(int fd)
{
	int	size, grown;

	if (!pp.read)
		pipe_budget_init();
	if (pp.bulk == 0 || pp.budget < pp.bulk)
		return 0;
	if ((size = fcntl(fd, F_GETPIPE_SZ)) == -1 || (size_t)size >= pp.bulk)
		return 0;
	if ((grown = fcntl(fd, F_SETPIPE_SZ, (int)pp.bulk)) == -1 || grown <= size)
		return 0;
	pp.budget -= (size_t)(grown - size);
	return (size_t)(grown - size);
}

void
proc_pipe_release(size_t bytes)
{
	pp.budget += bytes;
}

/*
 * Pacing a stream that outruns nobody.  A child writing megabytes in 8 KiB
 * writes while the instance is idle on another CPU wakes it at each write:
 * each 8 KiB then costs a wakeup, an epoll_wait, a read and a send, three
 * times the CPU per MiB of a backlogged stream (seen over WebSocket, where a
 * send runs loopback TCP for the receiver too).  So once a stream has given
 * PACE_HOT bytes without a PACE_GAP_MS pause, and its pipe has grown, a
 * read that empties the pipe stops reading it for PACE_MS: the child fills
 * its 1 MiB pipe meanwhile and the next wakeup takes it in a few reads.  The
 * first PACE_HOT bytes of every burst, so every small output, go as they
 * come; a hot stream's next bytes wait at most PACE_MS.
 */
#define PACE_HOT	(256 * 1024)
#define PACE_GAP_MS	10
#define PACE_MS		1

static void
pace_resume(struct ev_timer *t, void *arg)
{
	struct proc	*p = arg;

	if (!p->paused) {
		if ((p->paced & 1) && p->out_open)
			ev_io_set(&p->out_io, EPOLLIN);
		if ((p->paced & 2) && p->err_open)
			ev_io_set(&p->err_io, EPOLLIN);
	}
	p->paced = 0;
}

void
proc_pipe_pace(struct proc *p, struct ev_io *io, size_t bytes, int short_read)
{
	int		i = io == &p->err_io;
	uint64_t	now = ev_now();

	if (now - p->burst_last[i] >= PACE_GAP_MS)
		p->burst[i] = 0;
	p->burst[i] += bytes;
	p->burst_last[i] = now;
	if (!short_read || p->burst[i] < PACE_HOT || p->pipe_grown[i] == 0 || p->paused)
		return;
	if (ev_io_set(io, 0) == -1)
		return;
	p->paced |= 1u << i;
	if (!ev_timer_armed(&p->pace_timer)) {
		ev_timer_init(&p->pace_timer, pace_resume, p);
		ev_timer_start(&p->pace_timer, PACE_MS);
	}
}

void
proc_pipe_unpace(struct proc *p, struct ev_io *io)
{
	if (io != NULL)
		p->paced &= ~(1u << (io == &p->err_io));
	if (io == NULL || p->paced == 0) {
		p->paced = 0;
		ev_timer_stop(&p->pace_timer);
	}
}
