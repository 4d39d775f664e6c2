/* process/start's shellSnapshot: its decoding, when it applies, its key. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "proc/proc_snapshot.h"
#include "rpc/rpc_serde.h"
#include "snapshot/snapshot.h"

/* The reference reads these strings as a map's values: a number is just "number". */
static int
snap_str(json_t *o, const char *key, const char **out, size_t *len, struct jx_err *e)
{
	json_t	*v = json_object_get(o, key);

	if (json_is_number(v)) {
		snprintf(e->msg, sizeof(e->msg), "invalid type: number, expected a string");
		return -1;
	}
	return jx_str(o, key, JX_REQ, out, len, e);
}

static const char *const snap_fields[] = { "scopeId", "shell", NULL };
static const struct serde_struct snap_struct = { "ShellSnapshotRequest", snap_fields, 0 };
static const char *const shell_fields[] = { "name", "path", NULL };
static const struct serde_struct shell_struct = { "ShellInfo", shell_fields, 0 };

/*
 * o[key] as the map of its fields, its sequence form too; a new reference
 * in *out (NULL when absent or null), *n the sequence's length or -1.
 */
static int
snap_sub(json_t *o, const char *key, enum jx_need need, const struct serde_struct *ss,
    json_t **out, long *n, struct jx_err *e)
{
	json_t	*v;
	int	 rc;

	*out = NULL;
	*n = -1;
	v = json_object_get(o, key);
	if (json_is_array(v)) {
		if ((*out = serde_struct_params(v, ss, n)) == NULL) {
			snprintf(e->msg, sizeof(e->msg), "out of memory");
			return -1;
		}
		return 1;
	}
	if ((rc = jx_substruct(o, key, need, ss->name, &v, e)) <= 0)
		return rc;
	*out = json_incref(v);
	return 1;
}

static int	shell_parse(json_t *, struct snap_req *, struct jx_err *);

static int
shell_decode(json_t *shell, void *arg, struct jx_err *e)
{
	struct snap_req	*r = arg;
	size_t		 len;

	return snap_str(shell, "name", &r->name, &len, e) == -1 ||
	    snap_str(shell, "path", &r->path, &len, e) == -1 ? -1 : 0;
}

static int
snap_decode(json_t *snap, void *arg, struct jx_err *e)
{
	struct snap_req	*r = arg;

	return snap_str(snap, "scopeId", &r->scope, &r->scope_len, e) == -1 ||
	    shell_parse(snap, r, e) == -1 ? -1 : 0;
}

/* The strings stay valid: params still holds them. */
static int
shell_parse(json_t *snap, struct snap_req *r, struct jx_err *e)
{
	json_t	*shell;
	long	 n;
	int	 rc;

	if ((rc = snap_sub(snap, "shell", JX_REQ, &shell_struct, &shell, &n, e)) <= 0)
		return rc;
	rc = jx_in_order(shell, shell_decode, r, e);
	json_decref(shell);
	return serde_struct_seq_end(&shell_struct, n, rc, e);
}

int
snap_req_parse(json_t *params, struct snap_req *r, struct jx_err *e)
{
	json_t	*snap;
	long	 n;
	int	 rc;

	memset(r, 0, sizeof(*r));
	if ((rc = snap_sub(params, "shellSnapshot", JX_OPT, &snap_struct, &snap, &n, e)) <= 0)
		return rc;
	rc = jx_in_order(snap, snap_decode, r, e);
	json_decref(snap);
	if (serde_struct_seq_end(&snap_struct, n, rc, e) == -1)
		return -1;
	r->given = 1;
	return 0;
}

int
snap_req_applies(const struct snap_req *r, json_t *argv)
{
	const char	*a0, *a1;

	if (!r->given || json_array_size(argv) < 3)
		return 0;
	a0 = json_string_value(json_array_get(argv, 0));
	a1 = json_string_value(json_array_get(argv, 1));
	return strcmp(a0, r->path) == 0 && strcmp(a1, "-lc") == 0;
}

char *
snap_req_key(const struct snap_req *r, const char *cwd_uri, json_t *policy, json_t *sandbox)
{
	json_t	*k;
	char	*s;

	k = json_pack("[s#,s,O?,O?,s,s]", r->scope, r->scope_len, cwd_uri, policy, sandbox,
	    r->name, r->path);
	if (k == NULL)
		return NULL;
	s = json_dumps(k, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(k);
	return s;
}

char **
snap_req_argv(const struct snap_req *r, json_t *argv, const struct snapshot *snap)
{
	int		 capture = snap == NULL;
	const char	*cmd = json_string_value(json_array_get(argv, 2));
	char		*pre = NULL;
	size_t		 n = json_array_size(argv), i, len = 0;
	char		**av;

	if (!capture) {
		if ((pre = snapshot_restore_prefix(snap, r->name)) == NULL)
			return NULL;
		len = strlen(pre) + strlen(cmd) + 1;
	}
	if ((av = calloc(1, (n + 1) * sizeof(*av) + len)) == NULL) {
		free(pre);
		return NULL;
	}
	for (i = 0; i < n; i++)
		av[i] = (char *)json_string_value(json_array_get(argv, i));
	if (capture) {
		av[1] = "-lc";
		av[2] = (char *)snapshot_capture_script(r->name);
		av[3] = NULL;	/* its own arguments are the command's, not the capture's */
	} else {
		av[1] = (char *)snapshot_restore_flag(r->name);
		av[2] = (char *)(av + n + 1);
		snprintf(av[2], len, "%s%s", pre, cmd);
	}
	free(pre);
	return av;
}
