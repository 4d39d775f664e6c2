/*
 * libyaml, opened at the first YAML document rather than linked: like
 * libcurl and libcrypto, it would cost every instance its loading and
 * relocation before main, and only capabilities/discoverV2 reads YAML (a
 * skill's agents/openai.yaml).  The prototypes still come from yaml.h, so
 * the compiler checks every call.
 *
 * The events are kept as serde_yaml's loader keeps them, whole before
 * anything reads them: the reader needs aliases resolved, anchors that may
 * be defined again later, and a document that is refused for a syntax error
 * at its end even when what it wants came first.  Bounds: the caller's on
 * the text (1 MiB for openai.yaml); ours on the events and their text,
 * which no text of that size reaches, and on nesting (YAML_DEPTH_MAX).
 */
#include "config.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <yaml.h>

#include "dlsyms.h"
#include "discovery/yaml.h"

#define YAML_EVENTS_MAX	(8U << 20)	/* events of one document */
#define YAML_ARENA_MAX	(64U << 20)	/* bytes of its scalars and tags */
/*
 * Collections open at once.  libyaml's scanner checks every open flow
 * level for a stale simple key at each token, so a text nested n deep
 * costs n per token: 1 MiB of "[" takes the reference (the same code)
 * minutes.  A skill's metadata is a few levels deep; deeper is refused.
 */
#define YAML_DEPTH_MAX	64

static struct {
	__typeof__(&yaml_parser_initialize)		init;
	__typeof__(&yaml_parser_set_input_string)	input;
	__typeof__(&yaml_parser_parse)			parse;
	__typeof__(&yaml_event_delete)			event_delete;
	__typeof__(&yaml_parser_delete)			parser_delete;
} fn;

static const struct dl_sym symbols[] = {
	{ "yaml_parser_initialize", offsetof(__typeof__(fn), init) },
	{ "yaml_parser_set_input_string", offsetof(__typeof__(fn), input) },
	{ "yaml_parser_parse", offsetof(__typeof__(fn), parse) },
	{ "yaml_event_delete", offsetof(__typeof__(fn), event_delete) },
	{ "yaml_parser_delete", offsetof(__typeof__(fn), parser_delete) },
};

static int	loaded;		/* 1: loaded, -1: cannot be (said once) */

static int
yaml_lib_load(void)
{
	if (loaded != 0)
		return loaded == 1 ? 0 : -1;
	loaded = -1;
	if (dl_load(YAML_SONAME, symbols, sizeof(symbols) / sizeof(symbols[0]), &fn,
	    "skill metadata is not read") == -1)
		return -1;
	loaded = 1;
	return 0;
}

/* Copy n bytes (and a NUL) into the arena: their offset, or 0. */
static uint32_t
arena_add(struct ydoc *d, const void *s, size_t n)
{
	size_t	 cap, at = d->tlen;
	char	*p;

	if (n > YAML_ARENA_MAX || at + n + 1 > YAML_ARENA_MAX)
		return 0;
	if (at + n + 1 > d->tcap) {
		cap = d->tcap != 0 ? d->tcap : 4096;
		while (cap < at + n + 1)
			cap *= 2;
		if ((p = realloc(d->text, cap)) == NULL)
			return 0;
		d->text = p;
		d->tcap = cap;
	}
	if (n > 0)
		memcpy(d->text + at, s, n);
	d->text[at + n] = '\0';
	d->tlen = at + n + 1;
	return (uint32_t)at;
}

static struct yev *
event_add(struct ydoc *d, enum yev_kind kind)
{
	struct yev	*p;
	size_t		 cap;

	if (d->nev >= YAML_EVENTS_MAX)
		return NULL;
	if (d->nev == d->evcap) {
		cap = d->evcap != 0 ? d->evcap * 2 : 64;
		if ((p = reallocarray(d->ev, cap, sizeof(*p))) == NULL)
			return NULL;
		d->ev = p;
		d->evcap = cap;
	}
	p = &d->ev[d->nev++];
	memset(p, 0, sizeof(*p));
	p->kind = kind;
	p->next = (uint32_t)d->nev;
	return p;
}

struct loader {
	struct ydoc	*d;
	json_t		*anchors;	/* name: index of the node it names, the latest */
	uint32_t	*open;		/* indexes of the collections not yet ended */
	size_t		 nopen, opencap;
	int		 docs;
};

/* A node's anchor and tag; -1 if out of room. */
static int
node_common(struct loader *l, struct yev *e, const yaml_char_t *anchor, const yaml_char_t *tag)
{
	uint32_t	at = (uint32_t)(e - l->d->ev);

	if (tag != NULL && (e->tag = arena_add(l->d, tag, strlen((const char *)tag))) == 0)
		return -1;
	if (anchor != NULL && json_object_set_new(l->anchors, (const char *)anchor,
	    json_integer(at)) == -1)
		return -1;
	return 0;
}

