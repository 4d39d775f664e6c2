/*
 * A skill's agents/openai.yaml, read as the reference reads it: serde_yaml
 * into fixed types, where any value of the wrong type (or a known key given
 * twice) makes the whole file worthless, and what survives is checked
 * field by field.  Only `dependencies` and `policy` reach the answer;
 * `interface` is read for its types alone, as the reference drops it.
 *
 *   interface:    display_name, short_description, icon_small, icon_large,
 *                 brand_color, default_prompt: strings or null
 *   dependencies: tools: a list of {type, value, description, transport,
 *                 command, url}, strings or null; a tool without a type
 *                 or value is dropped, as is a field that is empty or too
 *                 long once its whitespace is folded; no tools, no
 *                 dependencies
 *   policy:       allow_implicit_invocation: a boolean or null;
 *                 products: a list of codex, chatgpt, atlas
 *
 * serde_yaml's rules for what a scalar may be are followed to the letter:
 * see the helpers below.  Reading costs at most READ_STEPS node visits, a
 * bound only aliases to large maps can reach (the reference would spend
 * minutes on such a file; execd calls it worthless).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "discovery/discovery_int.h"
#include "discovery/yaml.h"

#define READ_STEPS	(4U << 20)
#define NAME_MAX_CHARS	64
#define TEXT_MAX_CHARS	1024
#define NULL_TAG	"tag:yaml.org,2002:null"

struct reader {
	const struct ydoc	*d;
	size_t			 steps;
};

/* The node at i, through an alias; NULL once the budget is spent. */
static const struct yev *
node(struct reader *r, uint32_t i)
{
	const struct yev	*e = &r->d->ev[i];

	if (++r->steps > READ_STEPS)
		return NULL;
	if (e->kind == YEV_ALIAS)
		e = &r->d->ev[e->next];
	return e;
}

static const char *
value(struct reader *r, const struct yev *e)
{
	return r->d->text + e->val;
}

static int
null_word(const char *s, size_t n)
{
	return (n == 1 && s[0] == '~') || (n == 4 && (memcmp(s, "null", 4) == 0 ||
	    memcmp(s, "Null", 4) == 0 || memcmp(s, "NULL", 4) == 0));
}

/*
 * serde_yaml's Option: a plain scalar that is empty or a null word is
 * None, unless it has a tag; with !!null it must be a null word.  1: Some,
 * 0: None, -1: refused.
 */
static int
is_some(struct reader *r, uint32_t i)
{
	const struct yev	*e = node(r, i);
	const char		*tag;

	if (e == NULL)
		return -1;
	if (e->kind != YEV_SCALAR || !e->plain)
		return 1;
	if (e->tag != 0) {
		tag = r->d->text + e->tag;
		if (strcmp(tag, NULL_TAG) != 0)
			return 1;
		return null_word(value(r, e), e->vlen) ? 0 : -1;
	}
	return e->vlen == 0 || null_word(value(r, e), e->vlen) ? 0 : 1;
}

/* Any scalar is a string, whatever its style or tag. */
static int
string_at(struct reader *r, uint32_t i, const char **s, size_t *n)
{
	const struct yev	*e = node(r, i);

	if (e == NULL || e->kind != YEV_SCALAR)
		return -1;
	*s = value(r, e);
	*n = e->vlen;
	return 0;
}

/* A boolean is a plain scalar, of any tag: true, True, TRUE and the false ones. */
static int
bool_at(struct reader *r, uint32_t i, int *b)
{
	static const char *const words[] = { "false", "False", "FALSE", "true", "True", "TRUE" };
	const struct yev	*e = node(r, i);
	size_t			 k;

	if (e == NULL || e->kind != YEV_SCALAR || !e->plain)
		return -1;
	for (k = 0; k < 6; k++)
		if (strlen(words[k]) == e->vlen && memcmp(words[k], value(r, e), e->vlen) == 0) {
			*b = k >= 3;
			return 0;
		}
	return -1;
}

/*
 * The first entry of a collection at i: a map or sequence of that kind, or
 * a plain empty scalar (an empty one).  *end is where its entries stop.
 */
static int
entries(struct reader *r, uint32_t i, enum yev_kind kind, uint32_t *first, uint32_t *end)
{
	const struct yev	*e = node(r, i);

	if (e == NULL)
		return -1;
	if (e->kind == YEV_SCALAR && e->plain && e->vlen == 0) {
		*first = *end = 0;
		return 0;
	}
	if (e->kind != kind)
		return -1;
	*first = (uint32_t)(e - r->d->ev) + 1;
	*end = e->next - 1;		/* its END event */
	return 0;
}

