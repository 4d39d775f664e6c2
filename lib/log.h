/* Logging shared by execd and execd-proxy: stderr, syslog, or nowhere. */
#ifndef EXECD_LOG_H
#define EXECD_LOG_H

#include <syslog.h>

enum log_dest {
	LOG_DEST_STDERR,
	LOG_DEST_SYSLOG,
	LOG_DEST_NONE,
};

void	log_init(const char *ident, enum log_dest dest, int level);
void	log_setlevel(int level);
int	log_getlevel(void);
int	log_parse_level(const char *name);	/* "debug".."err", -1 if unknown */
int	log_parse_dest(const char *name, enum log_dest *dest);

/* *_warn append strerror(errno); *_warnx do not. */
void	log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_notice(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void	fatalx(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
