#include "config.h"

#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/fdpass.h"
#include "fdio.h"
#include "log.h"
#include "sandbox/sandbox_kernel.h"
#include "sandbox/sandbox_plan.h"
#include "util/wire.h"
#include "spawn/spawner.h"
#include "spawn/spawn_groups.h"

#define OP_SPAWN	1
#define OP_PROBE_NS	2
#define OP_CLOSE	3	/* close the descriptors sent; no answer */
#define OP_FORGET	4	/* a command's process group is empty; no answer */
#define NO_ANSWER	INT32_MIN
#define MAX_REQUEST	(64U << 20)	/* argv and environment are bounded by the message cap */
#define MAX_STRINGS	(1U << 20)

static struct {
	int	started;	/* once started, never fork directly: the filter forbids it */
	pid_t	pid;
	int	sock;
} sp = { 0, -1, -1 };

/* In execd: reaped leaders whose groups still had members. */
static struct {
	pid_t	*v;
	size_t	 n, cap;
} linger;

/* ---- both sides: one message, descriptors on its first byte ---- */

static int
send_msg(int s, const struct wire_out *w)
{
	uint32_t	 len = (uint32_t)w->b.len;
	struct iovec	 iov[2] = { { &len, sizeof(len) }, { w->b.data, w->b.len } };
	ssize_t		 n;
	size_t		 sent;
	int		 e;

	while ((n = fdpass_send(s, iov, 2, w->fds, w->nfds, MSG_NOSIGNAL)) == -1 &&
	    errno == EINTR)
		;
	if (n == -1)
		return -1;
	if ((size_t)n < sizeof(len)) {
		errno = EPIPE;
		return -1;
	}
	/* a large request goes in pieces; the descriptors went with the first */
	sent = (size_t)n - sizeof(len);
	if ((e = fd_write_all(s, w->b.data + sent, w->b.len - sent)) != 0) {
		errno = e;
		return -1;
	}
	return 0;
}

/* ---- in the helper ---- */

static void
close_all(int *fds, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		close(fds[i]);
}

/* The header and its descriptors (room for FDPASS_MAX); 0 at EOF. */
static ssize_t
recv_head(int s, uint32_t *len, int *fds, size_t *nfds)
{
	ssize_t	n;

	while ((n = fdpass_recv(s, len, sizeof(*len), fds, nfds, MSG_WAITALL)) == -1 &&
	    errno == EINTR)
		;
	if (n > 0 && (n != sizeof(*len) || *nfds > WIRE_MAX_FDS)) {
		close_all(fds, *nfds);
		errno = EPROTO;
		return -1;
	}
	return n;
}

/*
 * The closer, the helper's child: closes the descriptors OP_CLOSE brings.
 * They are removed placeholders' last references, and the last close of
 * one frees its inode and block, which some file systems discard
 * synchronously (milliseconds on this one, ext4 mounted with discard):
 * done in the helper, it held up the next spawn that long.  Started at
 * the first OP_CLOSE; gone with the helper.
 */
static struct {
	pid_t	pid;
	int	sock;
} closer = { -1, -1 };

static void __attribute__((noreturn))
closer_main(int s, pid_t helper)
{
	int	fds[FDPASS_MAX];
	size_t	nfds;
	ssize_t	n;
	char	one;

	/* a helper gone before the death signal was set sends none */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1 || getppid() != helper)
		_exit(1);
	/* never before a spawn, even if execd is real-time */
	(void)sched_setscheduler(0, SCHED_OTHER, &(struct sched_param){ 0 });
	(void)setpriority(PRIO_PROCESS, 0, 19);
	if (dup2(s, 0) == -1 || close_range(1, ~0U, 0) == -1)
		_exit(1);
	for (;;) {
		nfds = 0;
		if ((n = fdpass_recv(0, &one, 1, fds, &nfds, 0)) == 0 ||
		    (n == -1 && errno != EINTR))
			_exit(0);
		close_all(fds, nfds);
	}
}

