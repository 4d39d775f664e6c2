#include "config.h"

#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "util/children.h"
#include "proc/proc.h"
#include "proc/proc_table.h"
#include "proc/proc_pipe.h"
#include "spawn/spawner.h"
#include "netproxy/netproxy.h"
#include "proc/proc_snapshot.h"
#include "sandbox/sandbox.h"

#define PROC_READ_SIZE	8192	/* bytes per process/output chunk, as the reference */
/*
 * Chunks read at once (a default pipe holds eight), in one read(2), and
 * reads in one wakeup while the last filled its buffer: the client gets
 * them in one write, not a loop round each.  Only what is already there is
 * read: the first bytes never wait for more.
 */
#define PROC_READ_BATCH	8

static struct proc	*procs;
static size_t		 nprocs;
static struct ev_timer	 sweep_timer;	/* after a disconnect: kill what is left */
static const struct proc_events *ev;
static struct proc_limits	 lim;
static int			 ended;	/* the session ended: nobody will read again */

static void	proc_out_cb(struct ev_io *, uint32_t, void *);
static void	proc_in_cb(struct ev_io *, uint32_t, void *);


size_t
proc_count(void)
{
	return nprocs;
}

struct proc *
proc_find(const char *id)
{
	struct proc	*p;

	for (p = procs; p != NULL; p = p->next)
		if (strcmp(p->id, id) == 0)
			return p;
	return NULL;
}

static void
proc_kill_timeout(struct ev_timer *t, void *arg)
{
	struct proc	*p = arg;

	if (!p->exited) {
		log_info("process %s ignored SIGTERM: SIGKILL", p->id);
		proc_signal_group(p, SIGKILL);
	}
}

static void
proc_expire(struct ev_timer *t, void *arg)
{
	proc_discard(arg);
}

struct proc *
proc_new(const char *id)
{
	struct proc	*p;

	if ((p = calloc(1, sizeof(*p))) == NULL || (p->id = strdup(id)) == NULL) {
		free(p);
		return NULL;
	}
	p->next_seq = 1;
	p->pid = -1;
	ev_timer_init(&p->kill_timer, proc_kill_timeout, p);
	ev_timer_init(&p->expire_timer, proc_expire, p);
	p->next = procs;
	procs = p;
	nprocs++;
	return p;
}

static void
proc_unlink(struct proc *p)
{
	struct proc	**pp;

	for (pp = &procs; *pp != NULL; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			nprocs--;
			return;
		}
}

static void
proc_close_in(struct proc *p)
{
	if (!p->in_open)
		return;
	ev_io_del(&p->in_io);
	close(p->in_io.fd);
	p->in_open = 0;
	buf_free(&p->inbuf);
}

static void
proc_close_stream(struct proc *p, struct ev_io *io, int *open_flag)
{
	if (!*open_flag)
		return;
	ev_io_del(io);
	close(io->fd);
	*open_flag = 0;
	proc_pipe_release(p->pipe_grown[io == &p->err_io]);
	p->pipe_grown[io == &p->err_io] = 0;
	proc_pipe_unpace(p, io);
}

/* Forget a process entirely: it is gone and no longer readable. */
void
proc_discard(struct proc *p)
{
	size_t	i;

	ev->discarded(p);
	proc_close_stream(p, &p->out_io, &p->out_open);
	proc_close_stream(p, &p->err_io, &p->err_open);
	proc_close_in(p);
	ev_timer_stop(&p->kill_timer);
	ev_timer_stop(&p->expire_timer);
	netproxy_unregister(p->netreg);
	sandbox_guards_release(p->guards);
	p->guards = NULL;
	out_ring_free(&p->ring);
	for (i = 0; i < p->nwrite_ids; i++)
		free(p->write_ids[i]);
	proc_unlink(p);
	free(p->id);
	free(p);
}

