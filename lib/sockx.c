/* Socket address helpers (sockx.h). */
#include "config.h"

#include <netinet/in.h>

#include "sockx.h"

void
sockaddr_set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}
