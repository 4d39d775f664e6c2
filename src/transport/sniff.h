/* The first bytes of a connection decide its framing: HTTP upgrade or JSON lines. */
#ifndef EXECD_SNIFF_H
#define EXECD_SNIFF_H

/* Serve one client on in_fd/out_fd (equal for a socket); returns when set up. */
int	sniff_start(int in_fd, int out_fd);

#endif
