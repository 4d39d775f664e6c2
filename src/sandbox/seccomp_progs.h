/*
 * The seccomp programs, compiled at build time by seccomp_gen from
 * seccomp_rules.c (the generated seccomp_progs.c): loading one is a
 * system call, with no libseccomp in the process.
 */
#ifndef EXECD_SECCOMP_PROGS_H
#define EXECD_SECCOMP_PROGS_H

#include <linux/filter.h>

extern const struct sock_fprog	seccomp_floor_prog;	/* execd and everything it runs */
extern const struct sock_fprog	seccomp_self_prog;	/* an instance's allow-list */
extern const struct sock_fprog	seccomp_child_off_prog;	/* sandboxed, per network mode */
extern const struct sock_fprog	seccomp_child_enabled_prog;
extern const struct sock_fprog	seccomp_child_managed_prog;
extern const struct sock_fprog	seccomp_child_transparent_prog;	/* connect notified */

#endif
