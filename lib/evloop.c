#include "config.h"

#include <sys/epoll.h>
#include <sys/signalfd.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "evloop.h"
#include "log.h"

#define EV_BATCH	64

struct ev_sig {
	ev_signal_cb	*cb;
	void		*arg;
};

static struct {
	int		  epfd;
	int		  stop;
	size_t		  nio;
	/* ev_io objects removed while a batch is being dispatched */
	struct ev_io	**dead;
	size_t		  ndead, capdead;
	struct ev_timer	**heap;
	size_t		  nheap, capheap;
	int		  sigfd;
	struct ev_io	  sigio;
	sigset_t	  sigs;
	struct ev_sig	  sigtab[NSIG];
	int		  dispatching;
	struct ev_defer	 *defer_head, **defer_tail;
} ev = { .epfd = -1, .sigfd = -1 };

uint64_t
ev_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int
ev_init(void)
{
	ev.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (ev.epfd == -1) {
		log_warn("epoll_create1");
		return -1;
	}
	sigemptyset(&ev.sigs);
	return 0;
}

void
ev_free(void)
{
	if (ev.sigfd != -1)
		close(ev.sigfd);
	if (ev.epfd != -1)
		close(ev.epfd);
	free(ev.dead);
	free(ev.heap);
	memset(&ev, 0, sizeof(ev));
	ev.epfd = ev.sigfd = -1;
	ev.defer_tail = NULL;
}

void
ev_child_reset(void)
{
	sigprocmask(SIG_UNBLOCK, &ev.sigs, NULL);
	ev_free();
}

void
ev_hold(int delta)
{
	ev.nio += (size_t)delta;
}

void
ev_break(void)
{
	ev.stop = 1;
}

int
ev_io_add(struct ev_io *io, int fd, uint32_t events, ev_io_cb *cb, void *arg)
{
	struct epoll_event ee = { .events = events, .data.ptr = io };

	io->fd = fd;
	io->events = events;
	io->cb = cb;
	io->arg = arg;
	if (epoll_ctl(ev.epfd, EPOLL_CTL_ADD, fd, &ee) == -1) {
		/* EPERM: a descriptor epoll cannot watch; the caller decides */
		if (errno != EPERM)
			log_warn("epoll_ctl add fd %d", fd);
		io->active = 0;
		return -1;
	}
	io->active = 1;
	io->parked = 0;
	ev.nio++;
	if (events == 0 && epoll_ctl(ev.epfd, EPOLL_CTL_DEL, fd, NULL) == 0)
		io->parked = 1;
	return 0;
}

int
ev_io_set(struct ev_io *io, uint32_t events)
{
	struct epoll_event ee = { .events = events, .data.ptr = io };

	if (!io->active)
		return -1;
	if (io->events == events)
		return 0;
	if (events == 0) {
		if (epoll_ctl(ev.epfd, EPOLL_CTL_DEL, io->fd, NULL) == -1) {
			log_warn("epoll_ctl del fd %d", io->fd);
			return -1;
		}
		io->parked = 1;
	} else if (epoll_ctl(ev.epfd, io->parked ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, io->fd,
	    &ee) == -1) {
		log_warn("epoll_ctl %s fd %d", io->parked ? "add" : "mod", io->fd);
		return -1;
	} else
		io->parked = 0;
	io->events = events;
	return 0;
}

void
ev_io_del(struct ev_io *io)
{
	struct ev_io	**n;

	if (!io->active)
		return;
	/* The fd may already be closed by its owner; epoll dropped it then. */
	epoll_ctl(ev.epfd, EPOLL_CTL_DEL, io->fd, NULL);
	io->active = 0;
	ev.nio--;
	if (!ev.dispatching)
		return;
	if (ev.ndead == ev.capdead) {
		n = reallocarray(ev.dead, ev.capdead ? ev.capdead * 2 : 16, sizeof(*n));
		if (n == NULL)
			fatal("ev_io_del");
		ev.dead = n;
		ev.capdead = ev.capdead ? ev.capdead * 2 : 16;
	}
	ev.dead[ev.ndead++] = io;
}

