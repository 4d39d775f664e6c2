/*
 * execd: a Codex exec-server for one client connection, started by inetd,
 * systemd, launchd or ssh; or a small listener that forks one per client.
 */
#include "config.h"

#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "log.h"
#include "transport/activate.h"
#include "execd.h"
#include "transport/listen.h"
#include "netproxy/netproxy.h"
#include "sandbox/sandbox.h"
#include "session/resume.h"
#include "serve.h"
#include "ws_auth.h"

struct execd_conf conf = {
	.max_message = 64u * 1024 * 1024,	/* the reference's line and message cap */
	.retention_bytes = 1024 * 1024,
	.retention_chunks = 50000,
	.kill_grace_ms = 2000,
	.closed_keep_ms = 80000,
	.concurrency = 1,
	.header_timeout_ms = 10000,
	.resume_ttl_ms = 30000,
	.ws_ping_ms = 30000,
};

enum mode {
	MODE_AUTO,
	MODE_STDIO,
	MODE_INETD,
	MODE_LISTEN,
};

static void
usage(void)
{
	fprintf(stderr,
	    "usage: execd [--stdio | --inetd | --listen ws://HOST:PORT] [--token-file FILE]\n"
	    "             [--allow-remote] [--no-auth] [--max-message BYTES]\n"
	    "             [--retention BYTES] [--kill-grace-ms MS] [--concurrent-requests N]\n"
	    "             [--header-timeout-ms MS] [--state-dir DIR] [--resume-ttl-ms MS]\n"
	    "             [--allow-setuid] [--ws-ping-ms MS]\n"
	    "             [--ws-auth signed-bearer-token --ws-shared-secret-file FILE\n"
	    "              [--ws-issuer ISS] [--ws-audience AUD] [--ws-max-clock-skew-seconds S]]\n"
	    "             [--proxy-control PATH | --proxy-program PATH | --no-embedded-proxy]\n"
	    "             [--log stderr|syslog|none] [--log-level LEVEL]\n");
	exit(2);
}

static unsigned long long
number(const char *opt, const char *s, unsigned long long max)
{
	unsigned long long	 v;
	char			*end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || *s == '\0' || v > max)
		fatalx("%s: bad number \"%s\"", opt, s);
	return v;
}

static char *
read_token(const char *path)
{
	char	 buf[512], *s, *e;
	ssize_t	 n;
	int	 fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		fatal("--token-file %s", path);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		fatal("read %s", path);
	buf[n] = '\0';
	for (s = buf; *s == ' ' || *s == '\t' || *s == '\n' || *s == '\r'; s++)
		;
	for (e = s + strlen(s); e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' ||
	    e[-1] == '\r'); e--)
		;
	*e = '\0';
	if (*s == '\0')
		fatalx("--token-file %s is empty", path);
	if (strcspn(s, " \t/?#%") != strlen(s))
		fatalx("--token-file %s: the token must not contain white space, / ? # or %%", path);
	return strdup(s);
}

static char *
new_token(void)
{
	static const char	 hex[] = "0123456789abcdef";
	unsigned char		 r[24];
	char			*t;
	size_t			 i;

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r) || (t = malloc(2 * sizeof(r) + 1)) == NULL)
		fatalx("cannot make a token");
	for (i = 0; i < sizeof(r); i++) {
		t[2 * i] = hex[r[i] >> 4];
		t[2 * i + 1] = hex[r[i] & 15];
	}
	t[2 * sizeof(r)] = '\0';
	return t;
}

/* Never let a stray write to fd 2 land in the protocol stream (inetd gives us the socket there). */
static void
guard_stderr(enum log_dest *dest, int dest_given)
{
	struct stat	s0, s2;
	int		nul;

	if (fstat(0, &s0) == 0 && fstat(2, &s2) == 0 && s0.st_dev == s2.st_dev &&
	    s0.st_ino == s2.st_ino) {
		if ((nul = open("/dev/null", O_WRONLY | O_CLOEXEC)) != -1) {
			dup2(nul, 2);
			close(nul);
		}
		if (!dest_given)
			*dest = LOG_DEST_SYSLOG;
	}
}

/* 0, 1 and 2 must be open so no new descriptor takes their place. */
static void
ensure_std_fds(void)
{
	int	fd;

	while ((fd = open("/dev/null", O_RDWR)) != -1 && fd <= 2)
		;
	if (fd > 2)
		close(fd);
}

/* Where per-session sockets live: systemd's RuntimeDirectory, /run/execd, or /tmp. */
static const char *
default_state_dir(void)
{
	static char	 dir[PATH_MAX];
	const char	*rt = getenv("RUNTIME_DIRECTORY");

	if (rt != NULL && *rt != '\0' && strchr(rt, ':') == NULL)
		return rt;
	if (geteuid() == 0)
		return "/run/execd";
	snprintf(dir, sizeof(dir), "/tmp/execd-%ld", (long)geteuid());
	return dir;
}

