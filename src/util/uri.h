/*
 * file:// URIs <-> local paths, parsed as the reference does (a WHATWG URL
 * parser, then a check that the URL names a path on this host).
 */
#ifndef EXECD_URI_H
#define EXECD_URI_H

#include "jsonx.h"

/* A malloc'd absolute, lexically normalised path, or NULL with e set. */
char	*uri_to_path(const char *uri, struct jx_err *e);
/*
 * As uri_to_path, and *code tells the stage that failed, as the reference
 * reports it: RPC_INVALID_PARAMS (-32602) for a malformed URI (it fails
 * decoding the params), RPC_INVALID_REQUEST (-32600) for a well-formed URI
 * that names no local path (a host, a drive letter; it fails when used).
 */
char	*uri_to_path_code(const char *uri, struct jx_err *e, int *code);
/*
 * The same for a URI of len bytes that may hold NULs (a JSON string): the
 * parser sees each NUL as the URL parser does, so no path is ever cut at one.
 */
char	*uri_to_path_n(const char *uri, size_t len, struct jx_err *e, int *code);
/* uri_to_path_n() of a JSON string */
char	*uri_json_to_path(json_t *str, struct jx_err *e, int *code);
/* "file:///abs/path" with the bytes that need it percent-encoded; malloc'd. */
char	*path_to_uri(const char *path);
/* Percent-encode one path segment (file name) as path_to_uri does; malloc'd. */
char	*uri_encode_segment(const char *name);

#endif