static int
set_nonblock(int fd)
{
	int	fl = fcntl(fd, F_GETFL);

	return fl == -1 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

void
proc_start_io(struct proc *p, int out_fd, int err_fd, int in_fd)
{
	set_nonblock(out_fd);
	if (ev_io_add(&p->out_io, out_fd, EPOLLIN, proc_out_cb, p) == 0)
		p->out_open = 1;
	else
		close(out_fd);
	if (err_fd != -1) {
		set_nonblock(err_fd);
		if (ev_io_add(&p->err_io, err_fd, EPOLLIN, proc_out_cb, p) == 0)
			p->err_open = 1;
		else
			close(err_fd);
	}
	if (in_fd != -1) {
		set_nonblock(in_fd);
		/* registered with no interest until there is something to write */
		if (ev_io_add(&p->in_io, in_fd, 0, proc_in_cb, p) == 0)
			p->in_open = 1;
		else
			close(in_fd);
	}
	/* held until the child is reaped, so the loop outlives it */
	ev_hold(1);
}

void
proc_signal_group(struct proc *p, int sig)
{
	if (p->pid <= 0 || p->exited)
		return;
	if (kill(-p->pid, sig) == -1 && errno != ESRCH)
		log_warn("kill process group %ld (%s)", (long)p->pid, p->id);
}

void
proc_terminate(struct proc *p)
{
	p->terminated = 1;
	if (lim.kill_grace_ms == 0) {
		proc_signal_group(p, SIGKILL);
		return;
	}
	proc_signal_group(p, SIGTERM);
	if (!ev_timer_armed(&p->kill_timer))
		ev_timer_start(&p->kill_timer, lim.kill_grace_ms);
}

/*
 * How long a process that closes now stays readable.  Nobody can read it
 * any more once the session has ended (proc_end_session expires what
 * closed before).  With no client attached it may be coming back: the
 * process is kept for the resume, whether the session has been marked as
 * waiting yet or not (the detach hooks run in an order we do not choose).
 */
static uint64_t
proc_keep_ms(void)
{
	if (ended)
		return 0;
	if (ev->attached() || lim.detached_keep_ms < lim.closed_keep_ms)
		return lim.closed_keep_ms;
	return lim.detached_keep_ms;
}

static void
proc_emit_closed(struct proc *p)
{
	uint64_t	seq;

	if (p->closed || !p->exited || p->out_open || p->err_open)
		return;
	p->closed = 1;
	seq = p->next_seq++;
	sandbox_guards_release(p->guards);
	p->guards = NULL;
	proc_close_in(p);
	ev->closed(p, seq);
	if (p->ring.dropped_bytes > 0)
		log_notice("process %s: %llu bytes of output were evicted past the "
		    "retention bound of %zu bytes", p->id,
		    (unsigned long long)p->ring.dropped_bytes, lim.retention_bytes);
	ev_timer_start(&p->expire_timer, proc_keep_ms());
	ev->changed(p);
}

/*
 * Read what the pipe holds, up to PROC_READ_BATCH chunks in one read(2),
 * each chunk its seq and notification; 2 if the read filled the buffer
 * (more may wait), 1 if less came, 0 on EAGAIN, -1 on EOF.
 */
static int
proc_read_chunk(struct proc *p, struct ev_io *io)
{
	uint8_t			 data[PROC_READ_SIZE * PROC_READ_BATCH];
	enum proc_stream	 s;
	ssize_t			 n;
	size_t			 off, k;
	uint64_t		 seq;

	n = read(io->fd, data, sizeof(data));
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		/* EIO: the PTY slave side is gone */
		if (n == -1 && errno != EIO)
			log_warn("read output of %s", p->id);
		return -1;
	}
	s = p->tty ? STREAM_PTY : io == &p->out_io ? STREAM_STDOUT : STREAM_STDERR;
	for (off = 0; off < (size_t)n; off += k) {
		k = (size_t)n - off < PROC_READ_SIZE ? (size_t)n - off : PROC_READ_SIZE;
		seq = p->next_seq++;
		if (out_ring_push(&p->ring, seq, s, data + off, k, lim.retention_bytes,
		    lim.retention_chunks) == -1) {
			log_warnx("out of memory keeping output of %s", p->id);
			return 1;
		}
		ev->output(p, seq, s, data + off, k);
	}
	ev->changed(p);
	proc_pipe_pace(p, io, (size_t)n, n < (ssize_t)sizeof(data));
	if (n < (ssize_t)sizeof(data))
		return 1;
	/* the read took a whole default pipe: the child is ahead of us */
	if (!(p->pipe_asked & (1u << (io == &p->err_io)))) {
		p->pipe_asked |= 1u << (io == &p->err_io);
		p->pipe_grown[io == &p->err_io] = proc_pipe_grow(io->fd);
	}
	return 2;
}

static void
proc_pause(struct proc *p)
{
	p->paused = 1;
	if (p->out_open)
		ev_io_set(&p->out_io, 0);
	if (p->err_open)
		ev_io_set(&p->err_io, 0);
}

/* Read what a stream holds now, bounded; its EOF closes it. */
static void
proc_drain_stream(struct proc *p, struct ev_io *io, int *open_flag)
{
	int	guard, n = 0;

	for (guard = 0; guard < 128 && *open_flag && !ev->congested(); guard++)
		if ((n = proc_read_chunk(p, io)) <= 0)
			break;
	if (n == -1) {
		proc_close_stream(p, io, open_flag);
		proc_emit_closed(p);
	}
}

