/*
 * serde's error texts for a params decoder (rpc_serde.c): the reference
 * decodes params with serde, and its clients see serde's wording.
 */
#ifndef EXECD_RPC_SERDE_H
#define EXECD_RPC_SERDE_H

#include <stddef.h>

#include <jansson.h>

#include "jsonx.h"

/*
 * serde's words for an unexpected value.  content: the value sits inside a
 * buffered (internally tagged) enum, where serde says "integer `5`" and
 * "floating point `1.5`" instead of "number".
 */
void	serde_describe(json_t *v, int content, char *out, size_t len);
int	serde_type_error(struct jx_err *e, json_t *v, const char *expected, int content);
int	serde_missing(struct jx_err *e, const char *field);
/* "unknown variant `x`, expected one of `a`, `b`" from a NULL-terminated list */
int	serde_unknown_variant(struct jx_err *e, const char *got, const char *const *variants);
/*
 * A unit variant as serde reads one: its name, or a map of that one key to
 * null.  0 with *idx its index in variants (NULL-terminated), or -1.
 */
int	serde_unit_variant(json_t *v, const char *const *variants, int *idx, struct jx_err *e);
/* A params struct as serde derives it, for its sequence (positional) form. */
struct serde_struct {
	const char		*name;		/* "ReadParams" */
	const char *const	*fields;	/* declaration order, NULL-terminated */
	unsigned long		 seq_defaults;	/* bit i: field i may be left out */
};

/*
 * params as the method's decoder reads them: an array (serde's sequence
 * form) becomes the object of its fields by position, anything else is
 * itself.  A new reference (NULL for NULL); *n: the array's length, or -1.
 */
json_t	*serde_struct_params(json_t *params, const struct serde_struct *s, long *n);
/*
 * After decoding a sequence of n (rc: the decode's 0 or -1): serde's
 * "invalid length" when a field was missing or too few or too many
 * elements came; an earlier element's error stands.  0, or -1 with e set.
 */
int	serde_struct_seq_end(const struct serde_struct *s, long n, int rc, struct jx_err *e);
/*
 * A nested struct execd reads in its map form only, given as serde's
 * sequence form: an empty one is the struct of its defaults when every
 * field has one (nfields 0: o[key] becomes {}), else serde's "invalid
 * length 0, expected struct S with N elements".  A longer sequence is left
 * to the map decoder's type error (README).  0, or -1 with e set.
 */
int	serde_empty_seq(json_t *o, const char *key, const char *sname, int nfields,
	    struct jx_err *e);
/* A uuid::Uuid as serde reads one from a string, with the uuid crate's words: 0 or -1 */
int	serde_uuid(const char *s, size_t len, struct jx_err *e);
/* Index of s in the NULL-terminated list, or -1. */
int	serde_variant(const char *s, const char *const *variants);
/* The same for a name of len bytes: one holding a NUL is none of them */
int	serde_variant_n(const char *s, size_t len, const char *const *variants);
int	serde_unknown_variant_n(struct jx_err *e, const char *got, size_t len,
	    const char *const *variants);
/* of a JSON string */
#define serde_variant_json(v, vars) \
	serde_variant_n(json_string_value(v), json_string_length(v), (vars))
#define serde_unknown_variant_json(e, v, vars) \
	serde_unknown_variant_n((e), json_string_value(v), json_string_length(v), (vars))

#endif
