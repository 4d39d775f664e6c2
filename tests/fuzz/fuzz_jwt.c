/*
 * The signed bearer token check: jwt_check() on any bytes.  The first byte
 * picks whether an issuer and an audience are configured.  Every input must
 * be accepted or answered with one of the reference's refusals; the seeds
 * are signed with the secret below, so mutations reach the claim checks.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "transport/jwt.h"
#include "fuzz.h"

static unsigned char	secret[] = "0123456789abcdef0123456789abcdef";

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jwt_conf	 c = { secret, sizeof(secret) - 1, NULL, NULL, 30 };
	const char	*why;

	if (size == 0)
		return 0;
	if (data[0] & 1) {
		c.issuer = "execd-test";
		c.audience = "execd";
	}
	why = jwt_check(&c, (const char *)data + 1, size - 1, 1700000000);
	if (why != NULL && strcmp(why, "invalid websocket jwt") != 0 &&
	    strcmp(why, "expired websocket jwt") != 0 &&
	    strcmp(why, "websocket jwt is not valid yet") != 0 &&
	    strcmp(why, "websocket jwt issuer mismatch") != 0 &&
	    strcmp(why, "websocket jwt audience mismatch") != 0)
		abort();
	return 0;
}
