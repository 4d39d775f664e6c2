/*
 * Loopback connections get an algorithm that does not pace (tcplocal.h
 * says why); the decision is on the address the caller connected to or
 * accepted from, never on a name.
 */
#include "config.h"

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "tcplocal.h"

/* the kernel's TCP_CA_NAME_MAX, NUL included (not in its uapi headers) */
#define CC_NAME_MAX	16

int
tcp_addr_is_loopback(const struct sockaddr *sa)
{
	const struct sockaddr_in	*sin = (const struct sockaddr_in *)sa;
	const struct sockaddr_in6	*sin6 = (const struct sockaddr_in6 *)sa;

	if (sa == NULL)
		return 0;
	if (sa->sa_family == AF_INET)
		return (ntohl(sin->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family != AF_INET6)
		return 0;
	if (IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr))
		return 1;
	return IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr) && sin6->sin6_addr.s6_addr[12] == 127;
}

int
tcp_cc_name_ok(const char *name)
{
	size_t	i;

	for (i = 0; name[i] != '\0'; i++) {
		if (i >= CC_NAME_MAX - 1)
			return 0;
		if (!((name[i] >= 'a' && name[i] <= 'z') ||
		    (name[i] >= '0' && name[i] <= '9') || name[i] == '_'))
			return 0;
	}
	return i > 0;
}

int
tcp_cc_probe(const char *name)
{
	int	fd, r, e;

	if (!tcp_cc_name_ok(name)) {
		errno = EINVAL;
		return -1;
	}
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	r = setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, strlen(name));
	e = errno;
	close(fd);
	errno = e;
	return r;
}

int
tcp_local_cc(int fd, const struct sockaddr *peer, const char *algo)
{
	if (algo == NULL || !tcp_addr_is_loopback(peer))
		return 0;
	if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, algo, strlen(algo)) == -1)
		return -1;
	return 1;
}
