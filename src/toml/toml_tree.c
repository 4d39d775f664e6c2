/*
 * The TOML tree: tables keep their keys in document order, as the
 * reference's reader does, so a projection prints them in that order.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "toml/toml.h"

void
toml_free(struct toml_node *n)
{
	size_t	i;

	if (n == NULL)
		return;
	for (i = 0; i < n->n; i++) {
		toml_free(n->kid[i]);
		if (n->key != NULL)
			free(n->key[i].s);
	}
	free(n->kid);
	free(n->key);
	free(n->slot);
	free(n->str);
	free(n);
}

struct toml_node *
toml_table_new(void)
{
	struct toml_node	*t;

	if ((t = calloc(1, sizeof(*t))) != NULL)
		t->kind = TOML_TABLE;
	return t;
}

#define HASH_FROM	16	/* keys from which a table is hashed */

/* FNV-1a */
static size_t
hash(const char *s, size_t len)
{
	size_t	h = 14695981039346656037ULL & SIZE_MAX;

	while (len-- > 0)
		h = (h ^ (unsigned char)*s++) * (1099511628211ULL & SIZE_MAX);
	return h;
}

/* The slot of key in t's index: where it is or where it would go. */
static size_t *
slot_of(const struct toml_node *t, const char *key, size_t len)
{
	size_t	i = hash(key, len) & (t->nslot - 1), k;

	for (;; i = (i + 1) & (t->nslot - 1)) {
		if ((k = t->slot[i]) == 0 || (t->key[k - 1].len == len &&
		    memcmp(t->key[k - 1].s, key, len) == 0))
			return &t->slot[i];
	}
}

int
toml_table_reindex(struct toml_node *t)
{
	size_t	i, n;

	free(t->slot);
	t->slot = NULL;
	t->nslot = 0;
	if (t->n < HASH_FROM)
		return 0;
	for (n = 64; n < t->n * 2; n *= 2)
		;
	if ((t->slot = calloc(n, sizeof(*t->slot))) == NULL)
		return -1;
	t->nslot = n;
	/* a later key of the same name wins, as the linear lookup has it */
	for (i = 0; i < t->n; i++)
		*slot_of(t, t->key[i].s, t->key[i].len) = i + 1;
	return 0;
}

/* Room for one more kid (and key, for a table); 0 or -1. */
static int
grow(struct toml_node *n)
{
	struct toml_node	**kid;
	struct toml_key		 *key;
	size_t			  cap;

	if (n->n < n->cap)
		return 0;
	cap = n->cap != 0 ? n->cap * 2 : 4;
	if ((kid = reallocarray(n->kid, cap, sizeof(*kid))) == NULL)
		return -1;
	n->kid = kid;
	if (n->kind == TOML_TABLE) {
		if ((key = reallocarray(n->key, cap, sizeof(*key))) == NULL)
			return -1;
		n->key = key;
	}
	n->cap = cap;
	return 0;
}

int
toml_table_add(struct toml_node *t, const char *key, size_t len, struct toml_node *kid)
{
	char	*copy;

	if (kid == NULL || grow(t) == -1 || (copy = malloc(len + 1)) == NULL) {
		toml_free(kid);
		return -1;
	}
	memcpy(copy, key, len);
	copy[len] = '\0';
	t->key[t->n].s = copy;
	t->key[t->n].len = len;
	t->kid[t->n++] = kid;
	if (t->n >= HASH_FROM && t->n * 2 > t->nslot)
		return toml_table_reindex(t);
	if (t->slot != NULL)
		*slot_of(t, copy, len) = t->n;
	return 0;
}

/* Append kid to an array; takes kid.  0, or -1 (kid freed). */
int
toml_array_add(struct toml_node *a, struct toml_node *kid)
{
	if (kid == NULL || grow(a) == -1) {
		toml_free(kid);
		return -1;
	}
	a->kid[a->n++] = kid;
	return 0;
}

struct toml_node *
toml_table_get(const struct toml_node *t, const char *key, size_t len)
{
	size_t	i;

	if (t == NULL || t->kind != TOML_TABLE)
		return NULL;
	if (t->slot != NULL)
		return (i = *slot_of(t, key, len)) != 0 ? t->kid[i - 1] : NULL;
	for (i = t->n; i-- > 0; )
		if (t->key[i].len == len && memcmp(t->key[i].s, key, len) == 0)
			return t->kid[i];
	return NULL;
}

struct toml_node *
toml_clone(const struct toml_node *n)
{
	struct toml_node	*c;
	size_t			 i;
	int			 rc;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	*c = *n;
	c->kid = NULL;
	c->key = NULL;
	c->n = c->cap = c->nslot = 0;
	c->slot = NULL;
	c->str = NULL;
	if (n->str != NULL) {
		if ((c->str = malloc(n->len + 1)) == NULL) {
			free(c);
			return NULL;
		}
		memcpy(c->str, n->str, n->len + 1);
	}
	for (i = 0; i < n->n; i++) {
		if (n->kind == TOML_TABLE)
			rc = toml_table_add(c, n->key[i].s, n->key[i].len, toml_clone(n->kid[i]));
		else
			rc = toml_array_add(c, toml_clone(n->kid[i]));
		if (rc == -1) {
			toml_free(c);
			return NULL;
		}
	}
	return c;
}
