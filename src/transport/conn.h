/*
 * The byte stream of one client: a socket (one descriptor both ways) or a
 * pair of pipes (ssh).  Transports above it see readable/writable events.
 */
#ifndef EXECD_CONN_H
#define EXECD_CONN_H

#include "buf.h"
#include "evloop.h"

struct conn;
typedef void	conn_cb(struct conn *c);

struct conn {
	int		 in_fd, out_fd;
	struct ev_io	 rio, wio;	/* wio only when out_fd != in_fd */
	int		 want_read, want_write;
	int		 in_eof, closed;
	conn_cb		*on_read, *on_write;
	void		*arg;
	char		 peer[96];	/* "127.0.0.1:5555", "stdio" */
	int		 is_inet;	/* the peer came over TCP */
	struct buf	 pre;		/* bytes read before the transport took over */
	/* regular files (stdin < file, stdout > file) are never polled: always ready */
	int		 in_plain, out_plain;
	struct ev_timer	 plain_timer;
	/*
	 * Output is written once the round's callbacks have queued theirs
	 * (flush), straight away; EPOLLOUT is asked for only when that write
	 * could not take it all (write_poll).
	 */
	struct ev_defer	 flush;
	int		 write_poll;
};

int	conn_open(struct conn *c, int in_fd, int out_fd);
void	conn_set_handlers(struct conn *c, conn_cb *on_read, conn_cb *on_write, void *arg);
void	conn_want(struct conn *c, int rd, int wr);
/* read(), first serving bytes left in c->pre */
ssize_t	conn_read(struct conn *c, void *p, size_t n);
void	conn_shutdown_write(struct conn *c);
void	conn_close(struct conn *c);

#endif
