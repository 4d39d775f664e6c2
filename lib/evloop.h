/*
 * The one event loop of a process (epoll), shared by execd and execd-proxy.
 * Descriptors, one-shot timers and signals (through signalfd) all end up in
 * callbacks run from ev_run(); nothing blocks and nothing is threaded.
 */
#ifndef EXECD_EVLOOP_H
#define EXECD_EVLOOP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>

struct ev_io;
struct ev_timer;

typedef void	ev_io_cb(struct ev_io *io, uint32_t events, void *arg);
typedef void	ev_timer_cb(struct ev_timer *t, void *arg);
typedef void	ev_signal_cb(int signo, void *arg);
struct ev_defer;
typedef void	ev_defer_cb(struct ev_defer *d, void *arg);

/* Embedded in its owner; the loop never allocates or frees it. */
struct ev_io {
	int		 fd;
	uint32_t	 events;	/* EPOLLIN | EPOLLOUT ... currently wanted */
	int		 active;
	/*
	 * Out of the epoll set while nothing is wanted: epoll reports a hang-up
	 * or an error whatever the mask, and a paused pipe whose writer is gone
	 * would wake the loop for ever.
	 */
	int		 parked;
	ev_io_cb	*cb;
	void		*arg;
};

struct ev_timer {
	uint64_t	 when;		/* ev_now() deadline, ms */
	size_t		 slot;		/* heap index + 1, 0 when not armed */
	ev_timer_cb	*cb;
	void		*arg;
};

/*
 * Work for the end of the current round: run once, in the order armed,
 * after the callbacks of the events epoll gave (and again after the
 * timers), before the loop waits again.  For what must follow everything
 * those callbacks queued: one write of all their output, then the slower
 * clean-up they left (a timer of 0 ms runs after the first pass).
 */
struct ev_defer {
	ev_defer_cb	*cb;
	void		*arg;
	struct ev_defer	*next;
	int		 armed;
};

int	 ev_init(void);
void	 ev_free(void);
int	 ev_run(void);			/* until ev_break() or nothing is left */
void	 ev_break(void);
uint64_t ev_now(void);			/* monotonic milliseconds */

/*
 * -1 on failure, logged, except errno EPERM: fd is one epoll cannot watch
 * (a regular file, /dev/null), always ready, which the caller serves itself.
 */
int	 ev_io_add(struct ev_io *io, int fd, uint32_t events, ev_io_cb *cb, void *arg);
int	 ev_io_set(struct ev_io *io, uint32_t events);	/* change the interest set */
void	 ev_io_del(struct ev_io *io);	/* safe from inside any callback */

void	 ev_timer_init(struct ev_timer *t, ev_timer_cb *cb, void *arg);
void	 ev_timer_start(struct ev_timer *t, uint64_t after_ms);
void	 ev_timer_stop(struct ev_timer *t);
int	 ev_timer_armed(const struct ev_timer *t);

void	 ev_defer_init(struct ev_defer *d, ev_defer_cb *cb, void *arg);
void	 ev_defer_arm(struct ev_defer *d);	/* no-op if armed */
void	 ev_defer_cancel(struct ev_defer *d);

/* Keep ev_run() going while something not on a descriptor is pending (a child). */
void	 ev_hold(int delta);

/* Blocks signo and delivers it through the loop's signalfd. */
int	 ev_signal(int signo, ev_signal_cb *cb, void *arg);
/* In a child after fork: unblock what ev_signal() blocked, drop the loop; ev_init() may follow. */
void	 ev_child_reset(void);

#endif