/* An instance of the listener ended: its session socket goes now. */
static void
instance_gone(pid_t pid)
{
	resume_sweep(conf.state_dir, pid);
}

static const struct listen_ops instance_ops = { serve_warm, serve_prepare, serve_run, instance_gone };

/*
 * Session sockets whose instance died without removing them (SIGKILL, the
 * OOM killer) go at the next start of any execd sharing the directory.
 */
static void
sweep_state_dir(void)
{
	int	n;

	if ((n = resume_sweep(conf.state_dir, -1)) > 0)
		log_info("removed %d session socket(s) left by dead instances in %s", n,
		    conf.state_dir);
}

static int
is_listening_socket(int fd)
{
	int		v = 0;
	socklen_t	l = sizeof(v);

	return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &l) == 0 && v;
}

/* What no sandboxed command may see or reach of execd's own. */
/* A sidecar execd-proxy's CA key, when it names one (netproxy.c). */
static void
hide_proxy_key(const char *path)
{
	sandbox_hide(path, 0);
}

static void
hide_own_paths(const char *token_file, const char *secret_file)
{
	char	key[PATH_MAX];

	/*
	 * The WebSocket credentials: a command with the network on reaches
	 * our listener like any local process, and with them would be let in.
	 */
	if (token_file != NULL)
		sandbox_hide(realpath(token_file, key) != NULL ? key : token_file, 0);
	if (secret_file != NULL)
		sandbox_hide(realpath(secret_file, key) != NULL ? key : secret_file, 0);
	/* with the embedded proxy's CA key (STATE/proxy, serve_proxy.c) */
	sandbox_hide(conf.state_dir, 1);
	/* and the record of writable roots the configuration readers consult */
	sandbox_record_init(conf.state_dir);
	sandbox_config_places();
	/* its bundle (STATE-proxy): read by managed commands, changed by none */
	if (conf.state_dir != NULL &&
	    snprintf(key, sizeof(key), "%s-proxy", conf.state_dir) < (int)sizeof(key))
		sandbox_keep_readonly(key, 1);
	netproxy_set_key_hider(hide_proxy_key);
	if (conf.proxy_control == NULL)
		return;
	sandbox_hide(conf.proxy_control, 0);
	if (snprintf(key, sizeof(key), "%s.key", conf.proxy_control) < (int)sizeof(key))
		sandbox_hide(key, 0);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "stdio", no_argument, NULL, 's' },
		{ "inetd", no_argument, NULL, 'i' },
		{ "listen", required_argument, NULL, 'l' },
		{ "token-file", required_argument, NULL, 't' },
		{ "allow-remote", no_argument, NULL, 'R' },
		{ "no-auth", no_argument, NULL, 'N' },
		{ "max-message", required_argument, NULL, 'm' },
		{ "retention", required_argument, NULL, 'r' },
		{ "kill-grace-ms", required_argument, NULL, 'k' },
		{ "concurrent-requests", required_argument, NULL, 'c' },
		{ "header-timeout-ms", required_argument, NULL, 'H' },
		{ "state-dir", required_argument, NULL, 'S' },
		{ "resume-ttl-ms", required_argument, NULL, 'T' },
		{ "allow-setuid", no_argument, NULL, 'U' },
		{ "ws-ping-ms", required_argument, NULL, 'W' },
		{ "proxy-control", required_argument, NULL, 'P' },
		{ "proxy-program", required_argument, NULL, 'X' },
		{ "no-embedded-proxy", no_argument, NULL, 'E' },
		{ "log", required_argument, NULL, 'L' },
		{ "log-level", required_argument, NULL, 'v' },
		{ "ws-auth", required_argument, NULL, 256 },
		{ "ws-token-file", required_argument, NULL, 257 },
		{ "ws-token-sha256", required_argument, NULL, 258 },
		{ "ws-shared-secret-file", required_argument, NULL, 259 },
		{ "ws-issuer", required_argument, NULL, 260 },
		{ "ws-audience", required_argument, NULL, 261 },
		{ "ws-max-clock-skew-seconds", required_argument, NULL, 262 },
		{ "linux-sandbox-transparent-tcp", no_argument, NULL, 263 },
		{ "tcp-upstream-proxy", required_argument, NULL, 264 },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	enum mode	 mode = MODE_AUTO;
	enum log_dest	 dest = LOG_DEST_STDERR;
	const char	*listen_url = NULL, *token_file = NULL;
	char		*cut;
	char		 url[512], opt_err[512];
	int		 ch, allow_remote = 0, dest_given = 0, level = LOG_NOTICE;
	int		 allow_setuid = 0;
	int		 fds[16], nfds, fd;
	struct ws_auth_opts ws_auth = { 0 };

	ensure_std_fds();
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 's': mode = MODE_STDIO; break;
		case 'i': mode = MODE_INETD; break;
		case 'l': mode = MODE_LISTEN; listen_url = optarg; break;
		case 't': token_file = optarg; break;
		case 'R': allow_remote = 1; break;
		case 'N': conf.no_auth = 1; break;
		case 'm':
			conf.max_message = number("--max-message", optarg, 1ULL << 32);
			break;
		case 'r':
			conf.retention_bytes = number("--retention", optarg, 1ULL << 34);
			break;
		case 'k':
			conf.kill_grace_ms = number("--kill-grace-ms", optarg, 3600000);
			break;
		case 'c':
			conf.concurrency = number("--concurrent-requests", optarg, 1024);
			if (conf.concurrency == 0)
				fatalx("--concurrent-requests must be at least 1");
			break;
		case 'H':
			conf.header_timeout_ms = number("--header-timeout-ms", optarg, 3600000);
			break;
		case 'P': conf.proxy_control = optarg; break;
		case 'X': conf.proxy_program = optarg; break;
		case 'E': conf.no_embedded_proxy = 1; break;
		case 'S': conf.state_dir = optarg; break;
		case 'U': allow_setuid = 1; break;
		case 'W':
			conf.ws_ping_ms = number("--ws-ping-ms", optarg, 24 * 3600000);
			break;
		case 'T':
			conf.resume_ttl_ms = number("--resume-ttl-ms", optarg, 24 * 3600000);
			break;
		case 'L':
			if (log_parse_dest(optarg, &dest) == -1)
				fatalx("--log: stderr, syslog or none");
			dest_given = 1;
			break;
		case 'v':
			if ((level = log_parse_level(optarg)) == -1)
				fatalx("--log-level: err, warning, notice, info or debug");
			break;
		case 256: ws_auth.mode = optarg; break;
		case 257: ws_auth.token_file = optarg; break;
		case 258: ws_auth.token_sha256 = optarg; break;
		case 259: ws_auth.secret_file = optarg; break;
		case 260: ws_auth.issuer = optarg; break;
		case 261: ws_auth.audience = optarg; break;
		case 262: ws_auth.skew = optarg; break;
		/* every managed start transparent, as the reference's flag */
		case 263:
			sandbox_set_transparent_all(1);
			break;
		/* checked here, used by every registration (netproxy_upstream.c) */
		case 264:
			/* a usage error, as the reference's: exit 2 */
			if (optarg[0] == '-' && optarg[1] != '\0') {
				log_warnx("a value is required for '--tcp-upstream-proxy "
				    "<HOST:PORT>' but none was supplied");
				exit(2);
			}
			if (netproxy_set_tcp_upstream(optarg, opt_err, sizeof(opt_err)) == -1) {
				log_warnx("%s", opt_err);
				exit(2);
			}
			break;
		case 'V':
			printf("execd %s\n", PACKAGE_VERSION);
			return 0;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	if (mode == MODE_INETD || mode == MODE_AUTO)
		guard_stderr(&dest, dest_given);
	log_init("execd", dest, level);
	ws_auth_setup(&ws_auth, &token_file);
	if (token_file != NULL)
		conf.token = read_token(token_file);
	if (conf.state_dir == NULL)
		conf.state_dir = default_state_dir();
	hide_own_paths(token_file, ws_auth.secret_file);
	/*
	 * What every process of ours keeps, commands included (with no_new_privs
	 * setuid programs such as sudo gain nothing; --allow-setuid keeps them
	 * working).  Each instance narrows itself further once it has its
	 * spawn helper (serve.c).
	 */
	if (sandbox_self_floor(!allow_setuid) == -1)
		fatalx("cannot narrow execd's own privileges");

	sweep_state_dir();
	nfds = listen_inherited(fds, 16);
	if (nfds == 0 && mode == MODE_AUTO)
		nfds = activate_launchd(fds, 16);
	if (mode == MODE_LISTEN) {
		if (conf.token == NULL && conf.jwt == NULL && !conf.no_auth)
			conf.token = new_token();
		if ((fd = listen_open(listen_url, allow_remote, conf.token, url,
		    sizeof(url))) == -1)
			return 1;
		/*
		 * The one line on stdout: where a client connects.  A token read
		 * from a file stays out of it (stdout often goes to a log: the
		 * journal, kubectl logs); a generated one has no other way out.
		 */
		if (token_file != NULL && (cut = strrchr(url, '/')) != NULL)
			cut[1] = '\0';
		printf("%s\n", url);
		fflush(stdout);
		activate_ready();
		return listen_serve(&fd, 1, &instance_ops);
	}
	if (nfds > 0 && mode == MODE_AUTO) {
		if (is_listening_socket(fds[0])) {
			activate_ready();
			return listen_serve(fds, nfds, &instance_ops);
		}
		/* systemd Accept=yes without StandardInput=socket: the connection is fd 3 */
		return serve_connection(fds[0], fds[0]);
	}
	return serve_connection(0, 1);
}
