/*
 * execd-proxy's configuration and policy file parser (conf_load), and the
 * per-process policy a client registers over the control socket
 * (policy_from_json) when the input is a JSON object.
 */
#include "config.h"

#include <sys/mman.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "log.h"
#include "policy/policy.h"
#include "fuzz.h"

static int	memfd = -1;
static char	path[64];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	log_init("execd-proxy-fuzz", LOG_DEST_STDERR, LOG_CRIT);
	if ((memfd = memfd_create("fuzz-policy", MFD_CLOEXEC)) == -1)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proxy_conf	*c;
	struct policy		*pol;
	json_error_t		 je;
	json_t			*j;
	char			 err[512];

	if (ftruncate(memfd, 0) == -1 || pwrite(memfd, data, size, 0) != (ssize_t)size)
		abort();
	err[0] = '\0';
	if ((c = conf_load(path, err, sizeof(err))) != NULL)
		conf_unref(c);
	else if (memchr(err, '\0', sizeof(err)) == NULL || err[0] == '\0')
		abort();	/* a refusal must say why */
	if ((j = json_loadb((const char *)data, size, 0, &je)) != NULL) {
		if (json_is_object(j) && (pol = policy_from_json(j, err, sizeof(err))) != NULL)
			policy_free(pol);
		json_decref(j);
	}
	return 0;
}
