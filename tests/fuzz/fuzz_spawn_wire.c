/*
 * The spawn helper's request decoder (spawner_decode, sandbox_plan_get):
 * the helper is not under execd's allow-list, so what an instance sends it
 * is a privilege boundary.  The input is one request body after the op;
 * the descriptors it names are /dev/null.  Decoding only: nothing is
 * cloned or executed.
 */
#include "config.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "util/wire.h"
#include "spawn/spawner.h"
#include "fuzz.h"

static int	fds[WIRE_MAX_FDS];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	size_t	i;

	log_init("execd-fuzz", LOG_DEST_STDERR, LOG_CRIT);
	for (i = 0; i < WIRE_MAX_FDS; i++)
		if ((fds[i] = open("/dev/null", O_RDWR | O_CLOEXEC)) == -1)
			abort();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spawn_msg	 m;
	struct wire_in		 r;
	uint8_t			*copy;
	size_t			 i;

	/* an exact-size copy, so that ASan sees any read past the message */
	if ((copy = malloc(size ? size : 1)) == NULL)
		return 0;
	memcpy(copy, data, size);
	memset(&r, 0, sizeof(r));
	r.p = copy;
	r.end = copy + size;
	r.fds = fds;
	r.nfds = size > 0 ? data[0] % (WIRE_MAX_FDS + 1) : 0;
	if (spawner_decode(&r, &m) == 0) {
		for (i = 0; m.argv[i] != NULL; i++)
			if (strlen(m.argv[i]) >= (size_t)(r.end - copy))
				abort();
		spawner_msg_free(&m);
	}
	free(copy);
	return 0;
}
