/*
 * file:// URIs <-> local paths, parsed as the reference does (a WHATWG URL
 * parser, then a check that the URL names a path on this host).
 */
#ifndef EXECD_LIB_URI_H
#define EXECD_LIB_URI_H

#include "jsonx.h"

/*
 * Why a URI gives no path.  The caller decides what each means for its
 * request; the reference fails a malformed URI when it decodes the params
 * (-32602), and one that names no local path only where it is used.
 */
enum uri_status {
	URI_OK,
	URI_MALFORMED,		/* not a file URI the URL parser accepts */
	URI_NOT_LOCAL,		/* well formed, names no path here: a host, a drive letter */
	URI_NOMEM,
};

/* A malloc'd absolute, lexically normalised path, or NULL with e set. */
char	*uri_to_path(const char *uri, struct jx_err *e);
/* As uri_to_path, and on failure *st says why. */
char	*uri_to_path_status(const char *uri, struct jx_err *e, enum uri_status *st);
/*
 * The same for a URI of len bytes that may hold NULs (a JSON string): the
 * parser sees each NUL as the URL parser does, so no path is ever cut at one.
 */
char	*uri_to_path_n(const char *uri, size_t len, struct jx_err *e, enum uri_status *st);
/* uri_to_path_n() of a JSON string */
char	*uri_json_to_path(json_t *str, struct jx_err *e, enum uri_status *st);
/* "file:///abs/path" with the bytes that need it percent-encoded; malloc'd. */
char	*path_to_uri(const char *path);
/* Percent-encode one path segment (file name) as path_to_uri does; malloc'd. */
char	*uri_encode_segment(const char *name);

#endif
