/*
 * serde_json's reader, so that a message is judged as the reference judges
 * it: serde_json's syntax errors, texts and positions, its recursion limit,
 * duplicate keys refused (as the reference's value type does), and what
 * jansson cannot hold rewritten in a copy of the same length.
 */
#ifndef EXECD_RPC_SCAN_H
#define EXECD_RPC_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "buf.h"

#define SERDE_DEPTH	128	/* serde_json's recursion limit */
/* the reference's limit on the values (not keys) of one message */
#define RPC_MAX_VALUES	262144

enum scan_err {
	SE_NONE, SE_NOMEM, SE_EOF_LIST, SE_EOF_OBJECT, SE_EOF_STRING, SE_EOF_VALUE,
	SE_COLON, SE_LIST_COMMA, SE_OBJECT_COMMA, SE_IDENT, SE_VALUE, SE_ESCAPE,
	SE_NUMBER, SE_UNICODE, SE_CONTROL, SE_KEY, SE_LONE_SURROGATE, SE_HEX_END,
	SE_TRAILING_COMMA, SE_TRAILING, SE_RECURSION, SE_DUPLICATE, SE_VALUES,
};

/* How a number fits jansson, and what serde's RequestId makes of it. */
enum scan_num { NUM_NONE, NUM_I64, NUM_U64, NUM_U128, NUM_I128, NUM_HUGE, NUM_REAL };

struct scan {
	const uint8_t	*p;
	size_t		 len;
	size_t		 i;		/* serde's read index */
	int		 depth;		/* nesting left */
	size_t		 values;	/* values begun so far */
	enum scan_err	 err;
	size_t		 epos;		/* index the error is reported at */
	struct buf	 key;		/* the key just read, decoded */
	json_t		*seen[SERDE_DEPTH];	/* keys of the objects being read */
	/*
	 * p rewritten for jansson, NULL while unchanged: integers in
	 * (INT64_MAX, UINT64_MAX] become INT64_MAX, other numbers out of
	 * jansson's range +-1e308, \u0000 in keys \uffff.
	 */
	char		*fixed;
	int		 key_nul;	/* a key held \u0000 (written \uffff in fixed) */
	/* the numbers written as root.id and root.error.code */
	enum scan_num	 id_kind, code_kind;
	/* the first 128-bit integer within root.id */
	enum scan_num	 id_wide;
	size_t		 id_off, id_len;
	int		 escaped;	/* the string just read held an escape */
	/* root.method as written, when it has no escape (method_len 0: none) */
	size_t		 method_off, method_len;
	/*
	 * The longest string member of root.params of SCAN_BLOB_MIN bytes or
	 * more without an escape: its text between the quotes (blob_len 0:
	 * none) and its key.  rpc_parse() may leave it out of jansson's tree.
	 */
	size_t		 blob_off, blob_len;
	struct buf	 blob_key;
};

#define SCAN_BLOB_MIN	(64 * 1024)

/* The first JSON value of p: 0, or -1 with s->err set.  Then s->i is its end. */
int	scan_json(struct scan *s, const uint8_t *p, size_t len);
/* After scan_json(): -1 (s->err set) if anything but whitespace follows. */
int	scan_trailing(struct scan *s);
/* serde's words for s->err: "EOF while parsing a string at line 1 column 9" */
int	scan_error_text(const struct scan *s, struct buf *out);
void	scan_free(struct scan *s);

int	 utf8_valid(const uint8_t *p, size_t n);		/* as Rust's str::from_utf8 */
uint32_t utf8_decode(const uint8_t *p, size_t *n);	/* valid UTF-8; *n: its length */
int	 unicode_blank(const uint8_t *p, size_t n);	/* Rust's trim() leaves nothing */

#endif
