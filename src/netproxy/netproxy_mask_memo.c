/*
 * The dummies an instance has handed out.  The reference gives a real
 * value the same dummy at every start with the same networkProxy
 * settings, for its whole life; so does execd, per instance: a command
 * that saved a dummy (a git credential helper's store, gh's hosts.yml)
 * finds it swapped again when a later command's registration carries it.
 * Keyed by the settings, the variable and the real value, compared whole
 * (a hash would let two real values share a dummy).  Bounded: the oldest
 * entry makes room; a dropped entry's real value is wiped.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "netproxy/netproxy_mask.h"

#define MEMO_MAX	64

static struct memo {
	char		*settings, *key, *real, *dummy;
	unsigned long	 used;
} memo[MEMO_MAX];
static unsigned long	tick;

static void
drop(struct memo *m)
{
	if (m->real != NULL)
		explicit_bzero(m->real, strlen(m->real));
	free(m->settings);
	free(m->key);
	free(m->real);
	free(m->dummy);
	*m = (struct memo){ 0 };
}

char *
mask_memo_get(const char *settings, const char *key, const char *real)
{
	size_t	i;

	for (i = 0; i < MEMO_MAX; i++)
		if (memo[i].dummy != NULL && strcmp(memo[i].real, real) == 0 &&
		    strcmp(memo[i].key, key) == 0 && strcmp(memo[i].settings, settings) == 0) {
			memo[i].used = ++tick;
			return strdup(memo[i].dummy);
		}
	return NULL;
}

void
mask_memo_put(const char *settings, const char *key, const char *real, const char *dummy)
{
	struct memo	*m = &memo[0];
	size_t		 i;

	for (i = 1; i < MEMO_MAX && m->dummy != NULL; i++)
		if (memo[i].dummy == NULL || memo[i].used < m->used)
			m = &memo[i];
	drop(m);
	m->settings = strdup(settings);
	m->key = strdup(key);
	m->real = strdup(real);
	m->dummy = strdup(dummy);
	if (m->settings == NULL || m->key == NULL || m->real == NULL || m->dummy == NULL) {
		drop(m);	/* not remembered: the next start draws anew */
		return;
	}
	m->used = ++tick;
}
