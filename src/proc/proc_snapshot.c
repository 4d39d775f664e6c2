#include "config.h"

#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evloop.h"
#include "fdio.h"
#include "log.h"
#include "netproxy/netproxy.h"
#include "proc/proc_snapshot.h"
#include "proc/proc_spawn.h"
#include "sandbox/sandbox.h"
#include "snapshot/snapshot.h"
#include "util/children.h"

struct cap_waiter {
	void			*arg;
	proc_snapshot_resume	*resume;
	struct cap_waiter	*next;
};

struct capture {
	char			*key;
	pid_t			 pid;
	struct ev_io		 out_io, err_io;
	int			 out_open, err_open;
	char			*out;
	size_t			 len;
	int			 failed;
	int			 eof;		/* its stdout is over */
	int			 exited;	/* reaped: failed unless it exited 0 */
	struct ev_timer		 limit, reap;
	struct sbx_guard	*guards;
	struct netproxy_reg	*reg;		/* its network's registration, or NULL */
	struct cap_waiter	*waiters;
	struct capture		*next;
};

static struct capture	*captures;
static int		 ending;	/* the session is over: nothing starts now */

static struct capture *
capture_find(const char *key)
{
	struct capture	*c;

	for (c = captures; c != NULL; c = c->next)
		if (strcmp(c->key, key) == 0)
			return c;
	return NULL;
}

static void
capture_unlink(struct capture *c)
{
	struct capture	**pp;

	for (pp = &captures; *pp != NULL; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			return;
		}
}

static void
close_io(struct ev_io *io, int *open)
{
	if (!*open)
		return;
	ev_io_del(io);
	close(io->fd);
	*open = 0;
}

/* Freed from a timer of its own, never under a descriptor's callback. */
static void
capture_free(struct ev_timer *t, void *arg)
{
	struct capture	*c = arg;

	free(c->key);
	free(c->out);
	free(c);
}

/* A child's process group, from /proc (execd's own seccomp has no getpgid); -1 if unknown. */
static pid_t
group_of(pid_t pid)
{
	char		 path[64], buf[512], *p;
	long		 pgrp;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if (path_read_small(path, buf, sizeof(buf)) == -1)
		return -1;
	/* "pid (comm) state ppid pgrp ...": comm may hold anything but the last ')' */
	if ((p = strrchr(buf, ')')) == NULL || sscanf(p + 1, " %*c %*d %ld", &pgrp) != 1)
		return -1;
	return (pid_t)pgrp;
}

/*
 * What the profile started in the background goes with the capture.  The
 * group's number is ours while the shell is not reaped; after, it may be
 * anyone's: then only what execd adopted of that group is killed, by pid.
 */
static void
kill_group(struct capture *c)
{
	pid_t	kids[1024];
	size_t	n, i;

	if (!c->exited) {
		kill(-c->pid, SIGKILL);
		return;
	}
	n = children_list(kids, sizeof(kids) / sizeof(kids[0]));
	for (i = 0; i < n; i++)
		if (group_of(kids[i]) == c->pid)
			kill(kids[i], SIGKILL);
}

/* Over: keep what it gave, resume who waited, kill what it left. */
static void
capture_over(struct capture *c)
{
	struct cap_waiter	*w, *next;

	ev_timer_stop(&c->limit);
	close_io(&c->out_io, &c->out_open);
	close_io(&c->err_io, &c->err_open);
	kill_group(c);
	sandbox_guards_release(c->guards);
	c->guards = NULL;
	/* what the profile left is killed: its network goes (the routes end with the shell) */
	netproxy_unregister(c->reg);
	c->reg = NULL;
	capture_unlink(c);
	if (snapshot_done(c->key, c->failed ? NULL : c->out, c->len, ev_now()) == -1)
		log_warnx("shell snapshot: capture by pid %ld failed%s", (long)c->pid,
		    c->failed ? "" : ": no snapshot in its output");
	else
		log_debug("shell snapshot: captured by pid %ld, %zu bytes", (long)c->pid, c->len);
	for (w = c->waiters; w != NULL; w = next) {
		next = w->next;
		w->resume(w->arg, ending);
		free(w);
	}
	c->waiters = NULL;
	ev_timer_start(&c->reap, 0);
}

static void
capture_timeout(struct ev_timer *t, void *arg)
{
	struct capture	*c = arg;

	log_warnx("shell snapshot: capture by pid %ld timed out", (long)c->pid);
	c->failed = 1;
	capture_over(c);
}

