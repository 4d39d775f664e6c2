/*
 * A skill's agents/openai.yaml as capabilities/discoverV2 reads it
 * (src/discovery/skill_meta.c over src/discovery/yaml.c and libyaml): any bytes,
 * as the file's text.  What the loader keeps must point inside itself, and
 * what the reader answers must have the reference's shape: null, or
 * dependencies with tools that each have a type and a value within their
 * limits, folded; a policy whose products are the three known ones.  The
 * same text must give the same answer twice.  No I/O but libyaml's
 * loading, so no confinement.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "discovery/discovery_int.h"
#include "discovery/yaml.h"
#include "fuzz.h"

#define TEXT_MAX	(1U << 20)	/* what discoverV2 reads of the file */

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	json_t	*deps, *policy;

	(void)argc;
	(void)argv;
	if (fs_skill_meta_parse("policy: {}\n", 11, &deps, &policy) == -1 ||
	    !json_is_object(policy)) {
		fprintf(stderr, "fuzz_skill_meta: cannot read YAML (%s missing?)\n", YAML_SONAME);
		exit(1);
	}
	json_decref(deps);
	json_decref(policy);
	return 0;
}

/* Every index and offset of a loaded document inside it. */
static void
check_doc(const struct ydoc *d)
{
	const struct yev	*e;
	size_t			 i;

	for (i = 0; i < d->nev; i++) {
		e = &d->ev[i];
		if (e->kind == YEV_ALIAS) {
			if (e->next >= i || d->ev[e->next].kind == YEV_ALIAS ||
			    d->ev[e->next].kind == YEV_END)
				abort();
			continue;
		}
		if (e->next <= i || e->next > d->nev || e->tag >= d->tlen ||
		    (size_t)e->val + e->vlen >= d->tlen)
			abort();
		if ((e->kind == YEV_SEQ || e->kind == YEV_MAP) && d->ev[e->next - 1].kind != YEV_END)
			abort();
	}
}

/* Folded text of 1..max characters. */
static int
folded(json_t *v, size_t max, int required)
{
	const char	*s;
	size_t		 n, i, chars = 0;

	if (json_is_null(v))
		return !required;
	if (!json_is_string(v) || (n = json_string_length(v)) == 0)
		return 0;
	s = json_string_value(v);
	if (s[0] == ' ' || s[n - 1] == ' ' || memmem(s, n, "  ", 2) != NULL ||
	    memchr(s, '\t', n) != NULL || memchr(s, '\n', n) != NULL)
		return 0;
	for (i = 0; i < n; i++)
		chars += ((unsigned char)s[i] & 0xC0) != 0x80;
	return chars <= max;
}

static void
check_deps(json_t *deps)
{
	static const char *const names[] = { "type", "value", "description", "transport",
	    "command", "url" };
	static const size_t max[] = { 64, 1024, 1024, 64, 1024, 1024 };
	json_t	*tools, *t;
	size_t	 i, f;

	if (json_is_null(deps))
		return;
	tools = json_object_get(deps, "tools");
	if (json_object_size(deps) != 1 || !json_is_array(tools) || json_array_size(tools) == 0)
		abort();
	json_array_foreach(tools, i, t) {
		if (json_object_size(t) != 7 || !json_is_null(json_object_get(t, "oauthCallbackPort")))
			abort();
		for (f = 0; f < 6; f++)
			if (!folded(json_object_get(t, names[f]), max[f], f < 2))
				abort();
	}
}

static void
check_policy(json_t *policy)
{
	json_t		*allow, *products, *p;
	const char	*s;
	size_t		 i;

	if (json_is_null(policy))
		return;
	allow = json_object_get(policy, "allowImplicitInvocation");
	products = json_object_get(policy, "products");
	if (json_object_size(policy) != 2 || !(json_is_null(allow) || json_is_boolean(allow)) ||
	    !json_is_array(products))
		abort();
	json_array_foreach(products, i, p)
		if ((s = json_string_value(p)) == NULL || (strcmp(s, "codex") != 0 &&
		    strcmp(s, "chatgpt") != 0 && strcmp(s, "atlas") != 0))
			abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ydoc	 d;
	json_t		*deps, *policy, *deps2, *policy2;
	const char	*text = (const char *)data;

	if (size > TEXT_MAX)
		return 0;
	if (fs_yaml_load(text, size, &d) == YAML_OK) {
		check_doc(&d);
		fs_yaml_free(&d);
	}
	if (fs_skill_meta_parse(text, size, &deps, &policy) != 0 ||
	    fs_skill_meta_parse(text, size, &deps2, &policy2) != 0)
		abort();
	check_deps(deps);
	check_policy(policy);
	if (!json_equal(deps, deps2) || !json_equal(policy, policy2))
		abort();
	json_decref(deps);
	json_decref(policy);
	json_decref(deps2);
	json_decref(policy2);
	return 0;
}
