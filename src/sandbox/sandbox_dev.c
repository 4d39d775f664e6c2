/*
 * A sandbox's /dev: a fresh tmpfs instead of the host's, holding only
 * what a command needs - null, zero, full, random, urandom and tty bound
 * from the host, a devpts instance of its own (no other session's
 * terminals), a private /dev/shm, and the usual symlinks - then made
 * read-only but for pts and shm.  Built by the child in its mount
 * namespace (sandbox_mount.c orders it among the other mounts); nothing
 * here allocates.
 */
#include "config.h"

#include <sys/mount.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sandbox/sandbox_int.h"

static const char *const dev_nodes[] = { "null", "zero", "full", "random", "urandom", "tty" };
#define NNODES	(sizeof(dev_nodes) / sizeof(dev_nodes[0]))

static const struct { const char *name, *target; } dev_links[] = {
	{ "fd", "/proc/self/fd" }, { "stdin", "/proc/self/fd/0" },
	{ "stdout", "/proc/self/fd/1" }, { "stderr", "/proc/self/fd/2" },
	{ "core", "/proc/kcore" }, { "ptmx", "pts/ptmx" },
};

int
sbx_dev_has(const char *path)
{
	size_t	i;

	if (strncmp(path, "/dev/", 5) != 0)
		return strcmp(path, "/dev") == 0;
	path += 5;
	for (i = 0; i < NNODES; i++)
		if (strcmp(path, dev_nodes[i]) == 0)
			return 1;
	return strcmp(path, "shm") == 0 || strcmp(path, "pts") == 0;
}

static void
close_trees(int *trees, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (trees[i] != -1)
			close(trees[i]);
}

/* A host node, bound on an empty file made for it in the new /dev. */
static int
place_node(int tree, const char *name)
{
	char	path[32];
	int	fd;

	snprintf(path, sizeof(path), "/dev/%s", name);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666)) == -1)
		return -1;
	close(fd);
	return move_mount(tree, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH);
}

static int
private_dirs(void)
{
	if (mkdir("/dev/pts", 0755) == -1 ||
	    mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
	    "newinstance,ptmxmode=0666,mode=620") == -1)
		return -1;
	if (mkdir("/dev/shm", 0755) == -1 ||
	    mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") == -1)
		return -1;
	return 0;
}

int
sbx_dev_build(void)
{
	struct mount_attr	ro = { .attr_set = MOUNT_ATTR_RDONLY };
	int			trees[NNODES], e = 0;
	size_t			i;
	char			path[32];

	/* the host's nodes first: the new /dev covers them */
	for (i = 0; i < NNODES; i++) {
		snprintf(path, sizeof(path), "/dev/%s", dev_nodes[i]);
		trees[i] = open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		if (trees[i] == -1 && errno != ENOENT) {
			e = errno;
			close_trees(trees, i);
			return e;
		}
	}
	if (mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k") == -1)
		goto fail;
	for (i = 0; i < NNODES; i++)
		if (trees[i] != -1 && place_node(trees[i], dev_nodes[i]) == -1)
			goto fail;
	if (private_dirs() == -1)
		goto fail;
	for (i = 0; i < sizeof(dev_links) / sizeof(dev_links[0]); i++) {
		snprintf(path, sizeof(path), "/dev/%s", dev_links[i].name);
		if (symlink(dev_links[i].target, path) == -1)
			goto fail;
	}
	/* the tmpfs itself read-only; pts and shm, mounts of their own, stay writable */
	if (mount_setattr(AT_FDCWD, "/dev", 0, &ro, sizeof(ro)) == -1)
		goto fail;
	close_trees(trees, NNODES);
	return 0;
fail:
	e = errno;
	close_trees(trees, NNODES);
	return e;
}
