/*
 * A sandbox's /dev: a fresh tmpfs instead of the host's, holding only
 * what a command needs - null, zero, full, random, urandom and tty bound
 * from the host, a devpts instance of its own (no other session's
 * terminals), a private /dev/shm, and the usual symlinks - then made
 * read-only but for pts and shm.  A command on a terminal (a PTY of
 * execd's) finds it as /dev/console, as under the reference's
 * bubblewrap: its own /dev/pts/N is not in the new devpts, and ttyname()
 * would find nothing.  Built by the child in its mount
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

/* The terminal on the standard descriptors, if any: a clone of its node. */
static int
terminal_tree(void)
{
	char	path[64], link[32];
	ssize_t	n;
	int	fd;

	for (fd = 0; fd < 3; fd++) {
		if (!isatty(fd))
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		if ((n = readlink(link, path, sizeof(path) - 1)) <= 0)
			return -1;
		path[n] = '\0';
		if (strncmp(path, "/dev/pts/", 9) != 0)
			return -1;
		return open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	}
	return -1;
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
	struct mount_attr	dev = { .attr_clr = MOUNT_ATTR_NODEV };
	char			path[32];
	int			fd;

	/* the base view is nodev: these are the device nodes that count */
	if (mount_setattr(tree, "", AT_EMPTY_PATH, &dev, sizeof(dev)) == -1)
		return -1;
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
	int			trees[NNODES], term, e = 0;
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
	term = terminal_tree();
	if (mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k") == -1)
		goto fail;
	if (term != -1 && place_node(term, "console") == -1)
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
	close_trees(&term, 1);
	return 0;
fail:
	e = errno;
	close_trees(trees, NNODES);
	close_trees(&term, 1);
	return e;
}
