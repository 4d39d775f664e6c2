/*
 * Landlock: the allow-list of a restricted profile.  The ruleset is built
 * in the parent from fs_policy's rules (read rules give read, list and
 * execute beneath them, write rules every right this ABI handles) and only
 * enforced by the child, with one call.  What Landlock cannot say - a
 * read-only or denied path inside a granted one - is left to the mount
 * namespace (sandbox_mount.c).  From ABI 6 the child is also scoped: no
 * signals to processes outside its domain, and (unless the network is
 * enabled) no abstract AF_UNIX sockets outside it.  A profile without
 * filesystem restrictions still gets a domain (see below).
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/syscall.h>

#include <linux/landlock.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sandbox/sandbox_int.h"

/* The kernel's ABI is stable; older headers lack the later rights and the ruleset's tail. */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE		(1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV		(1ULL << 15)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET	(1ULL << 0)
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL			(1ULL << 1)
#endif

struct ll_ruleset_attr {
	uint64_t	handled_access_fs;
	uint64_t	handled_access_net;	/* ABI 4 */
	uint64_t	scoped;			/* ABI 6 */
};

#define LL_READ		(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | \
			 LANDLOCK_ACCESS_FS_READ_DIR)
/* the rights that apply to a file that is not a directory */
#define LL_FILE		(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | \
			 LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE | \
			 LANDLOCK_ACCESS_FS_IOCTL_DEV)

static long
ll_create(const struct ll_ruleset_attr *attr, size_t size, uint32_t flags)
{
	return syscall(SYS_landlock_create_ruleset, attr, size, flags);
}