static void
capture_read(struct ev_io *io, uint32_t events, void *arg)
{
	struct capture	*c = arg;
	char		 buf[8192], *nb;
	ssize_t		 n;

	if ((n = read(io->fd, buf, sizeof(buf))) == -1) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		log_warn("shell snapshot: read");
		c->failed = 1;
	}
	if (n <= 0) {
		if (io != &c->out_io) {
			close_io(&c->err_io, &c->err_open);
			return;
		}
		/* over once its shell has exited too, and said how */
		c->eof = 1;
		if (c->exited || c->failed)
			capture_over(c);
		else
			close_io(&c->out_io, &c->out_open);
		return;
	}
	if (io == &c->err_io)
		return;		/* what the profile says on stderr is not kept */
	if (c->len + (size_t)n > SNAPSHOT_MAX_BYTES) {
		log_warnx("shell snapshot: capture by pid %ld over %u bytes", (long)c->pid,
		    SNAPSHOT_MAX_BYTES);
		c->failed = 1;
		capture_over(c);
		return;
	}
	if ((nb = realloc(c->out, c->len + (size_t)n)) == NULL) {
		log_warn("shell snapshot");
		c->failed = 1;
		capture_over(c);
		return;
	}
	c->out = nb;
	memcpy(c->out + c->len, buf, (size_t)n);
	c->len += (size_t)n;
}

static int
watch(struct capture *c, struct ev_io *io, int fd, int *open)
{
	int	fl;

	if ((fl = fcntl(fd, F_GETFL)) == -1 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1 ||
	    ev_io_add(io, fd, EPOLLIN, capture_read, c) == -1) {
		log_warn("shell snapshot: watch");
		close(fd);
		return -1;
	}
	*open = 1;
	return 0;
}

int
proc_snapshot_capture(const char *key, const struct spawn_req *rq, struct sandbox_plan *sbx,
    struct netproxy_reg *reg)
{
	struct capture		*c;
	struct spawn_res	 res;
	char			 msg[256];
	int			 err;

	if ((c = calloc(1, sizeof(*c))) == NULL || (c->key = strdup(key)) == NULL) {
		log_warn("shell snapshot");
		free(c);
		goto fail;
	}
	if (proc_spawn(rq, &res, &err, msg, sizeof(msg)) == -1) {
		log_warnx("shell snapshot: cannot capture: %s", msg);
		free(c->key);
		free(c);
		goto fail;
	}
	if (res.in_fd != -1)
		close(res.in_fd);
	c->pid = res.pid;
	/* only now: the spawn made the placeholders these guards hold */
	c->guards = sandbox_take_guards(sbx);
	/*
	 * The network the command would have, as 0.171.0's capture has it:
	 * its proxy routes, and with transparent TCP the DNS answerer and
	 * the connect supervisor (all end with the shell), and the
	 * registration they go through (until the capture is over).
	 */
	sandbox_started(sbx, res.pid);
	c->reg = reg;
	reg = NULL;
	ev_timer_init(&c->limit, capture_timeout, c);
	ev_timer_init(&c->reap, capture_free, c);
	c->next = captures;
	captures = c;
	if (watch(c, &c->out_io, res.out_fd, &c->out_open) == -1 ||
	    watch(c, &c->err_io, res.err_fd, &c->err_open) == -1) {
		c->failed = 1;
		capture_over(c);
		return 0;
	}
	ev_timer_start(&c->limit, SNAPSHOT_CAPTURE_MS);
	return 0;
fail:
	netproxy_unregister(reg);
	snapshot_done(key, NULL, 0, ev_now());
	return -1;
}

int
proc_snapshot_reaped(pid_t pid, int status)
{
	struct capture	*c;

	for (c = captures; c != NULL; c = c->next)
		if (c->pid == pid && !c->exited)
			break;
	if (c == NULL)
		return 0;
	c->exited = 1;
	/* as the reference's: a shell that did not exit 0 captured nothing */
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		log_warnx("shell snapshot: capture by pid %ld exited with status %d", (long)pid,
		    status);
		c->failed = 1;
	}
	if (c->eof)
		capture_over(c);
	return 1;
}

int
proc_snapshot_wait(const char *key, proc_snapshot_resume *resume, void *arg)
{
	struct capture		*c;
	struct cap_waiter	*w, **pp;

	if ((c = capture_find(key)) == NULL)
		return -1;
	if ((w = calloc(1, sizeof(*w))) == NULL) {
		log_warn("shell snapshot");
		return -1;
	}
	w->arg = arg;
	w->resume = resume;
	/* resumed in the order they came */
	for (pp = &c->waiters; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = w;
	return 0;
}

void
proc_snapshot_end(void)
{
	struct capture	*c;

	ending = 1;
	while ((c = captures) != NULL) {
		c->failed = 1;
		capture_over(c);
	}
	ending = 0;
	snapshot_clear();
}
