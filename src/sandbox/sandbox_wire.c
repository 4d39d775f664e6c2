/*
 * A plan crosses to the spawn helper (spawner.c), which applies it in the
 * child: what the child needs of it, and its two descriptors.  The seccomp
 * program is not sent: the helper builds its own for the network mode.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fcntl.h>

#include "log.h"
#include "sandbox/sandbox_int.h"
#include "util/wire.h"

void
sandbox_plan_put(const struct sandbox_plan *plan, struct wire_out *w)
{
	size_t	i;

	wire_u32(w, (uint32_t)plan->confine);
	wire_u32(w, (uint32_t)plan->net);
	wire_u32(w, (uint32_t)plan->namespaces);
	wire_u32(w, (uint32_t)plan->new_userns);
	wire_u32(w, (uint32_t)plan->new_netns);
	wire_u64(w, plan->ll_handled);
	wire_u32(w, (uint32_t)plan->ll_proc);
	wire_u32(w, (uint32_t)plan->cap_last);
	wire_fd(w, plan->ruleset_fd);
	wire_fd(w, plan->route_sv[1]);
	wire_fd(w, plan->ready[0]);
	wire_str(w, plan->uid_map);
	wire_str(w, plan->gid_map);
	wire_str(w, plan->cwd);
	wire_str(w, plan->mechanism);
	wire_str(w, plan->fatal);
	wire_u32(w, (uint32_t)plan->nmounts);
	for (i = 0; i < plan->nmounts; i++) {
		wire_u32(w, plan->mounts[i].op);
		wire_str(w, plan->mounts[i].path);
		wire_u64(w, plan->mounts[i].dev);
		wire_u64(w, plan->mounts[i].ino);
	}
	wire_u32(w, (uint32_t)plan->nroutes);
	for (i = 0; i < plan->nroutes; i++)
		wire_bytes(w, &plan->routes[i].addr, plan->routes[i].len);
	wire_u32(w, (uint32_t)plan->transparent);
}

/* The plan keeps its own copies: the message's descriptors are closed with it. */
static int
own_fd(int fd)
{
	return fd == -1 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

static int
copy_str(char *dst, size_t len, const char *s)
{
	return s == NULL || strlen(s) >= len ? -1 : (int)strlen(strcpy(dst, s));
}

static int
get_mounts(struct sandbox_plan *plan, struct wire_in *r)
{
	uint32_t	 n = wire_get_u32(r), i;
	const char	*path;

	if (r->bad || n > 100000 || (n > 0 && (plan->mounts = calloc(n, sizeof(*plan->mounts))) ==
	    NULL))
		return -1;
	for (i = 0; i < n; i++) {
		plan->mounts[i].op = (enum sbx_mount_op)wire_get_u32(r);
		if ((path = wire_get_str(r)) == NULL || plan->mounts[i].op > SBX_MNT_LAST ||
		    (plan->mounts[i].path = strdup(path)) == NULL)
			return -1;
		plan->nmounts++;	/* its path is freed with the plan from here on */
		plan->mounts[i].dev = wire_get_u64(r);
		plan->mounts[i].ino = wire_get_u64(r);
		if (r->bad)
			return -1;
	}
	return 0;
}

static int
get_routes(struct sandbox_plan *plan, struct wire_in *r)
{
	uint32_t	 n = wire_get_u32(r), i;
	const void	*p;
	size_t		 len;

	if (r->bad || n > SBX_MAX_ROUTES)
		return -1;
	for (i = 0; i < n; i++) {
		if ((p = wire_get_bytes(r, &len)) == NULL ||
		    len > sizeof(plan->routes[i].addr))
			return -1;
		memcpy(&plan->routes[i].addr, p, len);
		plan->routes[i].len = (socklen_t)len;
		plan->nroutes++;
	}
	return 0;
}

struct sandbox_plan *
sandbox_plan_get(struct wire_in *r)
{
	struct sandbox_plan	*plan;
	const char		*cwd, *fatal;
	char			 why[256];

	if ((plan = sbx_plan_new()) == NULL)
		return NULL;
	plan->confine = wire_get_u32(r) != 0;
	plan->net = (enum sbx_net)wire_get_u32(r);
	plan->namespaces = wire_get_u32(r) != 0;
	plan->new_userns = wire_get_u32(r) != 0;
	plan->new_netns = wire_get_u32(r) != 0;
	plan->ll_handled = wire_get_u64(r);
	plan->ll_proc = wire_get_u32(r) != 0;
	plan->cap_last = (int)wire_get_u32(r);
	plan->ruleset_fd = own_fd(wire_get_fd(r));
	plan->route_sv[1] = own_fd(wire_get_fd(r));
	plan->ready[0] = own_fd(wire_get_fd(r));
	if (copy_str(plan->uid_map, sizeof(plan->uid_map), wire_get_str(r)) == -1 ||
	    copy_str(plan->gid_map, sizeof(plan->gid_map), wire_get_str(r)) == -1)
		goto bad;
	if ((cwd = wire_get_str(r)) != NULL && (plan->cwd = strdup(cwd)) == NULL)
		goto bad;
	if (copy_str(plan->mechanism, sizeof(plan->mechanism), wire_get_str(r)) == -1)
		goto bad;
	if ((fatal = wire_get_str(r)) != NULL && (plan->fatal = strdup(fatal)) == NULL)
		goto bad;
	if (
	    get_mounts(plan, r) == -1 || get_routes(plan, r) == -1 ||
	    (plan->transparent = wire_get_u32(r) != 0, r->bad) ||
	    plan->net > SBX_NET_MANAGED || plan->cap_last < 0 || plan->cap_last > 63)
		goto bad;
	if (plan->confine && (plan->filter = sbx_filter(plan->net, why, sizeof(why))) == NULL)
		goto bad;
	if (plan->transparent && (!plan->confine || plan->net != SBX_NET_MANAGED))
		goto bad;
	if (plan->transparent)
		plan->filter = sbx_filter_transparent();
	return plan;
bad:
	log_warnx("spawn helper: a malformed sandbox plan");
	r->bad = 1;
	sandbox_plan_free(plan);
	return NULL;
}
