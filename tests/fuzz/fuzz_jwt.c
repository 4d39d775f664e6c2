/*
 * The signed bearer token check: jwt_check() on any bytes.  The first byte
 * picks whether an issuer and an audience are configured.  Every input must
 * be answered with one of the reference's refusals or accepted; inputs
 * cannot forge a signature, so acceptance means a bug.
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
	if (why == NULL || strstr(why, "jwt") == NULL)
		abort();
	return 0;
}
