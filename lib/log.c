#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static const char	*log_ident = "execd";
static enum log_dest	 log_dest = LOG_DEST_STDERR;
static int		 log_level = LOG_NOTICE;
static int		 log_journal;	/* stderr is systemd's journal: "<pri>msg" */

static const struct {
	const char	*name;
	int		 level;
} log_levels[] = {
	{ "err", LOG_ERR }, { "error", LOG_ERR }, { "warning", LOG_WARNING },
	{ "warn", LOG_WARNING }, { "notice", LOG_NOTICE }, { "info", LOG_INFO },
	{ "debug", LOG_DEBUG },
};

/* systemd sets JOURNAL_STREAM to the dev:ino of the stream it connected to stderr. */
static int
stderr_is_journal(void)
{
	const char		*js = getenv("JOURNAL_STREAM");
	unsigned long long	 dev, ino;
	struct stat		 st;

	if (js == NULL || sscanf(js, "%llu:%llu", &dev, &ino) != 2 ||
	    fstat(STDERR_FILENO, &st) == -1)
		return 0;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void
log_init(const char *ident, enum log_dest dest, int level)
{
	log_ident = ident;
	log_dest = dest;
	log_level = level;
	log_journal = dest == LOG_DEST_STDERR && stderr_is_journal();
	if (dest == LOG_DEST_SYSLOG)
		openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void
log_setlevel(int level)
{
	log_level = level;
}

int
log_getlevel(void)
{
	return log_level;
}

int
log_parse_level(const char *name)
{
	size_t	i;

	for (i = 0; i < sizeof(log_levels) / sizeof(log_levels[0]); i++)
		if (strcasecmp(name, log_levels[i].name) == 0)
			return log_levels[i].level;
	return -1;
}

int
log_parse_dest(const char *name, enum log_dest *dest)
{
	if (strcmp(name, "stderr") == 0)
		*dest = LOG_DEST_STDERR;
	else if (strcmp(name, "syslog") == 0)
		*dest = LOG_DEST_SYSLOG;
	else if (strcmp(name, "none") == 0)
		*dest = LOG_DEST_NONE;
	else
		return -1;
	return 0;
}

/*
 * A message as it may be written: C0 and C1 controls, DEL and bytes that
 * are not UTF-8 as \xHH, so that a name, an SNI or a header a client
 * chose can neither start a line of its own nor drive a terminal.
 */
static void
log_escape(const char *in, char *out, size_t outlen)
{
	const unsigned char	*p = (const unsigned char *)in;
	size_t			 o = 0, n, i;

	while (*p != '\0' && o + 5 < outlen) {
		n = *p < 0x80 ? 1 : (*p & 0xe0) == 0xc0 ? 2 : (*p & 0xf0) == 0xe0 ? 3 :
		    (*p & 0xf8) == 0xf0 ? 4 : 0;
		for (i = 1; i < n; i++)
			if ((p[i] & 0xc0) != 0x80)
				n = 0;
		/* overlong two-byte forms and C1 controls (U+0080..U+009F) */
		if (n == 2 && (*p < 0xc2 || (*p == 0xc2 && p[1] < 0xa0)))
			n = 0;
		if (n == 0 || (n == 1 && (*p < 0x20 || *p == 0x7f))) {
			snprintf(out + o, outlen - o, "\\x%02x", *p);
			o += 4;
			p++;
			continue;
		}
		if (o + n >= outlen)
			break;
		memcpy(out + o, p, n);
		o += n;
		p += n;
	}
	out[o] = '\0';
}

/* format(printf, 3, 0): clang's -Wformat-nonliteral checks the callers' formats instead */
static void	log_vwrite(int, int, const char *, va_list) __attribute__((format(printf, 3, 0)));

static void
log_vwrite(int pri, int with_errno, const char *fmt, va_list ap)
{
	char		 raw[2048], msg[4 * 2048];
	int		 saved = errno;
	size_t		 n;

	if (pri > log_level || log_dest == LOG_DEST_NONE)
		return;
	vsnprintf(raw, sizeof(raw), fmt, ap);
	if (with_errno) {
		n = strlen(raw);
		snprintf(raw + n, sizeof(raw) - n, ": %s", strerror(saved));
	}
	log_escape(raw, msg, sizeof(msg));
	if (log_dest == LOG_DEST_SYSLOG)
		syslog(pri, "%s", msg);
	else if (log_journal)
		/* the journal keeps the level; it knows our name and pid */
		dprintf(STDERR_FILENO, "<%d>%s\n", pri, msg);
	else
		/* One write per line so concurrent instances never interleave. */
		dprintf(STDERR_FILENO, "%s[%ld]: %s\n", log_ident, (long)getpid(), msg);
	errno = saved;
}

#define LOG_FN(name, pri, with_errno)			\
void							\
name(const char *fmt, ...)				\
{							\
	va_list ap;					\
	va_start(ap, fmt);				\
	log_vwrite(pri, with_errno, fmt, ap);		\
	va_end(ap);					\
}

LOG_FN(log_warn, LOG_WARNING, 1)
LOG_FN(log_warnx, LOG_WARNING, 0)
LOG_FN(log_notice, LOG_NOTICE, 0)
LOG_FN(log_info, LOG_INFO, 0)
LOG_FN(log_debug, LOG_DEBUG, 0)

void
fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_CRIT, 1, fmt, ap);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_CRIT, 0, fmt, ap);
	va_end(ap);
	exit(1);
}