static uint32_t
after(const struct ydoc *d, uint32_t i)
{
	return d->ev[i].kind == YEV_ALIAS ? i + 1 : d->ev[i].next;
}

/*
 * Walk a struct's map: each known key (a scalar, through an alias) once,
 * given to fn with its value; others skipped whole.  -1: refused.
 */
typedef int	(*field_fn)(struct reader *, int field, uint32_t val, void *arg);

static int
fields(struct reader *r, uint32_t i, const char *const *names, field_fn fn, void *arg)
{
	uint32_t	 k, end, seen = 0;
	const char	*key;
	size_t		 klen;
	int		 f;

	if (entries(r, i, YEV_MAP, &k, &end) == -1)
		return -1;
	for (; k < end; k = after(r->d, after(r->d, k))) {
		if (string_at(r, k, &key, &klen) == -1)
			return -1;
		for (f = 0; names[f] != NULL; f++)
			if (strlen(names[f]) == klen && memcmp(names[f], key, klen) == 0)
				break;
		if (names[f] == NULL)
			continue;
		if (seen & (1U << f))
			return -1;	/* serde: duplicate field */
		seen |= 1U << f;
		if (fn(r, f, after(r->d, k), arg) == -1)
			return -1;
	}
	return 0;
}

/* Rust's char::is_whitespace: the White_Space code points. */
static int
unicode_space(uint32_t c)
{
	return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 ||
	    c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
	    c == 0x202F || c == 0x205F || c == 0x3000;
}

/* The code point at s (n > 0 bytes left) and its length; bad bytes are one each. */
static uint32_t
code_point(const unsigned char *s, size_t n, size_t *len)
{
	uint32_t	c = s[0];
	size_t		k, want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;

	*len = 1;
	if (want == 1 || want > n)
		return c;
	c &= 0x3F >> (want - 1);
	for (k = 1; k < want; k++) {
		if ((s[k] & 0xC0) != 0x80)
			return s[0];
		c = (c << 6) | (s[k] & 0x3F);
	}
	*len = want;
	return c;
}

/*
 * The reference's sanitize: whitespace runs (Unicode's) folded to one
 * space, none at the ends; NULL if that leaves nothing or more than max
 * characters.
 */
static json_t *
fold_text(const char *text, size_t n, size_t max)
{
	const unsigned char	*s = (const unsigned char *)text;
	char			*out, *o;
	size_t			 i, len, chars = 0;
	json_t			*v = NULL;
	int			 space = 0;

	if ((out = o = malloc(n + 1)) == NULL)
		return NULL;
	for (i = 0; i < n; i += len) {
		if (unicode_space(code_point(s + i, n - i, &len))) {
			space = o != out;
			continue;
		}
		if (space) {
			*o++ = ' ';
			chars++;
		}
		space = 0;
		memcpy(o, s + i, len);
		o += len;
		chars++;
	}
	if (o != out && chars <= max)
		v = json_stringn(out, (size_t)(o - out));
	free(out);
	return v;
}

/* An Option<String>: *s NULL for None. */
static int
opt_string(struct reader *r, uint32_t i, const char **s, size_t *n)
{
	int	some = is_some(r, i);

	*s = NULL;
	*n = 0;
	if (some <= 0)
		return some;
	return string_at(r, i, s, n);
}

static int
interface_field(struct reader *r, int field, uint32_t val, void *arg)
{
	const char	*s;
	size_t		 n;

	(void)field;
	(void)arg;
	return opt_string(r, val, &s, &n);
}

static const char *const interface_names[] = { "display_name", "short_description",
    "icon_small", "icon_large", "brand_color", "default_prompt", NULL };

static const char *const tool_names[] = { "type", "value", "description", "transport",
    "command", "url", NULL };
static const size_t tool_max[] = { NAME_MAX_CHARS, TEXT_MAX_CHARS, TEXT_MAX_CHARS,
    NAME_MAX_CHARS, TEXT_MAX_CHARS, TEXT_MAX_CHARS };

static int
tool_field(struct reader *r, int field, uint32_t val, void *arg)
{
	json_t		*tool = arg, *folded;
	const char	*s;
	size_t		 n;

	if (opt_string(r, val, &s, &n) == -1)
		return -1;
	if (s != NULL && (folded = fold_text(s, n, tool_max[field])) != NULL)
		json_object_set_new(tool, tool_names[field], folded);
	return 0;
}

