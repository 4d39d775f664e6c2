/*
 * jansson helpers: reading request params with the same error texts as the
 * reference's decoder (serde), and compact serialisation.
 */
#ifndef EXECD_JSONX_H
#define EXECD_JSONX_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "buf.h"

#define JX_ERRLEN	512

struct jx_err {
	char	msg[JX_ERRLEN];
};

enum jx_need {
	JX_OPT = 0,	/* absent or null: leave the default */
	JX_REQ = 1,	/* absent: "missing field `x`" */
	JX_DEFAULT = 2,	/* absent: the default; but null is a type error */
};

/* "null", "integer `5`", "string \"x\"", "map", ... as serde words them */
void	 jx_describe(json_t *v, char *out, size_t outlen);
int	 jx_type_error(struct jx_err *e, json_t *v, const char *expected);

/*
 * jxtext.c: Rust's Debug form of a string (quoted, "\u{ad}" escapes), as
 * serde quotes one in its messages; 0 or -1.
 */
int	 jx_debug_str(struct buf *b, const char *s, size_t len);
int	 jx_rust_escaped(uint32_t cp);
/* pre, the Debug form of the string v, post: e's message; returns -1 */
int	 jx_type_error_str(struct jx_err *e, const char *pre, json_t *v, const char *post);
/*
 * e's message from text of len bytes.  One longer than msg is cut there at a
 * UTF-8 boundary, and jx_err_whole() gives it back whole: a client's string
 * is echoed whole, however long, as the reference echoes it.
 */
void	 jx_err_setn(struct jx_err *e, const void *text, size_t len);
/* The whole message of which msg is what jx_err_setn() kept, else msg. */
const char *jx_err_whole(const char *msg);
/* A malloc'd copy of s with every byte that is not UTF-8 made U+FFFD. */
char	*jx_utf8_lossy(const char *s);

int	 jx_struct(json_t *params, const char *name, struct jx_err *e);
/*
 * json_object_foreach over the keys that can name a field: a key holding a
 * NUL names none (serde ignores it as any unknown field), never the field
 * its prefix names.  klen: a size_t for the key's length.
 */
#define jx_fields_foreach(obj, key, klen, value) \
	json_object_keylen_foreach(obj, key, klen, value) \
		if (strlen(key) == (klen))
/*
 * decode(params, arg, e) as serde reads a struct: its fields in input order,
 * the first bad value winning, and only then the first missing field (in
 * decode's order).  decode is run on each field alone first, a required
 * field it lacks there not missing (jx_field), then on params; it must
 * leave nothing to free when it fails, and fill arg again each time.
 */
int	 jx_in_order(json_t *params, int (*decode)(json_t *, void *, struct jx_err *),
	    void *arg, struct jx_err *e);
/* jx_in_order()'s object of one field: a field absent from it may be missing elsewhere */
int	 jx_partial(json_t *o);
int	 jx_unit(json_t *params, struct jx_err *e);	/* omitted, null or {} */
/*
 * A string.  Without len it is a C string: one holding a NUL byte is
 * refused (it would be cut).  With len it is the whole string, NULs and all.
 */
int	 jx_str(json_t *o, const char *key, enum jx_need need, const char **out,
	    size_t *len, struct jx_err *e);
/*
 * An identifier the client names things by (processId, writeId, ...):
 * compared, kept and echoed, never given to the system.  A NUL in it is
 * kept as the bytes C0 80 (rewritten in place), so that it stays a C string
 * that equals no other identifier; jx_id_json() gives back the client's string.
 */
int	 jx_id(json_t *o, const char *key, enum jx_need need, const char **out,
	    struct jx_err *e);
int	 jx_id_encode(json_t *str);
json_t	*jx_id_json(const char *id);
/* A string holding a NUL byte. */
int	 jx_has_nul(json_t *v);
/* A NUL byte in any string or object key of v, at any depth. */
int	 jx_has_nul_deep(json_t *v);
int	 jx_bool(json_t *o, const char *key, enum jx_need need, int *out, struct jx_err *e);
int	 jx_u64(json_t *o, const char *key, enum jx_need need, uint64_t *out, struct jx_err *e);
/* the same with the type named in errors ("usize") */
int	 jx_uint(json_t *o, const char *key, enum jx_need need, uint64_t *out,
	    const char *tname, struct jx_err *e);
int	 jx_i64(json_t *o, const char *key, enum jx_need need, int64_t *out, struct jx_err *e);
/* any JSON object; *out borrowed */
int	 jx_obj(json_t *o, const char *key, enum jx_need need, json_t **out, struct jx_err *e);
/* any value; *out borrowed */
int	 jx_any(json_t *o, const char *key, enum jx_need need, json_t **out, struct jx_err *e);
/* an object, else serde's "expected struct <sname>"; *out borrowed */
int	 jx_substruct(json_t *o, const char *key, enum jx_need need, const char *sname,
	    json_t **out, struct jx_err *e);
/* an array of strings; *out borrowed */
int	 jx_strarray(json_t *o, const char *key, enum jx_need need, json_t **out, struct jx_err *e);
/* an object whose values are all strings; *out borrowed */
int	 jx_strmap(json_t *o, const char *key, enum jx_need need, json_t **out, struct jx_err *e);

/* Compact, no sorting, UTF-8 kept as is; malloc'd, NULL on failure. */
char	*jx_dump(json_t *v, size_t *len);

#endif
