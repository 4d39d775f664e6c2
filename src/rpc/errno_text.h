/* An OS error worded as the reference words it. */
#ifndef EXECD_ERRNO_TEXT_H
#define EXECD_ERRNO_TEXT_H

#include <stddef.h>

/* "No such file or directory (os error 2)"; returns buf */
const char	*errno_text(int errnum, char *buf, size_t len);

#endif
