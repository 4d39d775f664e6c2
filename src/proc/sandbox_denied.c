/*
 * sandboxDenied: the reference's guess that a sandboxed command failed
 * because the sandbox refused it - a non-zero exit with denial wording in
 * its output (exit codes 2, 126 and 127 alone are the shell's own
 * failures), or death by SIGSYS.
 */
#include "config.h"

#include <ctype.h>
#include <signal.h>
#include <string.h>

#include "proc/proc_out.h"
#include "sandbox/sandbox.h"

static const char *const denial_words[] = {
	"operation not permitted", "permission denied", "read-only file system", "seccomp",
	"sandbox", "landlock", "failed to write file", NULL
};

#define WORD_MAX	24	/* longer than any word above */

/* Search one stream's chunks, a word possibly split between two of them. */
static int
stream_has_word(const struct out_ring *r, enum proc_stream s)
{
	const struct out_chunk	*c;
	char			 win[WORD_MAX + 8192];
	size_t			 i, j, k, step, n, carry = 0;

	for (i = 0; i < r->n; i++) {
		if ((c = out_ring_at(r, i))->stream != s)
			continue;
		for (j = 0; j < c->len; j += step) {
			step = c->len - j < 8192 ? c->len - j : 8192;
			for (k = 0; k < step; k++)
				win[carry + k] = (char)tolower(c->data[j + k]);
			n = carry + step;
			for (k = 0; denial_words[k] != NULL; k++)
				if (memmem(win, n, denial_words[k], strlen(denial_words[k])) != NULL)
					return 1;
			carry = n < WORD_MAX - 1 ? n : WORD_MAX - 1;
			memmove(win, win + n - carry, carry);
		}
	}
	return 0;
}

int
sandbox_denied(int exit_code, const struct out_ring *output)
{
	if (exit_code == 0)
		return 0;
	if (output != NULL && (stream_has_word(output, STREAM_STDOUT) ||
	    stream_has_word(output, STREAM_STDERR) || stream_has_word(output, STREAM_PTY)))
		return 1;
	if (exit_code == 2 || exit_code == 126 || exit_code == 127)
		return 0;
	return exit_code == 128 + SIGSYS;
}
