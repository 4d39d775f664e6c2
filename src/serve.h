/* One client connection's whole life in this process: loop, dispatcher, cleanup. */
#ifndef EXECD_SERVE_H
#define EXECD_SERVE_H

/* Returns the process exit status. */
int	serve_connection(int in_fd, int out_fd);

#endif
