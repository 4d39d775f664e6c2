/* What the TOML reader's files share (toml.c, toml_scalar.c). */
#ifndef EXECD_TOML_INT_H
#define EXECD_TOML_INT_H

#include "toml/toml.h"

struct tparser {
	const char		*buf, *p, *end;
	struct toml_error	*err;
	struct toml_node	*root, *cur;	/* cur: where key/values go */
	struct toml_node	*sink;		/* what duplicate keys define */
	const char		*dup_at;	/* the first duplicate key */
	size_t			 dup_span;	/* its characters, quotes included */
	const char		*dup_why;
	const char		*dup_order;	/* where the reference would report it */
	int			 depth;
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
/* A value that is a word (number, date, time, boolean), len bytes at s (toml_word.c). */
int	tp_word(struct tparser *, const char *s, size_t len, struct toml_node **out);
/* What toml_word.c decided, made a value (toml_number.c). */
int	tp_datetime(struct tparser *, const char *s, size_t len, struct toml_node **out);
int	tp_int(struct tparser *, const char *s, size_t len, const char *digits, size_t nd,
	    int base, struct toml_node **out);
int	tp_float(struct tparser *, const char *s, size_t len, const char *text,
	    struct toml_node **out);

/* The document's shape, checked first, as the reference does (toml_shape.c). */
struct toml_shape_error {
	int	failed;
	size_t	at;			/* offset of the error in the text */
	char	msg[160];
};
/* 0, or -1 with err set to the first shape error of buf[start..len). */
int	toml_shape(const char *buf, size_t len, size_t start, struct toml_shape_error *err);
/* Where the string token starting at buf[p] ends, as the reference cuts it. */
size_t	toml_string_end(const char *buf, size_t len, size_t p);

#endif
