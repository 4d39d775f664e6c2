/*
 * Which fs_policy rules a process sandbox uses, and what kind each is: the
 * planning in the parent and the Landlock and mount mechanisms read the
 * same rules the same way.
 */
#include "config.h"

#include <string.h>

#include "sandbox/sandbox_int.h"

enum sbx_rule_kind
sbx_rule_kind(const struct fs_rule *r)
{
	const char	*base;
	size_t		 i;

	if (!r->implicit)
		return SBX_RULE_ENTRY;
	if (r->access == FS_ACCESS_WRITE)
		return SBX_RULE_DEVICE;
	base = strrchr(r->path, '/');
	for (i = 0; base != NULL && fs_protected_names[i] != NULL; i++)
		if (strcmp(base + 1, fs_protected_names[i]) == 0)
			return SBX_RULE_PROTECTED;
	return SBX_RULE_PLATFORM;
}

/* The reference's processes see the platform's directories only with `minimal`. */
int
sbx_rule_used(const struct fs_rule *r, int platform)
{
	if (r->is_glob || r->access == FS_ACCESS_DENY)
		return 1;
	/* fs_policy resolves /dev/stdin and friends through execd's own /proc */
	if (strncmp(r->path, "/proc/", 6) == 0)
		return 0;
	return sbx_rule_kind(r) != SBX_RULE_PLATFORM || platform;
}
