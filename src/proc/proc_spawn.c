#include "config.h"

#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "buf.h"
#include "jsonx.h"
#include "log.h"
#include "rpc/errno_text.h"
#include "proc/proc_spawn.h"
#include "spawn/spawner.h"

#define DEFAULT_PATH	"/usr/local/bin:/usr/bin:/bin"

static const char *
env_lookup(char *const *envp, const char *name)
{
	size_t	n = strlen(name);

	for (; envp != NULL && *envp != NULL; envp++)
		if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

/* Resolve a bare program name on PATH in the parent, so a miss is a clean error. */
static int
resolve_program(const char *prog, char *const *envp, char *out, size_t outlen)
{
	const char	*path, *p, *end;
	struct stat	 st;
	int		 saw_eacces = 0;
	size_t		 n;

	if (strchr(prog, '/') != NULL) {
		if (strlen(prog) >= outlen)
			return ENAMETOOLONG;
		strcpy(out, prog);
		return 0;
	}
	if (*prog == '\0')
		return ENOENT;
	/* the reference's exec (musl's execvp) refuses a name longer than NAME_MAX first */
	if (strlen(prog) > NAME_MAX)
		return ENAMETOOLONG;
	if ((path = env_lookup(envp, "PATH")) == NULL && (path = getenv("PATH")) == NULL)
		path = DEFAULT_PATH;
	for (p = path; ; p = end + 1) {
		end = strchr(p, ':');
		n = end ? (size_t)(end - p) : strlen(p);
		if (snprintf(out, outlen, "%.*s%s%s", (int)n, p, n ? "/" : "", prog) <
		    (int)outlen && stat(out, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(out, X_OK) == 0)
				return 0;
			saw_eacces = 1;
		}
		if (end == NULL)
			break;
	}
	return saw_eacces ? EACCES : ENOENT;
}

/* Rust's Path::join: an absolute b replaces a; "" adds a separator */
static int
path_join(char *out, size_t len, const char *a, const char *b, size_t blen)
{
	size_t	alen = strlen(a);

	if (blen > 0 && b[0] == '/')
		return snprintf(out, len, "%.*s", (int)blen, b) < (int)len ? 0 : -1;
	return snprintf(out, len, "%s%s%.*s", a, alen > 0 && a[alen - 1] == '/' ? "" : "/",
	    (int)blen, b) < (int)len ? 0 : -1;
}

/* msg from b, whole however long once sent (jx_err_setn); -1 */
static int
pty_fail(struct buf *b, char *msg, size_t msglen)
{
	struct jx_err	je;

	if (b->data == NULL)
		snprintf(msg, msglen, "out of memory");
	else {
		jx_err_setn(&je, b->data, b->len);
		snprintf(msg, msglen, "%s", je.msg);
	}
	buf_free(b);
	return -1;
}

static int
bufs(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

/*
 * The next of PATH's candidates for exe (*pp walks PATH, NULL at its end):
 * each entry taken from cwd, an empty one meaning cwd; an entry too long to
 * join is passed over.  1 with prog, 0 when none is left.
 */
static int
path_next(const char **pp, const char *cwd, const char *exe, char *prog, size_t len)
{
	const char	*p, *end;
	char		 dir[PATH_MAX];
	size_t		 n;

	while ((p = *pp) != NULL) {
		end = strchr(p, ':');
		n = end ? (size_t)(end - p) : strlen(p);
		*pp = end ? end + 1 : NULL;
		if (path_join(dir, sizeof(dir), cwd, p, n) == 0 &&
		    path_join(prog, len, dir, exe, strlen(exe)) == 0)
			return 1;
	}
	return 0;
}

/* ./x, ../x, . and ..: names taken from cwd only */
static int
pty_dot_relative(const char *exe)
{
	return strncmp(exe, "./", 2) == 0 || strcmp(exe, ".") == 0 ||
	    strncmp(exe, "../", 3) == 0 || strcmp(exe, "..") == 0;
}

/*
 * A PTY command's relative program, found as the reference's PTY spawner
 * (portable-pty) finds it: ./x and ../x in cwd only; any other name, a/b
 * too, along the child's own PATH, each entry taken from cwd.  0 with prog,
 * or -1 with its words in msg.
 */
/*
 * The same when arg0 is given (0.171.0 spawns those through another path):
 * ./x and ../x are taken from cwd unchecked (exec's own error then speaks);
 * any other name must be an executable file along PATH, each entry taken
 * from cwd, an empty entry meaning cwd itself.
 */
static int
pty_resolve_arg0(const struct spawn_req *rq, char *prog, size_t len, char *msg,
    size_t msglen)
{
	const char	*exe = rq->argv[0], *cwd = rq->cwd != NULL ? rq->cwd : ".";
	const char	*path, *p;
	struct buf	 b = { 0 };
	struct stat	 st;

	if (pty_dot_relative(exe)) {
		if (path_join(prog, len, cwd, exe, strlen(exe)) == 0)
			return 0;
		errno_text(ENAMETOOLONG, msg, msglen);
		return -1;
	}
	if ((path = env_lookup(rq->envp, "PATH")) == NULL) {
		bufs(&b, "Unable to resolve the PATH");
		return pty_fail(&b, msg, msglen);
	}
	for (p = path; path_next(&p, cwd, exe, prog, len); )
		if (stat(prog, &st) == 0 && S_ISREG(st.st_mode) && access(prog, X_OK) == 0)
			return 0;
	bufs(&b, "Unable to find executable ");
	bufs(&b, exe);
	bufs(&b, " in PTY PATH");
	return pty_fail(&b, msg, msglen);
}

static int
pty_resolve(const struct spawn_req *rq, char *prog, size_t len, char *msg, size_t msglen)
{
	const char	*exe = rq->argv[0], *cwd = rq->cwd != NULL ? rq->cwd : ".";
	const char	*path, *p, *why;
	struct buf	 b = { 0 };
	struct stat	 st;

	if (rq->arg0 != NULL)
		return pty_resolve_arg0(rq, prog, len, msg, msglen);
	bufs(&b, "Unable to spawn ");
	if (pty_dot_relative(exe)) {
		if (path_join(prog, len, cwd, exe, strlen(exe)) == -1) {
			buf_free(&b);
			errno_text(ENAMETOOLONG, msg, msglen);
			return -1;
		}
		if (stat(prog, &st) == 0 && S_ISDIR(st.st_mode))
			why = " because it is a directory";
		else if (access(prog, X_OK) == 0) {
			buf_free(&b);
			return 0;
		} else if (access(prog, F_OK) == 0)
			why = " because it is not executable";
		else
			why = " because it does not exist";
		bufs(&b, prog);
		bufs(&b, why);
		return pty_fail(&b, msg, msglen);
	}
	bufs(&b, exe);
	bufs(&b, " because:\n");
	if ((path = env_lookup(rq->envp, "PATH")) == NULL) {
		bufs(&b, "Unable to resolve the PATH");
		return pty_fail(&b, msg, msglen);
	}
	for (p = path; path_next(&p, cwd, exe, prog, len); ) {
		why = NULL;
		if (stat(prog, &st) == 0 && S_ISDIR(st.st_mode))
			why = " exists but is a directory.\n";
		else if (access(prog, X_OK) == 0) {
			buf_free(&b);
			return 0;
		} else if (access(prog, F_OK) == 0)
			why = " exists but is not executable.\n";
		if (why != NULL) {
			bufs(&b, prog);
			bufs(&b, why);
		}
	}
	bufs(&b, "No viable candidates found in PATH ");
	jx_debug_str(&b, path, strlen(path));
	return pty_fail(&b, msg, msglen);
}

/* The same for a start with arg0 (pty_resolve_arg0()); NULL: the NUL is refused later. */
static char *
pty_nul_words_arg0(const char *s, size_t len, json_t *env)
{
	struct buf	 b = { 0 };
	size_t		 i;
	int		 r;

	if (strncmp(s, "./", 2) == 0 || strncmp(s, "../", 3) == 0)
		return NULL;
	if (json_object_get(env, "PATH") == NULL)
		r = bufs(&b, "Unable to resolve the PATH");
	else {
		r = bufs(&b, "Unable to find executable ");
		for (i = 0; i < len && r == 0; i++)	/* the NUL as jx_id() keeps it */
			r = s[i] == '\0' ? buf_append(&b, "\xc0\x80", 2) :
			    buf_append(&b, s + i, 1);
		if (r == 0)
			r = bufs(&b, " in PTY PATH");
	}
	if (r == 0 && buf_append(&b, "", 1) == 0)
		return (char *)b.data;
	buf_free(&b);
	return NULL;
}

/*
 * A PTY command's relative program holding a NUL: the reference's PTY
 * spawner looks for it before anything refuses the NUL, and finds nothing
 * of that name (pty_resolve()).
 */
char *
proc_pty_nul_words(json_t *prog, const char *cwd, json_t *env, int with_arg0)
{
	struct buf	 b = { 0 };
	const char	*s = json_string_value(prog), *path;
	size_t		 i, len = json_string_length(prog);
	json_t		*pv;
	int		 r;

	if (s == NULL || strlen(s) == len || s[0] == '/')
		return NULL;
	if (with_arg0)
		return pty_nul_words_arg0(s, len, env);
	r = bufs(&b, "Unable to spawn ");
	if (strncmp(s, "./", 2) == 0 || strncmp(s, "../", 3) == 0) {
		r = r == 0 && buf_append(&b, cwd, strlen(cwd)) == 0 &&
		    buf_append(&b, "/", cwd[0] != '\0' && cwd[strlen(cwd) - 1] == '/' ? 0 : 1) == 0 ?
		    0 : -1;
	}
	for (i = 0; i < len && r == 0; i++)	/* the NUL as jx_id() keeps it */
		r = s[i] == '\0' ? buf_append(&b, "\xc0\x80", 2) : buf_append(&b, s + i, 1);
	pv = json_object_get(env, "PATH");
	path = json_string_value(pv);
	if (r == 0 && (strncmp(s, "./", 2) == 0 || strncmp(s, "../", 3) == 0))
		r = bufs(&b, " because it does not exist");
	else if (r == 0 && path == NULL)
		r = bufs(&b, " because:\nUnable to resolve the PATH");
	else if (r == 0)
		r = bufs(&b, " because:\nNo viable candidates found in PATH ") == 0 &&
		    jx_debug_str(&b, path, json_string_length(pv)) == 0 ? 0 : -1;
	if (r == 0 && buf_append(&b, "", 1) == 0)
		return (char *)b.data;
	buf_free(&b);
	return NULL;
}

static int
open_pty(int *master, char *slave, size_t slavelen, unsigned short rows, unsigned short cols)
{
	struct winsize	ws = { .ws_row = rows, .ws_col = cols };

	if ((*master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)) == -1)
		return -1;
	if (grantpt(*master) == -1 || unlockpt(*master) == -1 ||
	    ptsname_r(*master, slave, slavelen) != 0 ||
	    ioctl(*master, TIOCSWINSZ, &ws) == -1) {
		close(*master);
		return -1;
	}
	return 0;
}

static void
close_fds(int *fds, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (fds[i] != -1) {
			close(fds[i]);
			fds[i] = -1;
		}
}

static int
spawn_fail(int e, int *err, char *msg, size_t msglen)
{
	char	text[256];

	*err = e;
	snprintf(msg, msglen, "%s", errno_text(e, text, sizeof(text)));
	return -1;
}

int
proc_spawn(const struct spawn_req *rq, struct spawn_res *res, int *err, char *msg,
    size_t msglen)
{
	char	 prog[PATH_MAX], slave[128];
	int	 in[2] = { -1, -1 }, out[2] = { -1, -1 }, errp[2] = { -1, -1 };
	int	 rep[2] = { -1, -1 }, master = -1, nul = -1, fds[3], e;
	ssize_t	 n;
	pid_t	 pid;

	if (rq->tty && rq->argv[0][0] != '/') {
		if (pty_resolve(rq, prog, sizeof(prog), msg, msglen) == -1) {
			*err = 0;	/* the reference's words, no OS error: spawnFailed */
			return -1;
		}
	} else if ((e = resolve_program(rq->argv[0], rq->envp, prog, sizeof(prog))) != 0)
		return spawn_fail(e, err, msg, msglen);
	if (pipe2(rep, O_CLOEXEC) == -1)
		return spawn_fail(errno, err, msg, msglen);
	if (rq->tty) {
		if (open_pty(&master, slave, sizeof(slave), rq->rows, rq->cols) == -1)
			goto sysfail;
	} else {
		if (pipe2(out, O_CLOEXEC) == -1 || pipe2(errp, O_CLOEXEC) == -1)
			goto sysfail;
		if (rq->pipe_stdin) {
			if (pipe2(in, O_CLOEXEC) == -1)
				goto sysfail;
		} else if ((nul = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1)
			goto sysfail;
		fds[0] = rq->pipe_stdin ? in[0] : nul;
		fds[1] = out[1];
		fds[2] = errp[1];
	}
	if (spawner_used()) {
		/* execd's own filter allows no fork: the helper starts the child */
		if ((pid = spawner_spawn(rq, prog, slave, fds, rep[1])) == -1)
			goto sysfail;
	} else if ((pid = fork()) == -1)
		goto sysfail;
	else if (pid == 0) {
		close(rep[0]);
		spawn_child(rq, prog, slave, fds, rep[1]);
	}
	close(rep[1]);
	rep[1] = -1;
	/*
	 * While the child sets up: what it waits for (its failure is then
	 * reported below); spawner_spawn calls it while the helper forks.
	 */
	if (!spawner_used() && rq->spawned != NULL)
		(void)rq->spawned(rq->spawned_arg);
	/* the write end closes on exec: EOF means the exec went through */
	do
		n = read(rep[0], &e, sizeof(e));
	while (n == -1 && errno == EINTR);
	close(rep[0]);
	if (n == sizeof(e)) {
		waitpid(pid, NULL, 0);
		close_fds(in, 2);
		close_fds(out, 2);
		close_fds(errp, 2);
		if (master != -1)
			close(master);
		if (nul != -1)
			close(nul);
		return spawn_fail(e, err, msg, msglen);
	}
	res->pid = pid;
	if (rq->tty) {
		res->out_fd = master;
		res->err_fd = -1;
		res->in_fd = dup(master);
		if (res->in_fd != -1)
			fcntl(res->in_fd, F_SETFD, FD_CLOEXEC);
	} else {
		close(out[1]);
		close(errp[1]);
		if (in[0] != -1)
			close(in[0]);
		if (nul != -1)
			close(nul);
		res->out_fd = out[0];
		res->err_fd = errp[0];
		res->in_fd = in[1];
	}
	return 0;
sysfail:
	e = errno;
	close_fds(rep, 2);
	close_fds(in, 2);
	close_fds(out, 2);
	close_fds(errp, 2);
	if (master != -1)
		close(master);
	if (nul != -1)
		close(nul);
	log_warnx("spawn %s: %s", rq->argv[0], strerror(e));
	return spawn_fail(e, err, msg, msglen);
}