static int
ev_is_dead(const struct ev_io *io)
{
	size_t	i;

	for (i = 0; i < ev.ndead; i++)
		if (ev.dead[i] == io)
			return 1;
	return 0;
}

/* Timers: a binary min-heap of pointers; t->slot is its index + 1. */
static void
heap_swap(size_t a, size_t b)
{
	struct ev_timer *t = ev.heap[a];

	ev.heap[a] = ev.heap[b];
	ev.heap[b] = t;
	ev.heap[a]->slot = a + 1;
	ev.heap[b]->slot = b + 1;
}

static void
heap_up(size_t i)
{
	while (i > 0 && ev.heap[(i - 1) / 2]->when > ev.heap[i]->when) {
		heap_swap(i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void
heap_down(size_t i)
{
	size_t	l, r, m;

	for (;;) {
		l = 2 * i + 1;
		r = l + 1;
		m = i;
		if (l < ev.nheap && ev.heap[l]->when < ev.heap[m]->when)
			m = l;
		if (r < ev.nheap && ev.heap[r]->when < ev.heap[m]->when)
			m = r;
		if (m == i)
			return;
		heap_swap(i, m);
		i = m;
	}
}

void
ev_timer_init(struct ev_timer *t, ev_timer_cb *cb, void *arg)
{
	t->when = 0;
	t->slot = 0;
	t->cb = cb;
	t->arg = arg;
}

int
ev_timer_armed(const struct ev_timer *t)
{
	return t->slot != 0;
}

void
ev_timer_stop(struct ev_timer *t)
{
	struct ev_timer	*m;
	size_t		 i;

	if (t->slot == 0)
		return;
	i = t->slot - 1;
	t->slot = 0;
	ev.nheap--;
	if (i == ev.nheap)
		return;
	m = ev.heap[ev.nheap];
	ev.heap[i] = m;
	m->slot = i + 1;
	heap_up(i);
	heap_down(m->slot - 1);
}

void
ev_timer_start(struct ev_timer *t, uint64_t after_ms)
{
	struct ev_timer	**n;

	ev_timer_stop(t);
	if (ev.nheap == ev.capheap) {
		n = reallocarray(ev.heap, ev.capheap ? ev.capheap * 2 : 32, sizeof(*n));
		if (n == NULL)
			fatal("ev_timer_start");
		ev.heap = n;
		ev.capheap = ev.capheap ? ev.capheap * 2 : 32;
	}
	t->when = ev_now() + after_ms;
	ev.heap[ev.nheap] = t;
	t->slot = ++ev.nheap;
	heap_up(ev.nheap - 1);
}

static void
ev_run_timers(void)
{
	uint64_t	 now = ev_now();
	struct ev_timer	*t;

	while (ev.nheap > 0 && ev.heap[0]->when <= now && !ev.stop) {
		t = ev.heap[0];
		ev_timer_stop(t);
		t->cb(t, t->arg);
	}
}

void
ev_defer_init(struct ev_defer *d, ev_defer_cb *cb, void *arg)
{
	d->cb = cb;
	d->arg = arg;
	d->next = NULL;
	d->armed = 0;
}

void
ev_defer_arm(struct ev_defer *d)
{
	if (d->armed)
		return;
	d->armed = 1;
	d->next = NULL;
	if (ev.defer_head == NULL)
		ev.defer_head = d;
	else
		*ev.defer_tail = d;
	ev.defer_tail = &d->next;
}

void
ev_defer_cancel(struct ev_defer *d)
{
	struct ev_defer	**pp;

	if (!d->armed)
		return;
	for (pp = &ev.defer_head; *pp != NULL; pp = &(*pp)->next)
		if (*pp == d) {
			*pp = d->next;
			break;
		}
	/* the tail again: the list is a handful long */
	ev.defer_tail = NULL;
	for (pp = &ev.defer_head; *pp != NULL; pp = &(*pp)->next)
		ev.defer_tail = &(*pp)->next;
	d->armed = 0;
	d->next = NULL;
}

/* What is armed now runs; what those arm runs in the next pass. */
static void
ev_run_defers(void)
{
	struct ev_defer	*d, *list = ev.defer_head;

	ev.defer_head = NULL;
	ev.defer_tail = NULL;
	while ((d = list) != NULL && !ev.stop) {
		list = d->next;
		d->next = NULL;
		d->armed = 0;
		d->cb(d, d->arg);
	}
	/* stopped half-way: the rest stays armed, in order, before what was armed meanwhile */
	if (list != NULL) {
		struct ev_defer *last = list;
		while (last->next != NULL)
			last = last->next;
		last->next = ev.defer_head;
		if (ev.defer_head == NULL)
			ev.defer_tail = &last->next;
		ev.defer_head = list;
	}
}

static int
ev_timeout(void)
{
	uint64_t	now, when;

	if (ev.defer_head != NULL)
		return 0;
	if (ev.nheap == 0)
		return -1;
	now = ev_now();
	when = ev.heap[0]->when;
	if (when <= now)
		return 0;
	if (when - now > 60 * 60 * 1000)
		return 60 * 60 * 1000;
	return (int)(when - now);
}

static void
ev_sig_read(struct ev_io *io, uint32_t events, void *arg)
{
	struct signalfd_siginfo	 si;
	ssize_t			 n;

	(void)io;
	(void)events;
	(void)arg;
	for (;;) {
		n = read(ev.sigfd, &si, sizeof(si));
		if (n != sizeof(si)) {
			if (n == -1 && errno != EAGAIN && errno != EINTR)
				log_warn("signalfd read");
			return;
		}
		if (si.ssi_signo < NSIG && ev.sigtab[si.ssi_signo].cb != NULL)
			ev.sigtab[si.ssi_signo].cb((int)si.ssi_signo,
			    ev.sigtab[si.ssi_signo].arg);
	}
}

int
ev_signal(int signo, ev_signal_cb *cb, void *arg)
{
	int	fd;

	sigaddset(&ev.sigs, signo);
	if (sigprocmask(SIG_BLOCK, &ev.sigs, NULL) == -1) {
		log_warn("sigprocmask");
		return -1;
	}
	fd = signalfd(ev.sigfd, &ev.sigs, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd == -1) {
		log_warn("signalfd");
		return -1;
	}
	ev.sigtab[signo].cb = cb;
	ev.sigtab[signo].arg = arg;
	if (ev.sigfd == -1) {
		ev.sigfd = fd;
		if (ev_io_add(&ev.sigio, fd, EPOLLIN, ev_sig_read, NULL) == -1)
			return -1;
		/* the signalfd alone must not keep ev_run() going */
		ev.nio--;
	}
	return 0;
}

int
ev_run(void)
{
	struct epoll_event	evs[EV_BATCH];
	struct ev_io		*io;
	int			 n, i;

	ev.stop = 0;
	while (!ev.stop && (ev.nio > 0 || ev.nheap > 0 || ev.defer_head != NULL)) {
		n = epoll_wait(ev.epfd, evs, EV_BATCH, ev_timeout());
		if (n == -1) {
			if (errno == EINTR)
				continue;
			log_warn("epoll_wait");
			return -1;
		}
		ev.dispatching = 1;
		ev.ndead = 0;
		for (i = 0; i < n && !ev.stop; i++) {
			io = evs[i].data.ptr;
			/* dead first: its owner may have freed it */
			if (ev_is_dead(io) || !io->active)
				continue;
			io->cb(io, evs[i].events, io->arg);
		}
		ev.dispatching = 0;
		ev.ndead = 0;
		ev_run_defers();
		ev_run_timers();
		ev_run_defers();
	}
	return 0;
}
