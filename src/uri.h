/* file:// URIs <-> local paths, as the reference parses them. */
#ifndef EXECD_URI_H
#define EXECD_URI_H

#include "jsonx.h"

/* A malloc'd absolute, lexically normalised path, or NULL with e set. */
char	*uri_to_path(const char *uri, struct jx_err *e);
/* "file:///abs/path" with the bytes that need it percent-encoded; malloc'd. */
char	*path_to_uri(const char *path);

#endif
