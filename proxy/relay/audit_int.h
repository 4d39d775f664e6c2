/*
 * Between the audit queue (audit.c) and the events (audit_event.c).
 */
#ifndef RELAY_AUDIT_INT_H
#define RELAY_AUDIT_INT_H

#include <stddef.h>

#include <jansson.h>

/* Queue one event (taken, freed here), or count it lost. */
void	audit_emit(json_t *ev);
/* n events could not be made or kept: counted and reported. */
void	audit_lose(size_t n);
/* May a denial for cred be written now?  0: counted for the next summary. */
int	audit_admit_denial(const char *cred);

#endif
