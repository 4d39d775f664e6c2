/*
 * Denial records, rate-limited per credential: one credential hammering
 * refused destinations must not fill the audit queue ahead of everyone
 * else's records.  Each credential (the unauthenticated ones share one
 * bucket) may have AUDIT_DENY_BURST denial records at once and
 * AUDIT_DENY_RATE more per second; what it is refused beyond that is
 * counted, and audit.c writes one summary record per credential and
 * second ("N denials suppressed").  Nothing goes unaccounted.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "fnv.h"
#include "relay/relay.h"

#define AUDIT_DENY_RATE		50	/* records per second */
#define AUDIT_DENY_BURST	100
#define LIMIT_SLOTS		256

struct bucket {
	char		 cred[PROXY_CRED_ID_LEN + 2];	/* "" : no credential */
	int		 used;
	unsigned	 tokens;
	uint64_t	 refilled;			/* ms */
	uint64_t	 suppressed;			/* since the last summary */
};

static struct bucket	slots[LIMIT_SLOTS];
static uint64_t		pending;			/* buckets with suppressed > 0 */

static struct bucket *
slot_for(const char *cred, audit_summary_cb *summary)
{
	struct bucket	*b = &slots[fnv1a64(cred) % LIMIT_SLOTS];

	if (b->used && strcmp(b->cred, cred) == 0)
		return b;
	/* taken by another credential: its count is written before it goes */
	if (b->used && b->suppressed > 0) {
		summary(b->cred[0] ? b->cred : NULL, b->suppressed);
		pending--;
	}
	memset(b, 0, sizeof(*b));
	snprintf(b->cred, sizeof(b->cred), "%s", cred);
	b->used = 1;
	b->tokens = AUDIT_DENY_BURST;
	b->refilled = ev_now();
	return b;
}

/* May a denial record for cred (NULL: unauthenticated) be written now? */
int
audit_limit_admit(const char *cred, audit_summary_cb *summary)
{
	struct bucket	*b = slot_for(cred ? cred : "", summary);
	uint64_t	 now = ev_now(), add;

	add = (now - b->refilled) * AUDIT_DENY_RATE / 1000;
	if (add > 0) {
		b->tokens = add >= AUDIT_DENY_BURST || b->tokens + add > AUDIT_DENY_BURST ?
		    AUDIT_DENY_BURST : b->tokens + (unsigned)add;
		b->refilled = now;
	}
	if (b->tokens > 0) {
		b->tokens--;
		return 1;
	}
	if (b->suppressed++ == 0)
		pending++;
	return 0;
}

/* Write the summaries due; 1 while some credential is still being suppressed. */
int
audit_limit_flush(audit_summary_cb *summary)
{
	size_t	i;

	if (pending == 0)
		return 0;
	for (i = 0; i < LIMIT_SLOTS; i++)
		if (slots[i].used && slots[i].suppressed > 0) {
			summary(slots[i].cred[0] ? slots[i].cred : NULL, slots[i].suppressed);
			slots[i].suppressed = 0;
		}
	pending = 0;
	return 1;
}