/* Has the closer taken them (the helper's copies then go without a last close)? */
static int
hand_to_closer(const int *fds, size_t nfds)
{
	struct iovec	iov;
	char		one = 1;
	int		sv[2];
	pid_t		helper = getpid();

	if (closer.pid == -1) {
		/* SEQPACKET, not DGRAM: the closer reads an end of file when the helper goes */
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1)
			return 0;
		if ((closer.pid = fork()) == -1) {
			close(sv[0]);
			close(sv[1]);
			return 0;
		}
		if (closer.pid == 0)
			closer_main(sv[1], helper);
		close(sv[1]);
		closer.sock = sv[0];
	}
	iov.iov_base = &one;
	iov.iov_len = 1;
	return fdpass_send(closer.sock, &iov, 1, fds, nfds, MSG_NOSIGNAL | MSG_DONTWAIT) == 1;
}

/* argv or envp: a count, then the strings; pointers into the message. */
static char **
get_vector(struct wire_in *r)
{
	uint32_t	 n = wire_get_u32(r), i;
	char		**v;

	if (r->bad || n > MAX_STRINGS || (v = calloc((size_t)n + 1, sizeof(*v))) == NULL) {
		r->bad = 1;
		return NULL;
	}
	for (i = 0; i < n && !r->bad; i++)
		if ((v[i] = (char *)wire_get_str(r)) == NULL)
			r->bad = 1;
	if (r->bad) {
		free(v);
		return NULL;
	}
	return v;
}

void
spawner_msg_free(struct spawn_msg *m)
{
	sandbox_plan_free(m->plan);
	free(m->argv);
	free(m->envp);
	memset(m, 0, sizeof(*m));
}

int
spawner_decode(struct wire_in *r, struct spawn_msg *m)
{
	int	i;

	memset(m, 0, sizeof(*m));
	m->prog = wire_get_str(r);
	m->rq.cwd = wire_get_str(r);
	m->rq.arg0 = wire_get_str(r);
	m->slave = wire_get_str(r);
	m->rq.tty = wire_get_u32(r) != 0;
	if ((m->argv = get_vector(r)) == NULL || (m->envp = get_vector(r)) == NULL)
		goto bad;
	for (i = 0; i < 3; i++)
		m->fds[i] = wire_get_fd(r);
	m->errfd = wire_get_fd(r);
	m->rq.restore_fd = wire_get_fd(r);
	if (wire_get_u32(r) != 0 && (m->plan = sandbox_plan_get(r)) == NULL)
		goto bad;
	if (r->bad || r->p != r->end || m->prog == NULL || m->rq.cwd == NULL ||
	    m->argv[0] == NULL || m->errfd == -1 || (m->rq.tty ? m->slave == NULL :
	    m->fds[0] == -1 || m->fds[1] == -1 || m->fds[2] == -1))
		goto bad;
	m->rq.argv = m->argv;
	m->rq.envp = m->envp;
	m->rq.sandbox = m->plan;
	return 0;
bad:
	spawner_msg_free(m);
	return -1;
}

static pid_t
helper_spawn(struct wire_in *r)
{
	struct spawn_msg	m;
	pid_t			pid;
	int			e;

	if (spawner_decode(r, &m) == -1) {
		errno = EPROTO;
		return -1;
	}
	if (groups_reserve() == -1) {
		e = errno;
		spawner_msg_free(&m);
		errno = e;
		return -1;
	}
	sandbox_spare_take(m.plan);
	/* the command is execd's child: execd reaps it and adopts what it leaves */
	if ((pid = (pid_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0)) == 0)
		spawn_child(&m.rq, m.prog, m.slave, m.fds, m.errfd);
	e = errno;
	if (pid != -1) {
		groups_add(pid);
		sandbox_spare_make(m.plan);
	}
	spawner_msg_free(&m);
	errno = e;
	return pid;
}

static int32_t
helper_request(int s, uint32_t len, const int *fds, size_t nfds)
{
	struct wire_in	 r;
	uint8_t		*msg;
	int32_t		 res;
	pid_t		 pid;

	if (len > MAX_REQUEST || (msg = malloc(len ? len : 1)) == NULL)
		return -ENOMEM;
	if (fd_read_full(s, msg, len) != 0) {
		free(msg);
		return -EPIPE;
	}
	memset(&r, 0, sizeof(r));
	r.p = msg;
	r.end = msg + len;
	r.fds = fds;
	r.nfds = nfds;
	switch (wire_get_u32(&r)) {
	case OP_SPAWN:
		res = (pid = helper_spawn(&r)) == -1 ? -errno : (int32_t)pid;
		break;
	case OP_PROBE_NS:
		res = sandbox_probe_ns(wire_get_u32(&r) != 0);
		break;
	case OP_CLOSE:
		/* the caller closes its copies (close_all): not the last, in flight */
		(void)hand_to_closer(fds, nfds);
		res = NO_ANSWER;
		break;
	case OP_FORGET:
		groups_forget((pid_t)wire_get_u32(&r));
		res = NO_ANSWER;
		break;
	default:
		res = -EPROTO;
	}
	free(msg);
	return res;
}

