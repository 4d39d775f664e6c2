/*
 * Congestion control for TCP connections that never leave this host.
 *
 * A relay (execd-proxy, execd's managed-network bridge) sends on loopback
 * to a peer on the same machine.  There is no link to share and no queue
 * to keep short there, yet a host whose default algorithm paces (BBR, and
 * the qdisc-less loopback device, so the kernel's own pacing timer) spends
 * more on timers and softirqs than on the bytes: measured on the 2-core VM
 * this project is benchmarked on, a 1 GiB CONNECT tunnel ran at 2.4 GB/s
 * with BBR on the proxy's sockets and 5.9 GB/s with reno, while a direct
 * copy ran at 4.4.  Connections to any other address keep the host's
 * algorithm: the operator chose it for the network.
 */
#ifndef EXECD_TCPLOCAL_H
#define EXECD_TCPLOCAL_H

#include <sys/socket.h>

#include <stddef.h>

/* The algorithm relays use on loopback unless configured otherwise. */
#define TCP_LOCAL_CC	"reno"

/* Is sa a loopback address (127.0.0.0/8, ::1, or ::ffff:127.0.0.0/104)? */
int	tcp_addr_is_loopback(const struct sockaddr *sa);
/*
 * Is name well formed for TCP_CONGESTION (1-15 of [a-z0-9_])?  It is
 * refused, never cut, when it is not.
 */
int	tcp_cc_name_ok(const char *name);
/*
 * Whether the kernel takes name for a socket of this process: 0, or -1
 * with errno (ENOENT not available, EPERM not allowed for this user).
 */
int	tcp_cc_probe(const char *name);
/*
 * Set algo on fd when peer is loopback: 1 set, 0 not loopback (or algo
 * NULL: keep the host's), -1 the kernel refused (errno).
 */
int	tcp_local_cc(int fd, const struct sockaddr *peer, const char *algo);

#endif
