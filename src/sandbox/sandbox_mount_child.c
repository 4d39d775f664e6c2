/*
 * The mount view, applied by the child in its own mount namespace from
 * the operations sandbox_mount.c planned: no allocation, every failure an
 * errno the child reports.
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

static int
setattr(const char *path, unsigned flags, uint64_t set, uint64_t clr)
{
	struct mount_attr	attr = { .attr_set = set, .attr_clr = clr };

	return mount_setattr(AT_FDCWD, path, flags, &attr, sizeof(attr));
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
mask_file(int *src, const char *path)
{
	int	tree, r;

	if (*src == -1 && (*src = mask_source()) == -1)
		return -1;
	if ((tree = open_tree(*src, "masked", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)) == -1)
		return -1;
	r = move_mount(tree, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH);
	close(tree);
	return r;
}

/*
 * A protected name, bound read-only on itself: on the very inode checked
 * to be no symlink, so that a link swapped in since planning is never
 * followed.
 */
static int
protect(const char *path)
{
	struct mount_attr	ro = { .attr_set = MOUNT_ATTR_RDONLY };
	struct stat		st;
	int			fd, tree = -1, r = -1;

	if ((fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return -1;
	if (fstat(fd, &st) == -1)
		goto out;
	if (S_ISLNK(st.st_mode)) {
		errno = ELOOP;
		goto out;
	}
	if ((tree = open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH |
	    AT_RECURSIVE)) == -1 ||
	    mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &ro, sizeof(ro)) == -1)
		goto out;
	r = move_mount(tree, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
out:
	if (tree != -1)
		close(tree);
	close(fd);
	return r;
}

static int
apply_one(const struct sbx_mount *m, int *mask_src)
{
	int	e;

	switch (m->op) {
	case SBX_MNT_RO_ALL:
		/* and no device node or setuid bit counts anywhere: /dev is remade */
		return setattr("/", AT_RECURSIVE, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
		    MOUNT_ATTR_NODEV, 0);
	case SBX_MNT_RW:
		/* not recursive: a read-only mount below stays read-only */
		if (mount(m->path, m->path, NULL, MS_BIND | MS_REC, NULL) == -1)
			return -1;
		return setattr(m->path, 0, 0, MOUNT_ATTR_RDONLY);
	case SBX_MNT_PIN:
		return mount(m->path, m->path, NULL, MS_BIND | MS_REC, NULL);
	case SBX_MNT_RO:
		if (mount(m->path, m->path, NULL, MS_BIND | MS_REC, NULL) == -1)
			return -1;
		return setattr(m->path, AT_RECURSIVE, MOUNT_ATTR_RDONLY, 0);
	case SBX_MNT_MASK_DIR:
		return mount("tmpfs", m->path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV |
		    MS_NOEXEC, "mode=000,size=4k");
	case SBX_MNT_MASK_FILE:
		return mask_file(mask_src, m->path);
	case SBX_MNT_PROTECT:
		return protect(m->path);
	case SBX_MNT_DEV:
		if ((e = sbx_dev_build()) != 0) {
			errno = e;
			return -1;
		}
		return 0;
	}
	errno = EINVAL;
	return -1;
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