/* execd is gone (its end of the socket): what it started goes too. */
static void __attribute__((noreturn))
helper_end(int code)
{
	groups_kill_all();
	_exit(code);
}

/*
 * No death signal: it would kill the helper before it could kill the
 * commands' groups.  execd's end of file comes however execd ends (the
 * socket is close-on-exec, and nothing else of execd's forks holds it).
 */
static void __attribute__((noreturn))
helper_main(int s, pid_t parent)
{
	int	 fds[FDPASS_MAX], nul;
	size_t	 nfds;
	uint32_t len;
	int32_t	 res;
	ssize_t	 n;

	if (getppid() != parent)
		_exit(1);
	spawn_child_parent(parent);
	(void)prctl(PR_SET_NAME, "execd-spawn", 0, 0, 0);
	/* the connection stays execd's alone; stderr is the log */
	if ((nul = open("/dev/null", O_RDWR)) == -1 || dup2(nul, 0) == -1 || dup2(nul, 1) == -1)
		_exit(1);
	if (dup2(s, 3) == -1 || close_range(4, ~0U, 0) == -1)
		_exit(1);
	s = 3;
	for (;;) {
		if ((n = recv_head(s, &len, fds, &nfds)) == 0)
			helper_end(0);
		if (n == -1) {
			log_warn("spawn helper: request");
			/* a malformed request is execd's bug, not its end */
			if (errno == EPROTO)
				_exit(1);
			helper_end(1);
		}
		res = helper_request(s, len, fds, nfds);
		close_all(fds, nfds);
		if (res == -EPIPE)
			helper_end(1);
		if (res != NO_ANSWER && fd_write_all(s, &res, sizeof(res)) != 0)
			helper_end(1);
	}
}

/* ---- in execd ---- */

int
spawner_start(void)
{
	pid_t	parent = getpid();
	int	sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1) {
		log_warn("spawn helper: socketpair");
		return -1;
	}
	if ((sp.pid = fork()) == -1) {
		log_warn("spawn helper: fork");
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (sp.pid == 0) {
		close(sv[0]);
		helper_main(sv[1], parent);
	}
	close(sv[1]);
	sp.sock = sv[0];
	sp.started = 1;
	log_debug("spawn helper: pid %ld", (long)sp.pid);
	return 0;
}

pid_t
spawner_pid(void)
{
	return sp.pid;
}

int
spawner_used(void)
{
	return sp.started;
}

void
spawner_lost(void)
{
	log_warnx("spawn helper %ld is gone: no process can be started", (long)sp.pid);
	sp.pid = -1;
}

void
spawner_stop(void)
{
	if (sp.sock != -1)
		close(sp.sock);
	sp.sock = -1;
	if (sp.pid > 0)
		while (waitpid(sp.pid, NULL, 0) == -1 && errno == EINTR)
			;
	sp.pid = -1;
}

/*
 * One request, one answer: a pid or a result, else -errno.  meanwhile,
 * if not NULL, runs once the request is sent, while the helper works.
 */
static int32_t
call(struct wire_out *w, int (*meanwhile)(void *), void *arg)
{
	int32_t	res;

	if (w->failed) {
		buf_free(&w->b);
		return -ENOMEM;
	}
	if (sp.pid == -1 || sp.sock == -1) {
		buf_free(&w->b);
		return -EAGAIN;
	}
	if (send_msg(sp.sock, w) == -1)
		goto fail;
	if (meanwhile != NULL)
		(void)meanwhile(arg);
	if ((errno = fd_read_full(sp.sock, &res, sizeof(res))) != 0)
		goto fail;
	buf_free(&w->b);
	return res;
fail:
	log_warn("spawn helper %ld", (long)sp.pid);
	buf_free(&w->b);
	return -EAGAIN;
}

