/* What environmentConfig/read's files share (envconfig.c, envconfig_layers.c). */
#ifndef EXECD_ENVCONFIG_INT_H
#define EXECD_ENVCONFIG_INT_H

#include <stddef.h>

#include "toml/toml.h"

#define EC_ERRLEN	8192

/* One configuration or requirements file, as read. */
struct ec_layer {
	char			*source;	/* "user (/root/.codex/config.toml)" */
	char			*base_dir;	/* a path */
	struct toml_node	*doc;
	int			 system;	/* below where cloud layers go */
};

struct ec_layers {
	struct ec_layer	*v;
	size_t		 n;
};

/*
 * The layers for cwd (a path, need not exist) and the Codex home
 * directory, lowest precedence first.  0, or -1 with err set to the
 * reference's words for the first file that could not be read or parsed.
 */
int	ec_load(const char *cwd, const char *codex_home, struct ec_layers *config,
	    struct ec_layers *requirements, char *err, size_t errlen);
void	ec_layers_free(struct ec_layers *);

/*
 * The [projects] of the system's and the user's files (either NULL) merged
 * and read typed, as the reference reads them (envconfig_typed.c); and
 * requirements.toml's typed fields.  0, or -1 with err in serde's words.
 */
int	ec_projects_ok(const struct toml_node *system, const struct toml_node *user,
	    char *err, size_t errlen);
int	ec_requirements_ok(const struct toml_node *doc, char *err, size_t errlen);

#endif
