/* execd-proxy: the managed network proxy sidecar (being written). */
#include "config.h"

#include <stdio.h>

#include "log.h"

int
main(int argc, char *argv[])
{
	(void)argc;
	(void)argv;
	log_init("execd-proxy", LOG_DEST_STDERR, LOG_NOTICE);
	fprintf(stderr, "execd-proxy: not implemented yet\n");
	return 1;
}
