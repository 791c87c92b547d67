/*
 * confine.c: file operations that cannot leave a directory.  Every path
 * from a peer (a manifest, a pull) is first checked for shape (relative,
 * no "." or ".." or empty components, bounded), then resolved one
 * component at a time from a directory fd, never following a symlink:
 * openat2() with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS where the kernel has
 * it, O_NOFOLLOW walks elsewhere.  So a symlink planted in a job's tree (by
 * the manifest or by the job itself) cannot redirect a create, a read or a
 * removal out of it.
 */

#include <sys/stat.h>
#include <sys/syscall.h>

#include <linux/openat2.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

#define CONFINE_DEPTH	256

/* Set once the kernel has no openat2; prepare.c's thread reads it too. */
static _Atomic int	confine_no_openat2;

/*
 * A path as peers may send it: relative, components neither empty nor "."
 * nor "..", each at most NAME_MAX bytes, the whole under PATH_MAX and at
 * most CONFINE_DEPTH deep.
 */
int
confine_path_ok(const char *path, char **cause)
{
	const char	*p = path, *slash;
	size_t		 len, depth = 0;

	if (*path == '\0' || strlen(path) >= PATH_MAX) {
		xasprintf(cause, "a path is empty or too long");
		return (0);
	}
	if (*path == '/') {
		xasprintf(cause, "'%.200s' is absolute", path);
		return (0);
	}
	for (;;) {
		slash = strchr(p, '/');
		len = slash != NULL ? (size_t)(slash - p) : strlen(p);
		if (len == 0 || len > NAME_MAX || (len == 1 && p[0] == '.') ||
		    (len == 2 && p[0] == '.' && p[1] == '.') ||
		    ++depth > CONFINE_DEPTH) {
			xasprintf(cause, "'%.200s' is not a plain relative "
			    "path", path);
			return (0);
		}
		if (slash == NULL)
			return (1);
		p = slash + 1;
	}
}

static int
confine_openat2(int dirfd, const char *path, int flags, mode_t mode)
{
	struct open_how	 how;
	int		 fd, tries = 0;

	memset(&how, 0, sizeof how);
	how.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC);
	how.mode = (flags & O_CREAT) ? mode : 0;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
	    RESOLVE_NO_MAGICLINKS;
	do
		fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
	while (fd == -1 && errno == EAGAIN && ++tries < 8);
	return (fd);
}

/* Opens the directory component by component, creating (0755) if asked. */
static int
confine_walk_dirs(int dirfd, const char *path, size_t len, int create)
{
	char	 name[NAME_MAX + 1];
	size_t	 i = 0, n;
	int	 fd, next;

	if ((fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0)) == -1)
		return (-1);
	while (i < len) {
		for (n = 0; i + n < len && path[i + n] != '/'; n++)
			;
		if (n > NAME_MAX) {
			close(fd);
			errno = ENAMETOOLONG;
			return (-1);
		}
		memcpy(name, path + i, n);
		name[n] = '\0';
		next = openat(fd, name, O_RDONLY|O_DIRECTORY|O_NOFOLLOW|
		    O_CLOEXEC);
		if (next == -1 && errno == ENOENT && create &&
		    (mkdirat(fd, name, 0755) == 0 || errno == EEXIST))
			next = openat(fd, name, O_RDONLY|O_DIRECTORY|O_NOFOLLOW|
			    O_CLOEXEC);
		close(fd);
		if (next == -1)
			return (-1);
		fd = next;
		i += n + 1;
	}
	return (fd);
}

/*
 * Opens path beneath dirfd without following any symlink.  path must have
 * passed confine_path_ok.  Returns the fd or -1 with errno (ELOOP or
 * ENOTDIR where a symlink is in the way).
 */
int
confine_open(int dirfd, const char *path, int flags, mode_t mode)
{
	const char	*slash;
	int		 pfd, fd, e;

	if (!confine_no_openat2) {
		fd = confine_openat2(dirfd, path, flags, mode);
		if (fd != -1 || errno != ENOSYS)
			return (fd);
		confine_no_openat2 = 1;
	}
	if ((slash = strrchr(path, '/')) == NULL)
		return (openat(dirfd, path, flags|O_NOFOLLOW|O_CLOEXEC, mode));
	if ((pfd = confine_walk_dirs(dirfd, path, (size_t)(slash - path), 0))
	    == -1)
		return (-1);
	fd = openat(pfd, slash + 1, flags|O_NOFOLLOW|O_CLOEXEC, mode);
	e = errno;
	close(pfd);
	errno = e;
	return (fd);
}

/*
 * Opens the directory that holds path (creating missing directories when
 * create is set) and points *leaf at the last component.  Returns the fd
 * or -1 with errno.
 */
int
confine_parent(int dirfd, const char *path, int create, const char **leaf)
{
	const char	*slash = strrchr(path, '/');

	*leaf = slash != NULL ? slash + 1 : path;
	if (slash == NULL)
		return (fcntl(dirfd, F_DUPFD_CLOEXEC, 0));
	return (confine_walk_dirs(dirfd, path, (size_t)(slash - path), create));
}

static int	confine_walk_dir(int, char *, size_t, u_int,
		    const struct walk_ops *, void *, char **);

