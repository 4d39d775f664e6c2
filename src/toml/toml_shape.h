/* What toml_shape.c and toml_lex.c share: the reference's tokens, read lazily. */
#ifndef EXECD_TOML_SHAPE_H
#define EXECD_TOML_SHAPE_H

#include <stddef.h>

#include "toml/toml_int.h"

enum tk {
	T_DOT, T_EQ, T_COMMA, T_LSQ, T_RSQ, T_LCB, T_RCB, T_WS, T_COMMENT, T_NL,
	T_STR, T_MLSTR, T_WORD, T_EOF
};

struct tok {
	enum tk	k;
	size_t	s, e;
};

struct sh {
	const char	*b;
	size_t		 len, pos;
	int		 eof_taken;
	/* one step back (seek), and the last tokens taken that matter */
	size_t		 prev_pos;
	int		 prev_eof;
	struct tok	 sig, sig_prev;		/* not blanks, comment, newline, end */
	struct tok	 nonws, nonws_prev;	/* not blanks */
	int		 depth;		/* the reference's count */
	int		 nest;		/* arrays and tables really open */
	struct toml_shape_error *err;
};

/* The next token, taken; 0 when even the end was taken. */
int	tl_next(struct sh *, struct tok *);
/* The token n ahead (0 or 1), not taken; 0 when there is none. */
int	tl_peek(const struct sh *, int n, struct tok *);
/* Put the token just taken back. */
void	tl_back(struct sh *);
/* Take the next token if it is of kind k. */
int	tl_next_if(struct sh *, enum tk k, struct tok *);

#endif
