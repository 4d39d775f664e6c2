/*
 * Stand-in for macOS <launch.h>, declaring only what src/transport/activate.c uses, so
 * its __APPLE__ code is compiled and run on Linux against a fake launchd
 * (tests/activate_launchd.c).
 */
#ifndef EXECD_TEST_LAUNCH_H
#define EXECD_TEST_LAUNCH_H

#include <stddef.h>

int	launch_activate_socket(const char *name, int **fds, size_t *cnt);

#endif