int
sbx_landlock_probe(void)
{
	long	abi = ll_create(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

	return abi < 0 ? 0 : (int)abi;
}

static uint64_t
handled_fs(int abi)
{
	uint64_t	h = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;	/* ABI 1 */

	if (abi >= 2)
		h |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		h |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		h |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	return h;
}

static int
add_path(int rfd, const char *path, uint64_t rights, uint64_t handled, char *why,
    size_t whylen)
{
	struct landlock_path_beneath_attr	pb;
	struct stat				st;
	int					fd, e;

	/* a symlink (/dev/stdin) is granted through its target's own rule */
	if ((fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;	/* nothing there to grant */
		snprintf(why, whylen, "landlock: %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1) {
		e = errno;
		close(fd);
		snprintf(why, whylen, "landlock: %s: %s", path, strerror(e));
		return -1;
	}
	if (S_ISLNK(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) {
		close(fd);
		return 0;
	}
	pb.parent_fd = fd;
	pb.allowed_access = rights & handled & (S_ISDIR(st.st_mode) ? ~0ULL : LL_FILE);
	if (pb.allowed_access != 0 &&
	    syscall(SYS_landlock_add_rule, rfd, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) == -1) {
		e = errno;
		close(fd);
		snprintf(why, whylen, "landlock rule for %s: %s", path, strerror(e));
		return -1;
	}
	close(fd);
	return 0;
}

/*
 * Was rule i's path given the same access already?  The platform's
 * devices come twice, as resolved and as written, mostly the same path.
 */
static int
added_before(const struct fs_policy *pol, size_t i, int platform)
{
	const struct fs_rule	*r = fs_policy_rule(pol, i), *o;
	size_t			 j;

	for (j = 0; j < i; j++) {
		o = fs_policy_rule(pol, j);
		if (!o->is_glob && o->access == r->access && sbx_rule_used(o, platform) &&
		    strcmp(o->path, r->path) == 0)
			return 1;
	}
	return 0;
}

static int
access_rank(enum fs_access a)
{
	return a == FS_ACCESS_WRITE ? 2 : a == FS_ACCESS_READ ? 1 : 0;
}

/*
 * What the rule on / grants, if there is one: a domain's access to a file
 * is what the rules of all its directories above add up to, so a rule
 * beneath / granting no more is one open, fstat and add_rule for nothing
 * (with / readable, every read-only platform path).  Deny is not
 * Landlock's (the mount view masks it).
 */
static int
root_access(const struct fs_policy *pol, int platform)
{
	const struct fs_rule	*r;
	size_t			 i;
	int			 best = 0;

	for (i = 0; pol != NULL && (r = fs_policy_rule(pol, i)) != NULL; i++)
		if (!r->is_glob && r->access != FS_ACCESS_DENY && sbx_rule_used(r, platform) &&
		    strcmp(r->path, "/") == 0 && access_rank(r->access) > best)
			best = access_rank(r->access);
	return best;
}

int
sbx_landlock_ruleset(const struct fs_policy *pol, int platform, int abi, enum sbx_net net,
    uint64_t *handled, char *why, size_t whylen)
{
	struct ll_ruleset_attr		 attr;
	size_t				 size;
	const struct fs_rule		*r;
	size_t				 i;
	int				 rfd, root;

	memset(&attr, 0, sizeof(attr));
	if (pol != NULL)
		attr.handled_access_fs = handled_fs(abi);
	if (abi >= 6) {
		attr.scoped = LANDLOCK_SCOPE_SIGNAL;
		if (net != SBX_NET_ENABLED)
			attr.scoped |= LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET;
	}
	/*
	 * Without fs rules: a domain that restricts nothing on the filesystem,
	 * still worth having, as Landlock keeps a sandboxed process from
	 * ptrace-attaching (or opening /proc/PID/mem of) anything outside it.
	 */
	if (attr.handled_access_fs == 0)
		attr.handled_access_fs = LANDLOCK_ACCESS_FS_MAKE_BLOCK;
	*handled = pol != NULL ? attr.handled_access_fs : 0;
	/* as long as this ABI's structure: an older kernel rejects a longer one */
	size = abi >= 6 ? sizeof(attr) : abi >= 4 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
	if ((rfd = (int)ll_create(&attr, size, 0)) == -1) {
		snprintf(why, whylen, "landlock_create_ruleset: %s", strerror(errno));
		return -1;
	}
	if (fcntl(rfd, F_SETFD, FD_CLOEXEC) == -1)
		goto fail_errno;
	if (pol == NULL && add_path(rfd, "/", LANDLOCK_ACCESS_FS_MAKE_BLOCK,
	    attr.handled_access_fs, why, whylen) == -1) {
		close(rfd);
		return -1;
	}
	root = root_access(pol, platform);
	for (i = 0; pol != NULL && (r = fs_policy_rule(pol, i)) != NULL; i++) {
		if (r->is_glob || r->access == FS_ACCESS_DENY || !sbx_rule_used(r, platform) ||
		    added_before(pol, i, platform) ||
		    (strcmp(r->path, "/") != 0 && access_rank(r->access) <= root))
			continue;
		if (add_path(rfd, r->path, r->access == FS_ACCESS_WRITE ? ~0ULL : LL_READ,
		    attr.handled_access_fs, why, whylen) == -1) {
			close(rfd);
			return -1;
		}
	}
	return rfd;
fail_errno:
	snprintf(why, whylen, "landlock ruleset: %s", strerror(errno));
	close(rfd);
	return -1;
}

/*
 * In the child, once the view is built: the fresh /dev's own pts and shm,
 * and the fresh /proc, are not the inodes the parent's rules name, so they
 * get rules here (pts read and write, devices' ioctls; shm everything;
 * /proc read when the policy grants it).  Nothing allocated.
 */
int
sbx_landlock_view(int ruleset_fd, uint64_t handled, int proc)
{
	static const struct { const char *path; uint64_t rights; } dev[] = {
		{ "/dev/pts", LL_READ | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_IOCTL_DEV },
		{ "/dev/shm", ~0ULL },
		{ "/proc", LL_READ },
	};
	struct landlock_path_beneath_attr	pb;
	size_t					i;
	int					e;

	if (handled == 0)
		return 0;	/* the ruleset leaves the filesystem alone */
	for (i = 0; i < sizeof(dev) / sizeof(dev[0]) - (proc ? 0 : 1); i++) {
		if ((pb.parent_fd = open(dev[i].path, O_PATH | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC)) == -1)
			return errno;
		pb.allowed_access = dev[i].rights & handled;
		e = syscall(SYS_landlock_add_rule, ruleset_fd, LANDLOCK_RULE_PATH_BENEATH, &pb, 0)
		    == -1 ? errno : 0;
		close(pb.parent_fd);
		if (e != 0)
			return e;
	}
	return 0;
}

int
sbx_landlock_apply(int ruleset_fd)
{
	if (syscall(SYS_landlock_restrict_self, ruleset_fd, 0) == -1)
		return errno;
	return 0;
}
