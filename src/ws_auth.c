#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "execd.h"
#include "log.h"
#include "transport/jwt.h"
#include "ws_auth.h"

#define SECRET_MAX	65536

static struct jwt_conf	jwt;

/* The reference names the file by its absolute path in its errors. */
static void
absolute(const char *path, char *out, size_t outlen)
{
	char	cwd[PATH_MAX];

	if (path[0] == '/' || getcwd(cwd, sizeof(cwd)) == NULL)
		snprintf(out, outlen, "%s", path);
	else
		snprintf(out, outlen, "%s/%s", cwd, path);
}

static int
is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static void
read_secret(const char *path)
{
	char		 abs[PATH_MAX + 256];
	unsigned char	*buf, *s, *e;
	ssize_t		 n;
	size_t		 len = 0;
	int		 fd;

	absolute(path, abs, sizeof(abs));
	if ((buf = malloc(SECRET_MAX)) == NULL)
		fatal("read_secret");
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		fatalx("failed to read websocket auth secret %s: %s (os error %d)", abs,
		    strerror(errno), errno);
	while ((n = read(fd, buf + len, SECRET_MAX - len)) > 0 && (len += (size_t)n) < SECRET_MAX)
		;
	if (n == -1)
		fatalx("failed to read websocket auth secret %s: %s (os error %d)", abs,
		    strerror(errno), errno);
	close(fd);
	for (s = buf; s < buf + len && is_space(*s); s++)
		;
	for (e = buf + len; e > s && is_space(e[-1]); e--)
		;
	if ((size_t)(e - s) < JWT_SECRET_MIN)
		fatalx("signed websocket bearer secret %s must be at least %d bytes", abs,
		    JWT_SECRET_MIN);
	jwt.secret = s;
	jwt.secret_len = (size_t)(e - s);
}

static uint64_t
skew_seconds(const char *s)
{
	unsigned long long	 v;
	char			*end;

	const char		*why = NULL;

	errno = 0;
	if (*s == '\0')
		why = "cannot parse integer from empty string";
	else if (strspn(s, "0123456789") != strlen(s))
		why = "invalid digit found in string";
	else if ((v = strtoull(s, &end, 10)) == ULLONG_MAX && errno == ERANGE)
		why = "number too large to fit in target type";
	if (why != NULL) {
		/* a usage error, as the reference's: status 2 */
		log_warnx("invalid value '%s' for '--ws-max-clock-skew-seconds <SECONDS>': %s",
		    s, why);
		exit(2);
	}
	return v;
}

void
ws_auth_setup(const struct ws_auth_opts *o, const char **token_file)
{
	int	cap_flags = o->token_file != NULL || o->token_sha256 != NULL;
	int	jwt_flags = o->secret_file != NULL || o->issuer != NULL ||
		    o->audience != NULL || o->skew != NULL;

	if (o->mode != NULL && strcmp(o->mode, "capability-token") != 0 &&
	    strcmp(o->mode, "signed-bearer-token") != 0) {
		/* two lines, two messages: a log line never holds a raw newline */
		log_warnx("invalid value '%s' for '--ws-auth <MODE>'", o->mode);
		log_warnx("  [possible values: capability-token, signed-bearer-token]");
		exit(2);
	}
	jwt.skew = o->skew != NULL ? skew_seconds(o->skew) : 30;
	if (o->mode == NULL) {
		if (cap_flags || jwt_flags)
			fatalx("websocket auth flags require `--ws-auth capability-token` or "
			    "`--ws-auth signed-bearer-token`");
		return;
	}
	if (strcmp(o->mode, "capability-token") == 0) {
		if (jwt_flags)
			fatalx("`--ws-shared-secret-file`, `--ws-issuer`, `--ws-audience`, and "
			    "`--ws-max-clock-skew-seconds` require `--ws-auth signed-bearer-token`");
		if (o->token_sha256 != NULL)
			fatalx("--ws-token-sha256 is not supported: use --ws-token-file");
		if (o->token_file == NULL)
			fatalx("`--ws-token-file` or `--ws-token-sha256` is required when "
			    "`--ws-auth capability-token` is set");
		*token_file = o->token_file;
		return;
	}
	if (cap_flags)
		fatalx("`--ws-token-file` and `--ws-token-sha256` require `--ws-auth "
		    "capability-token`, not `signed-bearer-token`");
	if (o->secret_file == NULL)
		fatalx("`--ws-shared-secret-file` is required when `--ws-auth "
		    "signed-bearer-token` is set");
	if (*token_file != NULL)
		fatalx("--token-file and `--ws-auth signed-bearer-token` exclude each other");
	read_secret(o->secret_file);
	jwt.issuer = o->issuer;
	jwt.audience = o->audience;
	conf.jwt = &jwt;
}
