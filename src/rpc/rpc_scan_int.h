/* Internal to the serde_json reader: the lower level (rpc_scan_str.c) that rpc_scan.c builds on. */
#ifndef EXECD_RPC_SCAN_INT_H
#define EXECD_RPC_SCAN_INT_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "rpc/rpc_scan.h"

/* serde's error(): s->err = e at the read index; returns -1 */
int	scan_error(struct scan *s, enum scan_err e);
/* Replace n bytes at off for jansson with the shorter text with, keeping every offset. */
int	scan_fix(struct scan *s, size_t off, size_t n, const char *with);
/* After the opening quote; key, when not NULL, gets the decoded string. */
int	scan_string(struct scan *s, struct buf *key);
/* Append cp to b as UTF-8; -1 when out of memory. */
int	utf8_put(struct buf *b, uint32_t cp);

static inline int
is_digit(int c)
{
	return c >= '0' && c <= '9';
}

#endif