/* One entry of a directory: path[len] onwards gets its name. */
static int
confine_walk_one(int dirfd, const char *name, char *path, size_t len,
    u_int depth, const struct walk_ops *ops, void *arg, char **cause)
{
	struct stat	 st;
	size_t		 nlen = strlen(name), plen;
	int		 sub, r;

	if (len + nlen + 2 > PATH_MAX)
		return (0);
	if (len != 0)
		path[len] = '/';
	plen = len + (len != 0) + nlen;
	memcpy(path + len + (len != 0), name, nlen + 1);
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		r = 0;		/* gone meanwhile */
	else if ((r = ops->entry(dirfd, name, path, &st, arg, cause)) == 1 &&
	    S_ISDIR(st.st_mode)) {
		sub = openat(dirfd, name, O_RDONLY|O_DIRECTORY|O_NOFOLLOW|
		    O_CLOEXEC);
		if (sub == -1) {
			xasprintf(cause, "%s: %s", path, strerror(errno));
			r = -1;
		} else {
			r = confine_walk_dir(sub, path, plen, depth + 1, ops,
			    arg, cause);
			close(sub);
		}
	}
	path[len] = '\0';
	return (r == -1 ? -1 : 0);
}

static int
confine_walk_dir(int dirfd, char *path, size_t len, u_int depth,
    const struct walk_ops *ops, void *arg, char **cause)
{
	struct dirent	*de;
	DIR		*d;
	int		 fd, rc = -1;

	if (depth > CONFINE_DEPTH) {
		xasprintf(cause, "%s: more than %d levels deep", path,
		    CONFINE_DEPTH);
		return (-1);
	}
	if ((fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0)) == -1 ||
	    (d = fdopendir(fd)) == NULL) {
		xasprintf(cause, "%s: %s", len ? path : ".", strerror(errno));
		if (fd != -1)
			close(fd);
		return (-1);
	}
	if (ops->dir_enter != NULL && ops->dir_enter(dirfd, path, arg, cause)
	    != 0)
		goto out;
	while ((errno = 0, de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (confine_walk_one(dirfd, de->d_name, path, len, depth, ops,
		    arg, cause) != 0)
			goto out;
	}
	if (errno != 0) {
		xasprintf(cause, "%s: %s", len ? path : ".", strerror(errno));
		goto out;
	}
	rc = 0;
out:
	path[len] = '\0';
	if (ops->dir_leave != NULL)
		ops->dir_leave(path, arg);
	closedir(d);
	return (rc);
}

/*
 * Walks the tree under dirfd without following symlinks.  For each entry
 * ops->entry gets its parent fd, name, path relative to the top and
 * lstat; it returns 1 to descend into a directory, 0 not to, -1 to stop.
 * Returns 0 or -1 with *cause.
 */
int
confine_walk(int dirfd, const struct walk_ops *ops, void *arg, char **cause)
{
	char	 path[PATH_MAX];

	path[0] = '\0';
	return (confine_walk_dir(dirfd, path, 0, 0, ops, arg, cause));
}

static int
confine_remove_at(int dirfd, const char *name, u_int depth)
{
	struct dirent	*de;
	DIR		*d;
	int		 fd, rc = 0;

	if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
		return (0);
	if ((errno != EISDIR && errno != EPERM) || depth > CONFINE_DEPTH)
		return (-1);
	fd = openat(dirfd, name, O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC);
	/*
	 * One its owner cannot read (mode 0: overlayfs's scratch, or what a
	 * job left) is opened once made readable; never through a link.
	 */
	if (fd == -1 && errno == EACCES &&
	    fchmodat(dirfd, name, 0700, AT_SYMLINK_NOFOLLOW) == 0)
		fd = openat(dirfd, name, O_RDONLY|O_DIRECTORY|O_NOFOLLOW|
		    O_CLOEXEC);
	if (fd == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return (-1);
	}
	/* A job may have left directories it cannot be written into. */
	fchmod(fd, 0700);
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0 &&
		    confine_remove_at(fd, de->d_name, depth + 1) != 0)
			rc = -1;
	}
	closedir(d);
	if (unlinkat(dirfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
		rc = -1;
	return (rc);
}

/* Removes path (a tree) without following symlinks.  Returns 0 or -1. */
int
confine_remove(const char *path)
{
	char	*copy, *slash;
	int	 dfd, rc;

	copy = xstrdup(path);
	if ((slash = strrchr(copy, '/')) == NULL || slash[1] == '\0') {
		free(copy);
		errno = EINVAL;
		return (-1);
	}
	*slash = '\0';
	dfd = open(*copy ? copy : "/", O_RDONLY|O_DIRECTORY|O_CLOEXEC);
	if (dfd == -1) {
		free(copy);
		return (-1);
	}
	rc = confine_remove_at(dfd, slash + 1, 0);
	close(dfd);
	free(copy);
	return (rc);
}

/*
 * Reads the rest of fd (a file opened confined), at most max bytes.
 * Returns it NUL-terminated (the caller frees it; *len excludes the NUL),
 * or NULL with errno (EFBIG if longer than max).
 */
char *
confine_read_fd(int fd, size_t max, size_t *len)
{
	char	*buf = NULL;
	size_t	 used = 0, size = 0;
	ssize_t	 n;

	for (;;) {
		if (used + 1 >= size) {
			size = size ? size * 2 : 4096;
			buf = xrealloc(buf, size);
		}
		if ((n = read(fd, buf + used, size - used - 1)) == -1 &&
		    errno == EINTR)
			continue;
		if (n == -1)
			goto fail;
		if (n == 0)
			break;
		if ((used += (size_t)n) > max) {
			errno = EFBIG;
			goto fail;
		}
	}
	buf[used] = '\0';
	*len = used;
	return (buf);
fail:
	free(buf);
	return (NULL);
}
