/*
 * The TOML reader and writer of environmentConfig/read (src/toml/toml*.c).
 * The input is a document.  A refused one must say why and where (line and
 * column from 1); an accepted one is printed, and what is printed must read
 * back (unless a bound refuses it: nesting, key parts, keys per table) and
 * print the same again.  The reader and writer do no I/O, so the target
 * needs no confinement.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "toml/toml.h"
#include "fuzz.h"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

/* The printed document reads back and prints the same. */
static void
round_trip(const char *text, size_t len)
{
	struct toml_error	 err;
	struct toml_node	*again;
	char			*text2;
	size_t			 len2;

	if ((again = toml_parse(text, len, &err)) == NULL) {
		if (strstr(err.msg, "at most") == NULL &&
		    strstr(err.msg, "max recursion depth") == NULL)
			abort();	/* the writer wrote what the reader refuses */
		return;
	}
	if ((text2 = toml_emit(again, &len2)) == NULL)
		abort();
	if (len2 != len || memcmp(text, text2, len) != 0)
		abort();	/* printing is not stable */
	free(text2);
	toml_free(again);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct toml_error	 err;
	struct toml_node	*doc, *copy;
	char			*text;
	size_t			 len, at, seq;

	if (toml_utf8_check((const char *)data, size, &at, &seq) == -1)
		return 0;	/* the caller refuses it before the reader sees it */
	if ((doc = toml_parse((const char *)data, size, &err)) == NULL) {
		if (err.msg[0] == '\0' || err.line == 0 || err.col == 0 ||
		    memchr(err.text, '\0', sizeof(err.text)) == NULL)
			abort();
		return 0;
	}
	if ((copy = toml_clone(doc)) == NULL || (text = toml_emit(copy, &len)) == NULL)
		abort();
	if (strlen(text) == len)	/* a NUL in a string is escaped, never printed */
		round_trip(text, len);
	else
		abort();
	free(text);
	toml_free(copy);
	toml_free(doc);
	return 0;
}
