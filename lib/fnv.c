#include "config.h"

#include "fnv.h"

uint64_t
fnv1a64(const char *s)
{
	uint64_t	h = 0xcbf29ce484222325ULL;

	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}
