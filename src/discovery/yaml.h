/*
 * A YAML document as the list of its parse events, read with libyaml: the
 * parser the reference's serde_yaml is a translation of, so a file one
 * refuses the other refuses too.  libyaml is opened at the first document
 * (yaml.c says why).  What the events mean is the reader's business
 * (skill_meta.c); this only records them, with aliases already pointing
 * at their anchor's node, as serde_yaml's loader leaves them.
 */
#ifndef EXECD_DISCOVERY_YAML_H
#define EXECD_DISCOVERY_YAML_H

#include <stddef.h>
#include <stdint.h>

#define YAML_SONAME	"libyaml-0.so.2"

enum yev_kind { YEV_SCALAR, YEV_SEQ, YEV_MAP, YEV_END, YEV_ALIAS };

struct yev {
	uint8_t		kind;		/* enum yev_kind */
	uint8_t		plain;		/* a scalar in the plain style */
	uint32_t	next;		/* a node's following event; an alias: its target */
	uint32_t	val, vlen;	/* a scalar's value in the text arena */
	uint32_t	tag;		/* its tag (NUL-terminated) in the arena, or 0: none */
};

struct ydoc {
	struct yev	*ev;		/* ev[0] is the document's root node */
	size_t		 nev, evcap;
	char		*text;		/* arena; offset 0 is never a string */
	size_t		 tlen, tcap;
};

enum { YAML_OK = 0, YAML_INVALID = -1, YAML_UNAVAILABLE = -2 };

/*
 * Load the one document of buf: YAML_OK, YAML_INVALID (a syntax error, not
 * exactly one document, an alias without its anchor, a bound passed) or
 * YAML_UNAVAILABLE (libyaml cannot be loaded).  fs_yaml_free() after.
 */
int	fs_yaml_load(const char *buf, size_t len, struct ydoc *d);
void	fs_yaml_free(struct ydoc *d);

#endif
