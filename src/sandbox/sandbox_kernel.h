/* What this kernel offers a sandbox: the probes both execd and its spawn helper run. */
#ifndef EXECD_SANDBOX_KERNEL_H
#define EXECD_SANDBOX_KERNEL_H

/*
 * Fork a child that tries to make mount, network, pid and IPC namespaces
 * (directly, or inside a user namespace): 1 if it could, else 0; -1 when it could not
 * be asked.  The spawn helper runs it for execd, whose own filter allows
 * no fork.
 */
int	 sandbox_probe_ns(int direct);
/*
 * Once execd may no longer fork, the spawn helper's probe (same answers)
 * runs instead: set by the code that starts the helper.
 */
void	 sandbox_set_ns_probe(int (*probe)(int direct));

#endif
