/*
 * What the discovery files share.  They read files as fs/ does, through
 * its pinned, policy-checked paths (fs/fs_access.h); fs/ knows nothing of them.
 */
#ifndef EXECD_DISCOVERY_INT_H
#define EXECD_DISCOVERY_INT_H

#include <stddef.h>

#include <jansson.h>

struct fs_policy;
struct rpc_req;

void	fs_m_discover_v1(struct rpc_req *, json_t *);	/* discover.c */
void	fs_m_discover_v2(struct rpc_req *, json_t *);	/* discover_v2.c */
/* The cached version of a plugin to list, of the names in versions, or NULL (plugin_version.c). */
const char *fs_pick_version(json_t *versions);
/* A marketplace, plugin or version name the reference takes from the cache. */
int	fs_cache_name_ok(const char *name);
/*
 * The SKILL.md files below dir (symlinks followed, each file once), sorted
 * by path; directories pol denies are skipped, with a warning if not ENOENT.
 */
json_t	*fs_discover_files(const char *dir, const struct fs_policy *pol, json_t *warnings);
/* "failed to <what> <uri>: <errno text>" appended to warnings. */
void	 fs_discover_warn(json_t *warnings, const char *what, const char *path, int err);
/* {"path": URI, "contents": text}, or null when it cannot be read as text. */
json_t	*fs_discover_file_entry(const struct fs_policy *pol, const char *path);
/* path opened for reading, pinned and checked under pol (if any); -1 with errno. */
int	 fs_discover_open(const struct fs_policy *pol, const char *path);
/* while on (discoverV2), fs_discover_open refuses what sandbox_wrote() says */
void	 fs_discover_check_written(int on);
/*
 * A skill's name, description and shortDescription from its SKILL.md
 * text, as {"name","description","shortDescription"}; NULL when the
 * reference would call it invalid.  dirname names a skill without one.
 */
json_t	*fs_skill_parse(const char *text, size_t len, const char *dirname);
/*
 * The dependencies and policy of a skill's agents/openai.yaml text (valid
 * UTF-8), each null when absent or when the reference finds the file
 * worthless (skill_meta.c); -1 (both null) when libyaml cannot be loaded.
 */
int	 fs_skill_meta_parse(const char *text, size_t len, json_t **deps, json_t **policy);

#endif
