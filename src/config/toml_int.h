/* What the TOML reader's files share (toml.c, toml_scalar.c). */
#ifndef EXECD_TOML_INT_H
#define EXECD_TOML_INT_H

#include "config/toml.h"

struct tparser {
	const char		*buf, *p, *end;
	struct toml_error	*err;
	struct toml_node	*root, *cur;	/* cur: where key/values go */
	struct toml_node	*sink;		/* what duplicate keys define */
	const char		*dup_at;	/* the first duplicate key */
	size_t			 dup_span;	/* its characters, quotes included */
	const char		*dup_why;
	int			 depth;
	int			 in_header;	/* 1 in a [table]'s key, 2 in a [[table]]'s */
	int			 in_key;	/* in a key/value's key */
	const char		*fail_at;	/* where the error is */
	const char		*late_at;	/* the first value too big for its type */
	char			 late_why[160];
	size_t			 late_span;
	int			 failed;
};

int	tp_fail(struct tparser *, const char *at, size_t span, const char *fmt, ...)
	    __attribute__((format(printf, 4, 5)));
int	tp_oom(struct tparser *);
int	tp_newline(const struct tparser *, const char *p);
/* A quoted string of any of the four kinds at P->p, malloc'd into *s. */
int	tp_string(struct tparser *, char **s, size_t *len);
/* A number, date or time at P->p. */
int	tp_scalar(struct tparser *, struct toml_node **out);
/* The reference's words for a value that failed where it starts (toml_words.c). */
void	tp_bare_value(struct tparser *, const char *start);
/* A failed element of an array or inline table with nothing after it: msg at the end. */
int	tp_unclosed(struct tparser *, const char *msg);
/* The failure is a bracket the text, cut short, never closed. */
int	tp_cut_short(const struct tparser *);

/* The document's shape, checked first, as the reference does (toml_shape.c). */
struct toml_shape_error {
	int	failed;
	size_t	at;			/* offset of the error in the text */
	char	msg[160];
};
/* 0, or -1 with err set to the first shape error of buf[start..len). */
int	toml_shape(const char *buf, size_t len, size_t start, struct toml_shape_error *err);

#endif
