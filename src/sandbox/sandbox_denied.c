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

#include "sandbox/sandbox.h"

static const char *const denial_words[] = {
	"operation not permitted", "permission denied", "read-only file system", "seccomp",
	"sandbox", "landlock", "failed to write file", NULL
};

/* Lowercased, a word possibly split between two chunks of the stream. */
void
sandbox_words_feed(struct sandbox_words *w, const uint8_t *data, size_t len)
{
	char	win[SANDBOX_WORD_MAX + 8192];
	size_t	j, k, step, n;

	for (j = 0; j < len && !w->found; j += step) {
		step = len - j < 8192 ? len - j : 8192;
		memcpy(win, w->carry, w->ncarry);
		for (k = 0; k < step; k++)
			win[w->ncarry + k] = (char)tolower(data[j + k]);
		n = w->ncarry + step;
		for (k = 0; denial_words[k] != NULL; k++)
			if (memmem(win, n, denial_words[k], strlen(denial_words[k])) != NULL) {
				w->found = 1;
				return;
			}
		w->ncarry = n < SANDBOX_WORD_MAX - 1 ? n : SANDBOX_WORD_MAX - 1;
		memcpy(w->carry, win + n - w->ncarry, w->ncarry);
	}
}

int
sandbox_denied(int exit_code, int words)
{
	if (exit_code == 0)
		return 0;
	if (words)
		return 1;
	if (exit_code == 2 || exit_code == 126 || exit_code == 127)
		return 0;
	return exit_code == 128 + SIGSYS;
}