static int
open_push(struct loader *l, uint32_t at)
{
	uint32_t	*p;
	size_t		 cap;

	if (l->nopen == l->opencap) {
		cap = l->opencap != 0 ? l->opencap * 2 : 32;
		if ((p = reallocarray(l->open, cap, sizeof(*p))) == NULL)
			return -1;
		l->open = p;
		l->opencap = cap;
	}
	l->open[l->nopen++] = at;
	return 0;
}

static int
on_scalar(struct loader *l, const yaml_event_t *ev)
{
	struct yev	*e;
	uint32_t	 at;

	if ((e = event_add(l->d, YEV_SCALAR)) == NULL)
		return -1;
	e->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	if (node_common(l, e, ev->data.scalar.anchor, ev->data.scalar.tag) == -1 ||
	    ev->data.scalar.length > UINT32_MAX ||
	    (at = arena_add(l->d, ev->data.scalar.value, ev->data.scalar.length)) == 0)
		return -1;
	e = &l->d->ev[l->d->nev - 1];	/* the arena does not move events */
	e->val = at;
	e->vlen = (uint32_t)ev->data.scalar.length;
	return 0;
}

static int
on_start(struct loader *l, enum yev_kind kind, const yaml_char_t *anchor, const yaml_char_t *tag)
{
	struct yev	*e;

	if (l->nopen >= YAML_DEPTH_MAX)
		return -1;
	if ((e = event_add(l->d, kind)) == NULL || node_common(l, e, anchor, tag) == -1)
		return -1;
	return open_push(l, (uint32_t)(l->d->nev - 1));
}

static int
on_end(struct loader *l)
{
	if (l->nopen == 0 || event_add(l->d, YEV_END) == NULL)
		return -1;
	l->d->ev[l->open[--l->nopen]].next = (uint32_t)l->d->nev;
	return 0;
}

static int
on_alias(struct loader *l, const yaml_char_t *anchor)
{
	json_t		*at = json_object_get(l->anchors, (const char *)anchor);
	struct yev	*e;

	if (at == NULL)
		return -1;	/* serde_yaml: "unknown anchor" */
	if ((e = event_add(l->d, YEV_ALIAS)) == NULL)
		return -1;
	e->next = (uint32_t)json_integer_value(at);
	return 0;
}

/* One event into the document: 1 at the stream's end, 0, or -1: refused. */
static int
on_event(struct loader *l, const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_STREAM_END_EVENT:
		return 1;
	case YAML_DOCUMENT_START_EVENT:
		return ++l->docs > 1 ? -1 : 0;	/* more than one document */
	case YAML_SCALAR_EVENT:
		return on_scalar(l, ev);
	case YAML_SEQUENCE_START_EVENT:
		return on_start(l, YEV_SEQ, ev->data.sequence_start.anchor,
		    ev->data.sequence_start.tag);
	case YAML_MAPPING_START_EVENT:
		return on_start(l, YEV_MAP, ev->data.mapping_start.anchor,
		    ev->data.mapping_start.tag);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		return on_end(l);
	case YAML_ALIAS_EVENT:
		return on_alias(l, ev->data.alias.anchor);
	default:
		return 0;
	}
}

int
fs_yaml_load(const char *buf, size_t len, struct ydoc *d)
{
	struct loader	 l = { d, json_object(), NULL, 0, 0, 0 };
	yaml_parser_t	 parser;
	yaml_event_t	 ev;
	int		 r = 0;

	memset(d, 0, sizeof(*d));
	if (l.anchors == NULL || yaml_lib_load() == -1) {
		json_decref(l.anchors);
		return YAML_UNAVAILABLE;
	}
	if (fn.init(&parser) == 0) {
		json_decref(l.anchors);
		return YAML_INVALID;
	}
	fn.input(&parser, (const unsigned char *)buf, len);
	arena_add(d, "", 0);		/* offset 0: no string */
	while (r == 0) {
		if (fn.parse(&parser, &ev) == 0) {
			r = -1;		/* the syntax error serde_yaml reports */
			break;
		}
		r = on_event(&l, &ev);
		fn.event_delete(&ev);
	}
	fn.parser_delete(&parser);
	json_decref(l.anchors);
	free(l.open);
	if (r == -1 || l.docs != 1 || d->nev == 0 || d->tlen == 0) {
		fs_yaml_free(d);
		return YAML_INVALID;
	}
	return YAML_OK;
}

void
fs_yaml_free(struct ydoc *d)
{
	free(d->ev);
	free(d->text);
	memset(d, 0, sizeof(*d));
}
