/* Decoding fs method params with serde's error texts. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "fs/fs_param.h"
#include "rpc/rpc.h"
#include "rpc/rpc_serde.h"
#include "uri.h"

static void
defer(struct fp_deferred *d, int rank, int code, const char *msg)
{
	if (d->code != 0 && d->rank <= rank)
		return;
	d->code = code;
	d->rank = rank;
	snprintf(d->msg, sizeof(d->msg), "%s", msg);
}

static int
get_path(json_t *v, char **out, int rank, struct fp_deferred *d, struct jx_err *e)
{
	struct jx_err	ue;
	enum uri_status	us;

	if (!json_is_string(v))
		return serde_type_error(e, v, "a string", 0);
	free(*out);
	if ((*out = uri_json_to_path(v, &ue, &us)) != NULL)
		return 0;
	/* the reference fails such a URI when the method uses it: -32600 */
	if (us == URI_NOT_LOCAL) {
		defer(d, rank + 100, RPC_INVALID_REQUEST, ue.msg);
		return 0;
	}
	snprintf(e->msg, sizeof(e->msg), "%s", ue.msg);
	return -1;
}

/* serde_json with exact numbers: only a non-negative integer is a u64. */
static int
get_u64(json_t *v, const char *expected, uint64_t *out, struct jx_err *e)
{
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = (uint64_t)json_integer_value(v);
		return 0;
	}
	if (json_is_number(v)) {
		snprintf(e->msg, sizeof(e->msg), "invalid number");
		return -1;
	}
	return serde_type_error(e, v, expected, 0);
}

static int
get_mode(json_t *v, int *out, struct jx_err *e)
{
	static const char *const modes[] = { "read", "replace", NULL };

	return serde_unit_variant(v, modes, out, e);
}

static int
get_walk(json_t *v, struct fs_walk_opts *w, struct jx_err *e)
{
	struct fp_field	f[] = {
		{ "maxDepth", FP_USIZE, FP_REQ, &w->max_depth },
		{ "maxDirectories", FP_USIZE, FP_REQ, &w->max_dirs },
		{ "maxEntries", FP_USIZE, FP_REQ, &w->max_entries },
		{ "followDirectorySymlinks", FP_BOOL, FP_REQ, &w->follow_symlinks },
		{ "pruneHiddenDirectories", FP_BOOL, FP_SEQ_DEFAULT | FP_PLAIN, &w->prune_hidden },
	};
	struct fp_deferred d = { 0 };

	memset(w, 0, sizeof(*w));
	return fp_parse(v, "WalkOptions", f, sizeof(f) / sizeof(f[0]), &d, e);
}

static int
get_field(const struct fp_field *f, size_t idx, json_t *v, struct fp_deferred *d,
    struct jx_err *e)
{
	struct jx_err	pe;
	int		code;

	if (json_is_null(v) && !(f->flags & (FP_REQ | FP_PLAIN)))
		return 0;
	switch (f->type) {
	case FP_PATH:
		return get_path(v, f->out, (int)idx, d, e);
	case FP_STR:
		if (!json_is_string(v))
			return serde_type_error(e, v, "a string", 0);
		if (jx_id_encode(v) == -1) {
			snprintf(e->msg, sizeof(e->msg), "out of memory");
			return -1;
		}
		*(const char **)f->out = json_string_value(v);
		return 0;
	case FP_JSTR:
		if (!json_is_string(v))
			return serde_type_error(e, v, "a string", 0);
		*(json_t **)f->out = v;
		return 0;
	case FP_BOOL:
		if (!json_is_boolean(v))
			return serde_type_error(e, v, "a boolean", 0);
		*(int *)f->out = json_is_true(v);
		return 0;
	case FP_U64:
		return get_u64(v, "u64", f->out, e);
	case FP_USIZE:
		return get_u64(v, "usize", f->out, e);
	case FP_DECODE:
		if (f->dec->decode(v, f->out, &pe, &code) == 0)
			return 0;
		if (code == RPC_INVALID_PARAMS) {
			*e = pe;
			return -1;
		}
		defer(d, (int)idx, code, pe.msg);	/* before any path of the op */
		return 0;
	case FP_WALK:
		if (!json_is_object(v) && !json_is_array(v))
			return serde_type_error(e, v, "struct WalkOptions", 0);
		return get_walk(v, f->out, e);
	case FP_MODE:
		return get_mode(v, f->out, e);
	case FP_ANY:
		return 0;
	}
	return 0;
}

static int
parse_seq(json_t *a, const char *sname, const struct fp_field *f, size_t nf,
    struct fp_deferred *d, struct jx_err *e)
{
	size_t	i, n = json_array_size(a);

	for (i = 0; i < nf; i++) {
		if (i >= n) {
			if (f[i].flags & FP_SEQ_DEFAULT)
				continue;
			snprintf(e->msg, sizeof(e->msg),
			    "invalid length %zu, expected struct %s with %zu element%s",
			    i, sname, nf, nf == 1 ? "" : "s");
			return -1;
		}
		if (get_field(&f[i], i, json_array_get(a, i), d, e) == -1)
			return -1;
	}
	if (n > nf) {
		snprintf(e->msg, sizeof(e->msg),
		    "invalid length %zu, expected fewer elements in array", n);
		return -1;
	}
	return 0;
}

int
fp_parse(json_t *params, const char *sname, const struct fp_field *f, size_t nf,
    struct fp_deferred *d, struct jx_err *e)
{
	const char	*key;
	json_t		*v;
	size_t		 i, klen;
	char		 exp[128];

	snprintf(exp, sizeof(exp), "struct %s", sname);
	if (params == NULL) {
		snprintf(e->msg, sizeof(e->msg), "invalid type: null, expected %s", exp);
		return -1;
	}
	if (json_is_array(params))
		return parse_seq(params, sname, f, nf, d, e);
	if (!json_is_object(params))
		return serde_type_error(e, params, exp, 0);
	/* serde visits the keys as they come, then reports what is missing */
	jx_fields_foreach(params, key, klen, v) {
		for (i = 0; i < nf; i++)
			if (strcmp(f[i].name, key) == 0)
				break;
		if (i < nf && get_field(&f[i], i, v, d, e) == -1)
			return -1;
	}
	for (i = 0; i < nf; i++)
		if ((f[i].flags & FP_REQ) && json_object_get(params, f[i].name) == NULL)
			return serde_missing(e, f[i].name);
	return 0;
}

void
fp_release(const struct fp_field *f, size_t nf)
{
	size_t	i;

	for (i = 0; i < nf; i++) {
		if (f[i].type == FP_PATH) {
			free(*(char **)f[i].out);
			*(char **)f[i].out = NULL;
		} else if (f[i].type == FP_DECODE)
			f[i].dec->release(f[i].out);
	}
}
