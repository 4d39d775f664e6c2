/*
 * Which namespaces a local socket peer lives in, for the sockets a sandboxed
 * process must not use (execd's session sockets, execd-proxy's control
 * socket): a sandbox has pid and user namespaces of its own.
 */
#ifndef EXECD_PEERNS_H
#define EXECD_PEERNS_H

#include <sys/types.h>

/*
 * Is the visible process pid in our namespace ns ("pid", "user")?  1 yes,
 * 0 no, -1 the kernel would not say: it lets us look at any dumpable
 * process of ours and at any process in a user namespace we own (a
 * sandbox's), but not at a non-dumpable one of our own user namespace,
 * which is what an execd instance is.
 */
int	peerns_same(pid_t pid, const char *ns);
/*
 * The same for the pid namespace, with the answer the ns links hide taken
 * from /proc/PID/status: a pid we can see is in our pid namespace or below
 * it, and below lists more NSpid levels.  1, 0, or -1 (pid 0, /proc unread).
 */
int	peerns_same_pid(pid_t pid);

#endif