/* Each tool into tools, those without a type or value left out. */
static int
tools_list(struct reader *r, uint32_t i, json_t *tools)
{
	uint32_t	 t, end;
	json_t		*tool, *out;
	size_t		 f;

	if (entries(r, i, YEV_SEQ, &t, &end) == -1)
		return -1;
	for (; t < end; t = after(r->d, t)) {
		if ((tool = json_object()) == NULL ||
		    fields(r, t, tool_names, tool_field, tool) == -1) {
			json_decref(tool);
			return -1;
		}
		if (json_object_get(tool, "type") != NULL && json_object_get(tool, "value") != NULL &&
		    (out = json_object()) != NULL) {
			for (f = 0; tool_names[f] != NULL; f++)
				json_object_set(out, tool_names[f], json_object_get(tool, tool_names[f]) ?
				    json_object_get(tool, tool_names[f]) : json_null());
			json_object_set_new(out, "oauthCallbackPort", json_null());
			json_array_append_new(tools, out);
		}
		json_decref(tool);
	}
	return 0;
}

static int
dependencies_field(struct reader *r, int field, uint32_t val, void *arg)
{
	(void)field;
	return tools_list(r, val, arg);
}

static const char *const dependencies_names[] = { "tools", NULL };

/*
 * A product: a scalar naming one, or a local tag naming one (!codex) on a
 * plain scalar that is empty or a null word, serde_yaml's enum forms.
 */
static json_t *
product(struct reader *r, uint32_t i)
{
	static const char *const names[] = { "codex", "chatgpt", "atlas" };
	const struct yev	*e = node(r, i);
	const char		*name;
	size_t			 k, n;

	if (e == NULL || e->kind != YEV_SCALAR)
		return NULL;
	name = value(r, e);
	n = e->vlen;
	if (e->tag != 0 && r->d->text[e->tag] == '!') {
		if (!e->plain || (e->vlen != 0 && !null_word(name, n)))
			return NULL;
		name = r->d->text + e->tag + 1;
		n = strlen(name);
	}
	for (k = 0; k < 3; k++)
		if (strlen(names[k]) == n && memcmp(names[k], name, n) == 0)
			return json_string(names[k]);
	return NULL;
}

static int
policy_field(struct reader *r, int field, uint32_t val, void *arg)
{
	json_t		*policy = arg, *p;
	uint32_t	 k, end;
	int		 some, b;

	if (field == 0) {
		if ((some = is_some(r, val)) <= 0)
			return some;
		if (bool_at(r, val, &b) == -1)
			return -1;
		json_object_set_new(policy, "allowImplicitInvocation", json_boolean(b));
		return 0;
	}
	if (entries(r, val, YEV_SEQ, &k, &end) == -1)
		return -1;
	for (; k < end; k = after(r->d, k)) {
		if ((p = product(r, k)) == NULL)
			return -1;
		json_array_append_new(json_object_get(policy, "products"), p);
	}
	return 0;
}

static const char *const policy_names[] = { "allow_implicit_invocation", "products", NULL };

struct meta {
	json_t	*deps, *policy;
};

static int
top_field(struct reader *r, int field, uint32_t val, void *arg)
{
	struct meta	*m = arg;
	json_t		*tools;
	int		 some;

	if ((some = is_some(r, val)) <= 0)
		return some;
	switch (field) {
	case 0:
		return fields(r, val, interface_names, interface_field, NULL);
	case 1:
		if ((tools = json_array()) == NULL ||
		    fields(r, val, dependencies_names, dependencies_field, tools) == -1) {
			json_decref(tools);
			return -1;
		}
		if (json_array_size(tools) > 0)
			m->deps = json_pack("{s:o}", "tools", tools);
		else
			json_decref(tools);
		return 0;
	default:
		if ((m->policy = json_pack("{s:n,s:[]}", "allowImplicitInvocation",
		    "products")) == NULL)
			return -1;
		return fields(r, val, policy_names, policy_field, m->policy);
	}
}

static const char *const top_names[] = { "interface", "dependencies", "policy", NULL };

int
fs_skill_meta_parse(const char *text, size_t len, json_t **deps, json_t **policy)
{
	struct ydoc	 d;
	struct reader	 r = { &d, 0 };
	struct meta	 m = { NULL, NULL };
	int		 err;

	*deps = json_null();
	*policy = json_null();
	if ((err = fs_yaml_load(text, len, &d)) != YAML_OK)
		return err == YAML_UNAVAILABLE ? -1 : 0;
	if (fields(&r, 0, top_names, top_field, &m) == 0) {
		if (m.deps != NULL)
			*deps = json_incref(m.deps);
		if (m.policy != NULL)
			*policy = json_incref(m.policy);
	}
	json_decref(m.deps);
	json_decref(m.policy);
	fs_yaml_free(&d);
	return 0;
}
