/*
 * Inside transparent TCP: the notification side (sandbox_tcp.c) and the
 * connections execd makes for a caught connect, to the proxy or in the
 * sandbox's namespace, and their answer (sandbox_tcp_conn.c).
 */
#ifndef EXECD_SANDBOX_TCP_H
#define EXECD_SANDBOX_TCP_H

#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <stdint.h>

#include "evloop.h"
#include "sandbox/sandbox_int.h"

#define TP_PENDING	64	/* connects being made per process */
#define TP_TIMEOUT_MS	300000	/* proxy handshake: the dial and a policyRequest included */

struct tp_conn {
	struct sbx_tp		*tp;
	uint64_t		 id;		/* the notification */
	int			 target_fd;	/* its descriptor number in the program */
	int			 nonblock, cloexec;
	struct ev_io		 io;
	struct ev_timer		 timer;
	int			 connecting;
	int			 local;		/* a connect in the sandbox's namespace */
	struct sockaddr_storage	 peer;		/* its address */
	socklen_t		 peerlen;
	uint8_t			 out[600];	/* greeting, auth and request, at once */
	size_t			 outlen, outoff;
	uint8_t			 in[4 + 262 + 2];	/* method, auth, reply */
	size_t			 inlen;
	char			 what[300];	/* for the log */
	TAILQ_ENTRY(tp_conn)	 entry;
};

struct sbx_tp {
	pid_t			 pid;
	struct ev_io		 nio;
	struct sbx_dns		*dns;
	struct sbx_route	 socks;
	char			 user[256], pass[256];
	TAILQ_HEAD(, tp_conn)	 conns;
	size_t			 nconns;
};

/* Answer notification id: 0, or error as connect's errno. */
int	 tp_respond(struct sbx_tp *, uint64_t id, int error);
void	 tp_conn_free(struct tp_conn *);
/*
 * A connect through the proxy for notification id (the program's
 * descriptor target_fd, orig execd's copy of its socket, sa the address
 * read); answers the notification itself, now or when done.
 */
void	 tp_conn_start(struct sbx_tp *, uint64_t id, int target_fd, int nonblock,
	    int cloexec, int orig, const struct sockaddr *sa);
/* A connect that stays in the sandbox, made on execd's copy fd (taken). */
void	 tp_local_connect(struct sbx_tp *, uint64_t id, int fd, int nonblock,
	    const struct sockaddr_storage *ss, socklen_t len);

#endif
