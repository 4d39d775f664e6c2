/*
 * The Codex home directory, found as the reference finds it for
 * environmentConfig/read and capabilities/discoverV2.
 */
#ifndef EXECD_CODEX_HOME_H
#define EXECD_CODEX_HOME_H

#include <stddef.h>

/*
 * $CODEX_HOME with its symlinks resolved, which must name a directory, or
 * else $HOME/.codex (resolved if it exists): malloc'd, or NULL with err set
 * to the reference's words ("CODEX_HOME points to ..., but that path does
 * not exist").
 */
char	*codex_home_find(char *err, size_t errlen);

#endif
