/*
 * The embedded execd-proxy: with no sidecar configured (--proxy-control),
 * each instance starts an execd-proxy of its own (-e) when the first
 * process/start with networkProxy needs it.  Per instance, not shared by
 * the user's instances: an instance already serves one client, and so its
 * proxy sees only that client's processes and their policies, dies with
 * the instance however it ends (its control connection is a socketpair on
 * its standard input: EOF ends it), and needs no socket path, key or lock
 * that a sandbox could reach or a stale instance could leave behind.  The
 * cost is one proxy process per instance that asks for one.
 *
 * The program is found before execd narrows itself: --proxy-program, or
 * execd-proxy beside execd (both go to sbin), or in a build tree.
 *
 * Its places, passed in its environment (execd-proxy(8) -e): the
 * inspection CA and its key in STATE/proxy, inside execd's own state
 * directory -- per user, 0700, writable without root, and masked in every
 * sandbox with the rest of it, so no sandboxed command reads the key; the
 * bundle that trusts the CA in STATE-proxy, beside it, which sandboxes
 * see read-only: the processes are told to read it.  The CA persists as
 * long as the state directory does (a tmpfs: until reboot).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include "log.h"
#include "execd.h"
#include "serve.h"
#include "spawn/spawner.h"

extern char	**environ;

static char	proxy_program[PATH_MAX];

#define PROXY_ENV_MAX	512

/* dir exists now as ours, a directory no one else may write; else -1 */
static int
own_dir(const char *dir, mode_t mode)
{
	struct stat	st;

	if (mkdir(dir, mode) == -1 && errno != EEXIST) {
		log_warn("execd-proxy: %s", dir);
		return -1;
	}
	if (lstat(dir, &st) == -1 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022) != 0) {
		log_warnx("execd-proxy: %s is not a directory of ours that only we may "
		    "write: HTTPS inspection is off", dir);
		return -1;
	}
	return 0;
}

#define STATE_VAR	"EXECD_PROXY_STATE_DIR="
#define BUNDLE_VAR	"EXECD_PROXY_BUNDLE_DIR="

/* environ, plus where the proxy keeps its CA and writes its bundle */
static char **
proxy_env(char *state, char *bundle)
{
	static char	*envp[PROXY_ENV_MAX];
	size_t		 n = 0, i;

	for (i = 0; environ[i] != NULL && n < PROXY_ENV_MAX - 3; i++)
		if (strncmp(environ[i], STATE_VAR, strlen(STATE_VAR)) != 0 &&
		    strncmp(environ[i], BUNDLE_VAR, strlen(BUNDLE_VAR)) != 0)
			envp[n++] = environ[i];
	if (conf.state_dir != NULL && own_dir(conf.state_dir, 0700) == 0 &&
	    (size_t)snprintf(state, PATH_MAX, STATE_VAR "%s/proxy", conf.state_dir) <
	    PATH_MAX && own_dir(state + strlen(STATE_VAR), 0700) == 0 &&
	    (size_t)snprintf(bundle, PATH_MAX, BUNDLE_VAR "%s-proxy", conf.state_dir) <
	    PATH_MAX && own_dir(bundle + strlen(BUNDLE_VAR), 0755) == 0) {
		envp[n++] = state;
		envp[n++] = bundle;
	}
	envp[n] = NULL;
	return envp;
}

/* Where execd-proxy is; -1 (logged) when nowhere. */
static int
proxy_find(void)
{
	char		 self[PATH_MAX], *slash;
	ssize_t		 n;
	size_t		 i;
	static const char *const rel[] = { "/execd-proxy", "/../proxy/execd-proxy" };

	if (conf.proxy_program != NULL) {
		snprintf(proxy_program, sizeof(proxy_program), "%s", conf.proxy_program);
		if (access(proxy_program, X_OK) == 0)
			return 0;
		log_warn("--proxy-program %s", proxy_program);
		return -1;
	}
	if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) <= 0)
		return -1;
	self[n] = '\0';
	if ((slash = strrchr(self, '/')) == NULL)
		return -1;
	*slash = '\0';
	for (i = 0; i < sizeof(rel) / sizeof(rel[0]); i++)
		if ((size_t)snprintf(proxy_program, sizeof(proxy_program), "%s%s", self,
		    rel[i]) < sizeof(proxy_program) && access(proxy_program, X_OK) == 0)
			return 0;
	log_info("no execd-proxy beside %s: network proxy launch is not supported", self);
	return -1;
}

/* Found once (a listener finds it before it forks): 0, or -1 when there is none. */
int
serve_proxy_find(void)
{
	static int	found = 1;

	if (found == 1)
		found = proxy_find();
	return found;
}

/* fd becomes its standard input; its pid, or -1. */
pid_t
serve_proxy_launch(int fd)
{
	char			*argv[] = { "execd-proxy", "-e", NULL };
	char			 state[PATH_MAX], bundle[PATH_MAX];
	struct spawn_req	 rq = { .argv = argv, .cwd = "/", .restore_fd = -1 };
	int			 fds[3], rep[2], nul, e;
	ssize_t			 n;
	pid_t			 pid;

	rq.envp = proxy_env(state, bundle);
	if ((nul = open("/dev/null", O_WRONLY | O_CLOEXEC)) == -1) {
		log_warn("execd-proxy: /dev/null");
		return -1;
	}
	if (pipe2(rep, O_CLOEXEC) == -1) {
		log_warn("execd-proxy: pipe");
		close(nul);
		return -1;
	}
	fds[0] = fd;
	fds[1] = nul;
	fds[2] = STDERR_FILENO;
	pid = spawner_spawn(&rq, proxy_program, "", fds, rep[1]);
	close(rep[1]);
	close(nul);
	if (pid == -1) {
		log_warn("execd-proxy: spawn");
		close(rep[0]);
		return -1;
	}
	/* the write end closes on exec: EOF means it runs */
	do
		n = read(rep[0], &e, sizeof(e));
	while (n == -1 && errno == EINTR);
	close(rep[0]);
	if (n == sizeof(e)) {
		log_warnx("execd-proxy: exec %s: %s", proxy_program, strerror(e));
		waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
}
