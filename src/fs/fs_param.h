/*
 * Params of the fs methods, decoded as the reference's serde structs
 * are: fields in input order, unknown fields ignored, missing ones reported
 * in declaration order, the positional (array) form accepted, and serde's
 * error texts.  The reference's JSON decoder keeps numbers exact, so a
 * number of the wrong type is just "number" and a negative or fractional
 * u64 is "invalid number".
 */
#ifndef EXECD_FS_PARAM_H
#define EXECD_FS_PARAM_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "jsonx.h"

enum fp_type {
	FP_PATH,	/* PathUri -> char * (malloc'd) */
	FP_STR,		/* identifier string -> const char * (borrowed; a NUL kept as jx_id() keeps it) */
	FP_JSTR,	/* string -> json_t * (borrowed): data that may hold NULs */
	FP_BOOL,	/* bool -> int */
	FP_U64,		/* u64 -> uint64_t */
	FP_USIZE,	/* usize -> uint64_t */
	FP_DECODE,	/* decoded by the field's owner: dec */
	FP_WALK,	/* WalkOptions -> struct fs_walk_opts */
	FP_MODE,	/* "read" | "replace" -> int (0, 1) */
	FP_ANY,		/* a field of the reference's wire struct execd does not use */
};

#define FP_OPT		0x0	/* absent or null: the output is left alone */
#define FP_REQ		0x1
#define FP_SEQ_DEFAULT	0x2	/* may be missing from the array form */
#define FP_PLAIN	0x4	/* not an Option: null is a type error */

struct fs_walk_opts {
	uint64_t	 max_depth;
	uint64_t	 max_dirs;
	uint64_t	 max_entries;
	int		 follow_symlinks;
	int		 prune_hidden;
};

/*
 * A field whose type the fs code owns (the sandbox's policy): decode v
 * into out, or -1 with e and code, -32602 failing the params and any other
 * code deferred (see below); release frees out and clears it.
 */
struct fp_decoder {
	int	(*decode)(json_t *v, void *out, struct jx_err *e, int *code);
	void	(*release)(void *out);
};

struct fp_field {
	const char		*name;
	enum fp_type		 type;
	int			 flags;
	void			*out;
	const struct fp_decoder	*dec;	/* FP_DECODE only */
};

/*
 * What decoding leaves for later: the reference turns URIs into paths (and
 * sandbox entries into rules) only when the operation runs, so those
 * -32600 errors come after the method's own checks.
 */
struct fp_deferred {
	int		 code;		/* 0: none */
	char		 msg[JX_ERRLEN];
	int		 rank;		/* which one the reference meets first */
};

/* 0, or -1 with e set: answer -32602 with it. Outputs are freed by fp_release. */
int	fp_parse(json_t *params, const char *sname, const struct fp_field *f, size_t nf,
	    struct fp_deferred *d, struct jx_err *e);
void	fp_release(const struct fp_field *f, size_t nf);

#endif