static void	proc_sigchld(int, void *);

void
proc_resume_output(void)
{
	struct proc	*p, *next;

	for (p = procs; p != NULL; p = p->next) {
		if (!p->paused)
			continue;
		p->paused = 0;
		if (p->out_open)
			ev_io_set(&p->out_io, EPOLLIN);
		if (p->err_open)
			ev_io_set(&p->err_io, EPOLLIN);
	}
	/*
	 * Collect now what the children wrote and whether they exited, rather
	 * than on the loop's next turn: a client coming back (resume) must find
	 * it all in the first process/read.
	 */
	proc_sigchld(SIGCHLD, NULL);
	for (p = procs; p != NULL; p = next) {
		next = p->next;
		if (p->closed || p->paused)
			continue;
		proc_drain_stream(p, &p->out_io, &p->out_open);
		if (!p->closed)
			proc_drain_stream(p, &p->err_io, &p->err_open);
	}
}

static void
proc_out_cb(struct ev_io *io, uint32_t events, void *arg)
{
	struct proc	*p = arg;
	int		*open_flag = io == &p->out_io ? &p->out_open : &p->err_open;
	int		 i, n = 0;

	/*
	 * A slow client: leave the bytes in the pipe, the child blocks.  With
	 * no client (the session waits for one) the children are drained into
	 * their retention, oldest evicted, and reaped as they exit.
	 */
	if (ev->congested()) {
		proc_pause(p);
		return;
	}
	/* a short read emptied the pipe: no read more to hear EAGAIN */
	for (i = 0; i < PROC_READ_BATCH && (n = proc_read_chunk(p, io)) == 2 &&
	    !ev->congested(); i++)
		;
	if (n == -1) {
		proc_close_stream(p, io, open_flag);
		proc_emit_closed(p);
	}
}

static void
proc_in_cb(struct ev_io *io, uint32_t events, void *arg)
{
	struct proc	*p = arg;
	ssize_t		 n;

	while (buf_avail(&p->inbuf) > 0) {
		n = write(io->fd, buf_head(&p->inbuf), buf_avail(&p->inbuf));
		if (n == -1) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			/* EPIPE: the child closed its stdin; drop what is left */
			log_debug("stdin of %s: %s", p->id, strerror(errno));
			buf_reset(&p->inbuf);
			break;
		}
		buf_consume(&p->inbuf, (size_t)n);
	}
	ev_io_set(io, 0);
}

int
proc_write_stdin(struct proc *p, const void *data, size_t len)
{
	if (p->terminated || (!p->in_open && !p->exited))
		return -1;
	if (p->exited || len == 0)
		return 0;
	if (buf_avail(&p->inbuf) + len > lim.max_stdin || buf_append(&p->inbuf, data, len) == -1)
		return -1;
	ev_io_set(&p->in_io, EPOLLOUT);
	return 0;
}

int
proc_seen_write_id(struct proc *p, const char *wid)
{
	size_t	i;

	for (i = 0; i < p->nwrite_ids; i++)
		if (strcmp(p->write_ids[i], wid) == 0)
			return 1;
	return 0;
}

void
proc_remember_write_id(struct proc *p, const char *wid)
{
	char	*copy;

	if ((copy = strdup(wid)) == NULL)
		return;
	if (p->nwrite_ids == PROC_WRITE_IDS) {
		free(p->write_ids[0]);
		memmove(p->write_ids, p->write_ids + 1,
		    (PROC_WRITE_IDS - 1) * sizeof(p->write_ids[0]));
		p->nwrite_ids--;
	}
	p->write_ids[p->nwrite_ids++] = copy;
}

/* Denial wording in one of the streams of r (the sandbox judges the words). */
static int
denial_words(const struct out_ring *r)
{
	static const enum proc_stream	 streams[] = { STREAM_STDOUT, STREAM_STDERR, STREAM_PTY };
	struct sandbox_words		 w;
	const struct out_chunk		*c;
	size_t				 i, s;

	for (s = 0; s < sizeof(streams) / sizeof(streams[0]); s++) {
		memset(&w, 0, sizeof(w));
		for (i = 0; i < r->n && !w.found; i++)
			if ((c = out_ring_at(r, i))->stream == streams[s])
				sandbox_words_feed(&w, c->data, c->len);
		if (w.found)
			return 1;
	}
	return 0;
}

