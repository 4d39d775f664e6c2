/*
 * The mount view, applied by the child in its own mount namespace from
 * the operations sandbox_mount.c planned: no allocation, every failure an
 * errno the child reports.
 *
 * Each place is opened once, with no symlink followed anywhere on its
 * path, checked to be the inode planning found there, and every mount is
 * made on that descriptor, never by name again: a command of another
 * sandbox sharing a writable root may swap a directory for a link (or for
 * another directory) between the planning and these mounts, and a mount
 * by name would follow it out of the root.
 */
#include "config.h"

#include <sys/mount.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox/sandbox.h"
#include "sandbox/sandbox_int.h"

/* The place m names, as planning found it: a descriptor, or -1 with errno. */
static int
place(const struct sbx_mount *m)
{
	struct stat	st;
	int		fd;

	if ((fd = sbx_open_real(m->path, O_PATH)) == -1)
		return -1;
	if (fstat(fd, &st) == -1)
		goto fail;
	/* O_PATH | O_NOFOLLOW gives a last name that is a link itself */
	if (S_ISLNK(st.st_mode)) {
		errno = ELOOP;
		goto fail;
	}
	if (m->ino != 0 && ((uint64_t)st.st_dev != m->dev || (uint64_t)st.st_ino != m->ino)) {
		errno = ESTALE;	/* something else is there now */
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

/* mnt (a detached mount) moved onto the place fd: 0 or -1. */
static int
attach(int mnt, int fd)
{
	return move_mount(mnt, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
}

/* The tree at fd bound on itself, its top (or, recursive, every) mount set so. */
static int
bind_self(int fd, unsigned attr_flags, uint64_t set, uint64_t clr)
{
	struct mount_attr	attr = { .attr_set = set, .attr_clr = clr };
	int			tree, r = -1;

	if ((tree = open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH |
	    AT_RECURSIVE)) == -1)
		return -1;
	if ((set == 0 && clr == 0) ||
	    mount_setattr(tree, "", AT_EMPTY_PATH | attr_flags, &attr, sizeof(attr)) == 0)
		r = attach(tree, fd);
	close(tree);
	return r;
}

/* An empty read-only tmpfs, mode 000, on the directory at fd. */
static int
mask_dir(int fd)
{
	int	fs, mnt, r;

	if ((fs = fsopen("tmpfs", FSOPEN_CLOEXEC)) == -1)
		return -1;
	if (fsconfig(fs, FSCONFIG_SET_STRING, "mode", "000", 0) == -1 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "size", "4k", 0) == -1 ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == -1 ||
	    (mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
	    MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC)) == -1) {
		close(fs);
		return -1;
	}
	close(fs);
	r = attach(mnt, fd);
	close(mnt);
	return r;
}

/* A detached tmpfs holding one empty, mode 000 file, read-only. */
static int
mask_source(void)
{
	int	fs, mnt, fd;

	if ((fs = fsopen("tmpfs", FSOPEN_CLOEXEC)) == -1)
		return -1;
	if (fsconfig(fs, FSCONFIG_SET_STRING, "size", "4k", 0) == -1 ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == -1 ||
	    (mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
	    MOUNT_ATTR_NOEXEC)) == -1) {
		close(fs);
		return -1;
	}
	close(fs);
	if ((fd = openat(mnt, "masked", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0)) == -1) {
		close(mnt);
		return -1;
	}
	close(fd);
	{
		struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY };
		if (mount_setattr(mnt, "", AT_EMPTY_PATH, &attr, sizeof(attr)) == -1) {
			close(mnt);
			return -1;
		}
	}
	return mnt;
}

static int
mask_file(int *src, int fd)
{
	int	tree, r;

	if (*src == -1 && (*src = mask_source()) == -1)
		return -1;
	if ((tree = open_tree(*src, "masked", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)) == -1)
		return -1;
	r = attach(tree, fd);
	close(tree);
	return r;
}

static int
apply_at(const struct sbx_mount *m, int fd, int *mask_src)
{
	switch (m->op) {
	case SBX_MNT_RW:
		/* not recursive: a read-only mount below stays read-only */
		return bind_self(fd, 0, 0, MOUNT_ATTR_RDONLY);
	case SBX_MNT_PIN:
		return bind_self(fd, 0, 0, 0);
	case SBX_MNT_RO:
	case SBX_MNT_PROTECT:
		/* a protected name: its placeholder (no inode to check) bound read-only */
		return bind_self(fd, AT_RECURSIVE, MOUNT_ATTR_RDONLY, 0);
	case SBX_MNT_MASK_DIR:
		return mask_dir(fd);
	case SBX_MNT_MASK_FILE:
		return mask_file(mask_src, fd);
	default:
		errno = EINVAL;
		return -1;
	}
}

static int
apply_one(const struct sbx_mount *m, int *mask_src)
{
	struct mount_attr	all = { .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
	    MOUNT_ATTR_NODEV };
	int			fd, r, e;

	switch (m->op) {
	case SBX_MNT_RO_ALL:
		/* and no device node or setuid bit counts anywhere: /dev is remade */
		return mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, &all, sizeof(all));
	case SBX_MNT_DEV:
		if ((e = sbx_dev_build()) != 0) {
			errno = e;
			return -1;
		}
		return 0;
	default:
		if ((fd = place(m)) == -1)
			return -1;
		r = apply_at(m, fd, mask_src);
		e = errno;
		close(fd);
		errno = e;
		return r;
	}
}

int
sbx_mount_apply(const struct sandbox_plan *plan)
{
	size_t	i;
	int	mask_src = -1, e = 0, waited = 0;

	/* nothing done here may propagate back to the host's mounts */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1)
		return errno;
	for (i = 0; i < plan->nmounts && e == 0; i++) {
		/* the placeholders are execd's to make, meanwhile */
		if (plan->mounts[i].op == SBX_MNT_PROTECT && !waited++ &&
		    (e = sbx_guard_wait(plan)) != 0)
			break;
		if (apply_one(&plan->mounts[i], &mask_src) == -1)
			e = errno;
	}
	if (mask_src != -1)
		close(mask_src);
	/* the old working directory may lie under a mount made since */
	if (e == 0 && plan->cwd != NULL && chdir(plan->cwd) == -1)
		e = errno;
	return e;
}