static void
put_vector(struct wire_out *w, char *const *v)
{
	uint32_t	n;

	for (n = 0; v != NULL && v[n] != NULL; n++)
		;
	wire_u32(w, n);
	for (n = 0; v != NULL && v[n] != NULL; n++)
		wire_str(w, v[n]);
}

pid_t
spawner_spawn(const struct spawn_req *rq, const char *prog, const char *slave,
    const int fds[3], int errfd)
{
	struct wire_out	w;
	int32_t		res;
	int		i;

	memset(&w, 0, sizeof(w));
	wire_u32(&w, OP_SPAWN);
	wire_str(&w, prog);
	wire_str(&w, rq->cwd);
	wire_str(&w, rq->arg0);
	wire_str(&w, rq->tty ? slave : NULL);
	wire_u32(&w, rq->tty);
	put_vector(&w, rq->argv);
	put_vector(&w, rq->envp);
	for (i = 0; i < 3; i++)
		wire_fd(&w, rq->tty ? -1 : fds[i]);
	wire_fd(&w, errfd);
	wire_fd(&w, rq->restore_fd);
	wire_u32(&w, rq->sandbox != NULL);
	if (rq->sandbox != NULL)
		sandbox_plan_put(rq->sandbox, &w);
	/* the helper forks while the caller does its part (the child waits for it) */
	if ((res = call(&w, rq->spawned, rq->spawned_arg)) < 0) {
		errno = -res;
		return -1;
	}
	return (pid_t)res;
}

/* Tell the helper a group is empty: its number may name another's from now on. */
static void
forget_group(pid_t pgid)
{
	struct wire_out	w;

	memset(&w, 0, sizeof(w));
	wire_u32(&w, OP_FORGET);
	wire_u32(&w, (uint32_t)pgid);
	if (!w.failed && sp.pid != -1 && sp.sock != -1 && send_msg(sp.sock, &w) == -1)
		log_warn("spawn helper %ld: forgetting group %ld", (long)sp.pid, (long)pgid);
	buf_free(&w.b);
}

static int
group_empty(pid_t pgid)
{
	return kill(-pgid, 0) == -1 && errno == ESRCH;
}

/*
 * A group's last member is our child when it dies (we are the subreaper
 * of its orphans) unless its parent is outside the group and alive: each
 * reap is when a group may have emptied.  A leader reaped with its group
 * still in use (a child left running in it) is checked again at each
 * reap after, and forgotten once empty.
 */
void
spawner_reaped(pid_t pid)
{
	pid_t	*v;
	size_t	 i = 0;

	if (!sp.started || sp.pid == -1 || pid == sp.pid || pid <= 1)
		return;
	while (i < linger.n)
		if (group_empty(linger.v[i])) {
			forget_group(linger.v[i]);
			linger.v[i] = linger.v[--linger.n];
		} else
			i++;
	if (group_empty(pid)) {
		forget_group(pid);
		return;
	}
	if (linger.n == linger.cap) {
		if ((v = reallocarray(linger.v, linger.cap ? linger.cap * 2 : 16,
		    sizeof(*v))) == NULL) {
			/* untracked, it is not killed with us: better than a stranger */
			log_warnx("out of memory: process group %ld forgotten", (long)pid);
			forget_group(pid);
			return;
		}
		linger.v = v;
		linger.cap = linger.cap ? linger.cap * 2 : 16;
	}
	linger.v[linger.n++] = pid;
}

void
spawner_close_later(const int *fds, size_t n)
{
	struct wire_out	w;
	size_t		i;

	memset(&w, 0, sizeof(w));
	wire_u32(&w, OP_CLOSE);
	for (i = 0; i < n && i < WIRE_MAX_FDS; i++)
		wire_fd(&w, fds[i]);
	/* in flight, the helper's copies keep the files open: ours go at once */
	if (!w.failed && sp.pid != -1 && sp.sock != -1 && send_msg(sp.sock, &w) == -1)
		log_warn("spawn helper %ld: handing over descriptors", (long)sp.pid);
	buf_free(&w.b);
	for (i = 0; i < n; i++)
		close(fds[i]);
}

int
spawner_probe_ns(int direct)
{
	struct wire_out	w;
	int32_t		res;

	memset(&w, 0, sizeof(w));
	wire_u32(&w, OP_PROBE_NS);
	wire_u32(&w, direct != 0);
	if ((res = call(&w, NULL, NULL)) < 0) {
		errno = -res;
		return -1;
	}
	return res;
}
