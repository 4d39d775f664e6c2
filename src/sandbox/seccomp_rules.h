/* The seccomp filters' rules, for seccomp_gen to compile at build time (seccomp_rules.c). */
#ifndef EXECD_SECCOMP_RULES_H
#define EXECD_SECCOMP_RULES_H

#include <stddef.h>

#include <seccomp.h>

#include "sandbox/sandbox_int.h"

/* Each NULL with why on failure; the caller releases the context. */
scmp_filter_ctx	rules_floor(char *why, size_t whylen);
scmp_filter_ctx	rules_self(char *why, size_t whylen);
scmp_filter_ctx	rules_child(enum sbx_net net, char *why, size_t whylen);
/* the managed network's, with connect(2) notified to a listener (transparent TCP) */
scmp_filter_ctx	rules_child_transparent(char *why, size_t whylen);

#endif
