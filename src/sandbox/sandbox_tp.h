/*
 * Transparent TCP (managedNetwork/networkProxy transparentTcp): a
 * sandboxed program's connect(2) to a non-loopback address is caught by
 * seccomp user notification and answered by execd with a socket already
 * connected through the process's SOCKS5 endpoint of the proxy
 * (sandbox_tcp.c); names resolve through a DNS answerer of execd's that
 * hands out made-up addresses (sandbox_dns.c).  Internal to src/sandbox.
 */
#ifndef EXECD_SANDBOX_TP_H
#define EXECD_SANDBOX_TP_H

#include <sys/socket.h>
#include <sys/types.h>

#define SBX_DNS_ADDR	0x7f000035U	/* 127.0.0.53, in the sandbox's namespace */

struct sbx_dns;
struct sbx_tp;
struct sbx_route;

/* in the child: the answerer's sockets bound (0 or an errno), resolv.conf bound */
int	 sbx_dns_sockets(int *udp, int *tcp);
int	 sbx_dns_resolv(void);

/* in execd: a process's answerer on the sockets it handed over (taken, closed on failure) */
struct sbx_dns *sbx_dns_new(pid_t pid, int udp, int tcp);
void	 sbx_dns_free(struct sbx_dns *d);
/* The exact name a made-up address was given for, NULL when it is none of them. */
const char *sbx_dns_name(const struct sbx_dns *d, const struct sockaddr *sa);
/* Is sa in the made-up ranges (given out or not)? */
int	 sbx_dns_is_fake(const struct sockaddr *sa);

/*
 * in execd: answer the seccomp notifications of listener notify_fd (taken)
 * for process pid, through the SOCKS5 endpoint socks with user and pass
 * (its registration); dns may be NULL.  NULL on failure (notify_fd closed:
 * the process's connects then fail with ENOSYS).
 */
struct sbx_tp *sbx_tp_start(pid_t pid, int notify_fd, struct sbx_dns *dns,
	    const struct sbx_route *socks, const char *user, const char *pass);
void	 sbx_tp_free(struct sbx_tp *tp);

/* Can this kernel notify execd of a connect and let it swap the socket? (probed once) */
int	 sbx_tp_supported(void);

#endif
