#include "config.h"

#include <dlfcn.h>

#include "dlsyms.h"
#include "log.h"

int
dl_load(const char *soname, const struct dl_sym *syms, size_t nsyms, void *table,
    const char *what)
{
	void	*lib, *fn;
	size_t	 i;

	if ((lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		log_warnx("%s: cannot load %s: %s", what, soname, dlerror());
		return -1;
	}
	for (i = 0; i < nsyms; i++) {
		if ((fn = dlsym(lib, syms[i].name)) == NULL) {
			log_warnx("%s: %s has no %s", what, soname, syms[i].name);
			dlclose(lib);
			return -1;
		}
		/* POSIX: a function's address fits a void * */
		*(void **)((char *)table + syms[i].off) = fn;
	}
	return 0;
}
