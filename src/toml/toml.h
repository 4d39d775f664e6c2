/*
 * A small TOML reader and writer, for the Codex configuration files that
 * environmentConfig/read answers with.  The reader takes TOML 1.0 (and the
 * \e and \xHH escapes the reference accepts) into a tree that keeps the
 * document's key order; the writer prints a tree back the way the
 * reference re-serialises one (every table as a [section], floats as plain
 * decimals, each string in the plainest form that holds it).
 *
 * Memory is bounded: the reader refuses more than TOML_MAX_INPUT bytes and
 * TOML_MAX_DEPTH levels of nesting.  A table has as many keys as the input
 * holds, as the reference's reader allows; a big one is hashed, so that
 * reading stays linear.
 */
#ifndef EXECD_TOML_H
#define EXECD_TOML_H

#include <stddef.h>

#define TOML_MAX_INPUT	(4U << 20)	/* bytes of one document */
#define TOML_MAX_DEPTH	80		/* arrays and inline tables in one another (the reference's bound) */

enum toml_kind {
	TOML_STRING, TOML_INT, TOML_FLOAT, TOML_BOOL, TOML_DATETIME,
	TOML_ARRAY, TOML_TABLE,
};

/* How a table or array came to be: the rules for redefining it. */
#define TOML_F_HEADER	0x1	/* [table] named it */
#define TOML_F_DOTTED	0x2	/* made by a dotted key of a key/value */
#define TOML_F_INLINE	0x4	/* { inline } or [ array ] value: sealed */
#define TOML_F_AOT	0x8	/* [[array of tables]] */

struct toml_key {
	char	*s;
	size_t	 len;
};

struct toml_node {
	enum toml_kind	   kind;
	int		   flags;
	char		  *str;		/* TOML_STRING bytes; TOML_DATETIME normalised text */
	size_t		   len;
	long long	   i;		/* TOML_INT; TOML_BOOL 0 or 1 */
	double		   f;
	struct toml_node **kid;		/* TOML_ARRAY, TOML_TABLE */
	struct toml_key	  *key;		/* TOML_TABLE only */
	size_t		   n, cap;
	size_t		  *slot;	/* a big table's hash index: kid number + 1, 0 free */
	size_t		   nslot;
};

/* Where and why a document was refused: 1-based line, column in characters. */
struct toml_error {
	size_t	line, col;
	size_t	span;			/* bytes the error covers, >= 1 */
	char	msg[160];
	char	text[2048];		/* the offending line, up to its end (cut) */
	size_t	textlen;		/* the whole line's bytes */
};

/* The document's root table, or NULL with err set. */
struct toml_node *toml_parse(const char *buf, size_t len, struct toml_error *err);
void		 toml_free(struct toml_node *n);
struct toml_node *toml_clone(const struct toml_node *n);
/* A new empty table, or NULL. */
struct toml_node *toml_table_new(void);
/* Append kid under key (copied); takes kid.  0, or -1 (kid freed). */
int		 toml_table_add(struct toml_node *t, const char *key, size_t len,
		    struct toml_node *kid);
struct toml_node *toml_table_get(const struct toml_node *t, const char *key, size_t len);
/* Index t again after its keys were removed or moved; 0 or -1. */
int		 toml_table_reindex(struct toml_node *t);
/* Append kid to an array; takes kid.  0, or -1 (kid freed). */
int		 toml_array_add(struct toml_node *a, struct toml_node *kid);
/*
 * 0 when the len bytes at s are UTF-8; else -1 with *at the offset of the
 * first bad sequence and *seqlen its length (0: cut short by the end).
 */
int		 toml_utf8_check(const char *s, size_t len, size_t *at, size_t *seqlen);

/* A float as the writer prints it (serde's words use the same), malloc'd, or NULL. */
char		*toml_float_text(double v);
/* The document for root, malloc'd and NUL-terminated, or NULL. */
char		*toml_emit(const struct toml_node *root, size_t *len);

#endif
