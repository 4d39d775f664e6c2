/*
 * front/: what accepts.  The listening sockets (listener.c) and the
 * control socket on which execd registers the processes it starts
 * (control.c).  Both get the live configuration through the struct
 * proxy_env that main.c owns; a listener gets its protocol from main.c
 * too, as a handler table.  Uses relay/, tls/ and policy/.
 */
#ifndef EXECD_PROXY_FRONT_H
#define EXECD_PROXY_FRONT_H

#include "types.h"

/* listener.c */
struct listener {
	const struct proto_handler *pp;
	int			 fd;
	struct ev_io		 io;
	struct ev_timer		 retry;
	char			 name[64];	/* "127.0.0.1:3128" */
	struct proxy_env	*env;
};

/*
 * What main.c owns and hands down at open time: the live configuration
 * (replaced on reload), its generation, the listening sockets.
 */
struct proxy_env {
	struct proxy_conf	*conf;
	unsigned		 generation;
	struct listener		*http, *socks;
};

int	 listener_open(struct listener *, const struct proto_handler *,
	    const struct sockaddr_storage *, struct proxy_env *);
void	 listener_close(struct listener *);

/* control.c */
struct ctl_client;
int	 control_open(const char *path, struct proxy_env *);
/* fd: a connected control connection nobody else holds; gone() when it ends */
int	 control_adopt(int fd, struct proxy_env *, void (*gone)(void));
void	 control_close(void);

#endif
