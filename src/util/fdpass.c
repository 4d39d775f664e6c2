#include "config.h"

#include <sys/socket.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "util/fdpass.h"

union fdpass_cmsg {
	struct cmsghdr	hdr;
	char		buf[CMSG_SPACE(sizeof(int) * FDPASS_MAX)];
};

/* No allocation: it also runs in a child between fork and exec. */
ssize_t
fdpass_send(int s, const struct iovec *iov, int iovcnt, const int *fds, size_t nfds,
    int flags)
{
	union fdpass_cmsg	 cm;
	struct msghdr		 msg;
	struct cmsghdr		*c;

	if (nfds > FDPASS_MAX) {
		errno = EINVAL;
		return -1;
	}
	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = (struct iovec *)iov;
	msg.msg_iovlen = (size_t)iovcnt;
	if (nfds > 0) {
		memset(&cm, 0, sizeof(cm));
		msg.msg_control = cm.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	return sendmsg(s, &msg, flags);
}

ssize_t
fdpass_recv(int s, void *buf, size_t len, int *fds, size_t *nfds, int flags)
{
	union fdpass_cmsg	 cm;
	struct iovec		 iov = { buf, len };
	struct msghdr		 msg;
	struct cmsghdr		*c;
	ssize_t			 n;
	size_t			 i, k;

	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cm.buf;
	msg.msg_controllen = sizeof(cm.buf);
	*nfds = 0;
	if ((n = recvmsg(s, &msg, flags | MSG_CMSG_CLOEXEC)) == -1)
		return -1;
	for (c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < k && *nfds < FDPASS_MAX; i++)
			memcpy(&fds[(*nfds)++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
	}
	if (msg.msg_flags & MSG_CTRUNC) {
		for (i = 0; i < *nfds; i++)
			close(fds[i]);
		*nfds = 0;
		errno = EPROTO;
		return -1;
	}
	return n;
}