static void
proc_exited(struct proc *p, int status)
{
	uint64_t	seq;
	int		guard;

	if (WIFEXITED(status))
		p->exit_code = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		/* the reference's PTY layer reports any death by signal as 1 */
		p->exit_code = p->tty ? 1 : 128 + WTERMSIG(status);
	else
		p->exit_code = -1;
	/* Output already in the pipes goes out before the exit, bounded. */
	for (guard = 0; guard < 128 && p->out_open && !ev->congested(); guard++)
		if (proc_read_chunk(p, &p->out_io) <= 0)
			break;
	for (guard = 0; guard < 128 && p->err_open && !ev->congested(); guard++)
		if (proc_read_chunk(p, &p->err_io) <= 0)
			break;
	if (p->sandboxed)
		p->sandbox_denied = sandbox_denied(p->exit_code, denial_words(&p->ring));
	p->exited = 1;
	/* its credentials die with it */
	netproxy_unregister(p->netreg);
	p->netreg = NULL;
	ev_timer_stop(&p->kill_timer);
	ev_hold(-1);
	seq = p->next_seq++;
	ev->exited(p, seq);
	ev->changed(p);
	proc_emit_closed(p);
}

static void
proc_sigchld(int signo, void *arg)
{
	struct proc	*p;
	pid_t		 pid;
	int		 status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (pid == spawner_pid()) {
			spawner_lost();
			continue;
		}
		/* its group may be empty now: the helper must not kill that number */
		spawner_reaped(pid);
		for (p = procs; p != NULL; p = p->next)
			if (p->pid == pid && !p->exited)
				break;
		if (p != NULL)
			proc_exited(p, status);
		else if (!proc_snapshot_reaped(pid, status))
			log_debug("reaped descendant %ld", (long)pid);
	}
}

void
proc_kill_all(void)
{
	struct proc	*p;

	for (p = procs; p != NULL; p = p->next)
		proc_signal_group(p, SIGKILL);
}

/* Kill every child we have, tracked or adopted; 1 if there were any. */
static int
proc_kill_children(void)
{
	pid_t	kids[1024];
	size_t	n, i;
	int	any = 0;

	n = children_list(kids, 1024);
	for (i = 0; i < n; i++) {
		/* the spawn helper is ours too, and goes last (spawner_stop) */
		if (kids[i] == spawner_pid())
			continue;
		/* the group first: a daemon may have made its own */
		kill(-kids[i], SIGKILL);
		kill(kids[i], SIGKILL);
		any = 1;
	}
	return any;
}

/*
 * A daemon that left its process group keeps our pipes open; it comes back
 * to us (we are its subreaper) once its parent dies, and is killed then.
 */
static void
proc_sweep(struct ev_timer *t, void *arg)
{
	if (proc_kill_children())
		ev_timer_start(&sweep_timer, 50);
}

void
proc_final_sweep(void)
{
	struct proc	*p;
	pid_t		 pid;
	int		 n;

	ev_timer_stop(&sweep_timer);
	/* each reap may hand us the orphans of the one reaped: kill again */
	for (n = 0; n < 100000 && proc_kill_children(); n++) {
		if ((pid = waitpid(-1, NULL, 0)) == -1 && errno == ECHILD)
			break;
		spawner_reaped(pid);
	}
	/* nothing of ours runs now: no placeholder is needed */
	for (p = procs; p != NULL; p = p->next) {
		sandbox_guards_release(p->guards);
		p->guards = NULL;
	}
}

void
proc_end_session(void)
{
	struct proc	*p;

	/*
	 * Whatever the transport still says of the gone client, what closes
	 * from now on is forgotten at once: an instance with nothing left to
	 * serve exits instead of waiting out the keep time.
	 */
	ended = 1;
	proc_kill_all();
	proc_snapshot_end();
	for (p = procs; p != NULL; p = p->next)
		if (p->closed)
			ev_timer_start(&p->expire_timer, 0);
	proc_sweep(&sweep_timer, NULL);
	/* nobody reads now: let EOFs through so the loop can finish */
	proc_resume_output();
}

void
proc_each(void (*fn)(struct proc *))
{
	struct proc	*p, *next;

	for (p = procs; p != NULL; p = next) {
		next = p->next;
		fn(p);
	}
}

void
proc_init(const struct proc_events *events, const struct proc_limits *limits)
{
	ev = events;
	lim = *limits;
	/* orphans of our children come back to us, so nothing escapes */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) == -1)
		log_warn("PR_SET_CHILD_SUBREAPER");
	if (ev_signal(SIGCHLD, proc_sigchld, NULL) == -1)
		fatalx("cannot watch SIGCHLD");
	ev_timer_init(&sweep_timer, proc_sweep, NULL);
}
