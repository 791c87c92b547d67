/*
 * tenant-datasets.c: DATASETS_DIRECTORIES, readable by every job and
 * writable by none (docs/tenants.md).  A confined job's jail reads them
 * (a Landlock rule each, tenant-publish.c).  A job that is not confined
 * has no jail, and Landlock cannot take writes out of one directory while
 * leaving its parents writable; so its keeper gives it a mount namespace
 * of its own, before the fork, with each dataset bound over itself
 * read-only (recursively, nosuid, nodev).  As root that namespace alone;
 * otherwise inside a user namespace that maps the keeper's own UID and
 * GID, or the one its tree's overlay made already.
 */

#include <sys/mount.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

/*
 * DATASETS_DIRECTORIES' absolute entries (the caller frees them with
 * strv_free), or NULL if there are none.
 */
char **
tenant_datasets(void)
{
	const char	*v = config_get("DATASETS_DIRECTORIES");
	char		*copy, *dir, *next, **dirs = NULL;

	copy = xstrdup(v != NULL ? v : "");
	for (dir = copy; dir != NULL && *dir != '\0'; dir = next) {
		if ((next = strchr(dir, ':')) != NULL)
			*next++ = '\0';
		if (*dir != '/')
			continue;
		if (dirs == NULL)
			dirs = xcalloc(1, sizeof *dirs);
		strv_add(&dirs, dir);
	}
	free(copy);
	return (dirs);
}

/* A mount namespace of its own (and a user namespace, unless root). */
static int
tds_unshare(const char **what)
{
	char	 uid[32], gid[32];

	snprintf(uid, sizeof uid, "%u %u 1", (u_int)geteuid(),
	    (u_int)geteuid());
	snprintf(gid, sizeof gid, "%u %u 1", (u_int)getegid(),
	    (u_int)getegid());
	*what = "unshare";
	if (geteuid() == 0)
		return (unshare(CLONE_NEWNS));
	if (unshare(CLONE_NEWUSER|CLONE_NEWNS) != 0)
		return (-1);
	*what = "the user namespace's maps";
	if (write_proc("/proc/self/setgroups", "deny") != 0 ||
	    write_proc("/proc/self/uid_map", uid) != 0 ||
	    write_proc("/proc/self/gid_map", gid) != 0)
		return (-1);
	return (0);
}

/* dir's tree bound over itself, read-only; a missing dir is skipped. */
static int
tds_bind(const char *dir, const char **what)
{
	struct mount_attr	 attr;
	int			 fd;

	memset(&attr, 0, sizeof attr);
	attr.attr_set = MOUNT_ATTR_RDONLY|MOUNT_ATTR_NOSUID|MOUNT_ATTR_NODEV;
	*what = dir;
	fd = open_tree(AT_FDCWD, dir, OPEN_TREE_CLONE|OPEN_TREE_CLOEXEC|
	    AT_RECURSIVE);
	if (fd == -1)
		return (errno == ENOENT || errno == ENOTDIR ? 0 : -1);
	if (mount_setattr(fd, "", AT_EMPTY_PATH|AT_RECURSIVE, &attr,
	    sizeof attr) != 0 || move_mount(fd, "", AT_FDCWD, dir,
	    MOVE_MOUNT_F_EMPTY_PATH) != 0) {
		close(fd);
		return (-1);
	}
	close(fd);
	return (0);
}

/*
 * In a keeper, before it forks its job: dirs read-only in the job's own
 * mount namespace (made here unless in_ns: its overlay's is there).
 * Returns 0, or -1 with errno and *what (the job does not run).
 */
int
tenant_datasets_enter(char *const *dirs, int in_ns, const char **what)
{
	size_t	 i;

	if (!in_ns) {
		if (tds_unshare(what) != 0)
			return (-1);
		*what = "mounts of its own";
		if (mount(NULL, "/", NULL, MS_REC|MS_SLAVE, NULL) != 0)
			return (-1);
	}
	for (i = 0; dirs[i] != NULL; i++) {
		if (tds_bind(dirs[i], what) != 0)
			return (-1);
	}
	return (0);
}
