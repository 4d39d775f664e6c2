/*
 * A library opened by soname at its first use rather than linked (libcurl,
 * libcrypto, libyaml): a connection pays for what it uses when it uses it.
 */
#ifndef EXECD_DLSYMS_H
#define EXECD_DLSYMS_H

#include <stddef.h>

/* One function: its name in the library, where its pointer goes in a table. */
struct dl_sym {
	const char	*name;
	size_t		 off;
};

/*
 * dlopen() soname and store each symbol's address at table + off.  0, or
 * -1 (logged, naming what for) with the library closed again.
 */
int	dl_load(const char *soname, const struct dl_sym *syms, size_t nsyms, void *table,
	    const char *what);

#endif
