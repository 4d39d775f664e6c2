/* Descriptors over a Unix socket (SCM_RIGHTS), attached to one message. */
#ifndef EXECD_FDPASS_H
#define EXECD_FDPASS_H

#include <sys/types.h>
#include <sys/uio.h>

#include <stddef.h>

#define FDPASS_MAX	16	/* descriptors one message may carry */

/* sendmsg(2) of iov with nfds (0 to FDPASS_MAX) descriptors; its result. */
ssize_t	fdpass_send(int s, const struct iovec *iov, int iovcnt, const int *fds, size_t nfds,
	    int flags);
/*
 * recvmsg(2) into buf with what descriptors came along, close-on-exec, in
 * fds (room for FDPASS_MAX) and their number in *nfds.  Returns recvmsg's
 * result; -1 with EPROTO, and nothing kept open, when the control data was
 * truncated.
 */
ssize_t	fdpass_recv(int s, void *buf, size_t len, int *fds, size_t *nfds, int flags);

#endif
