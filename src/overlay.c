/*
 * overlay.c: a job's tree as an overlay over a stored tree, mounted in the
 * job's own user and mount namespace (unprivileged overlayfs), so that a
 * re-run of an unchanged tree copies nothing: what the job writes goes to
 * its own upper directory, and the stored tree is never written (it is
 * the overlay's lower layer, which the job cannot reach but through the
 * overlay).  Whether this kernel allows it is found by trying it once
 * (overlay_ready), never assumed.  The mount is made with the mount API
 * (fsopen, fsconfig "lowerdir+": Linux 6.8), so no path is parsed for
 * separators.  docs/isolation.md says what the job sees.
 */

#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

/* What a job's child needs to mount its tree, made before the fork. */
struct overlay {
	char	*lower;		/* the stored tree */
	char	*upper;		/* what the job writes */
	char	*work;		/* overlayfs's own scratch */
	char	*target;	/* where the job sees it */
	char	 uid_map[32];
	char	 gid_map[32];
};

/*
 * A user namespace in which this process keeps its uid and gid, with a
 * mount namespace of its own that shares nothing back.  The capabilities
 * it has there go at exec (its uid is not 0 in it, unless it was root).
 */
static int
overlay_unshare(const struct overlay *o, const char **what)
{
	*what = "unshare";
	if (unshare(CLONE_NEWUSER|CLONE_NEWNS) != 0)
		return (-1);
	*what = "the user namespace's maps";
	if (write_proc("/proc/self/setgroups", "deny") != 0 ||
	    write_proc("/proc/self/uid_map", o->uid_map) != 0 ||
	    write_proc("/proc/self/gid_map", o->gid_map) != 0)
		return (-1);
	*what = "private mounts";
	return (mount(NULL, "/", NULL, MS_REC|MS_PRIVATE, NULL));
}

/*
 * A detached overlay mount: the lowers (top first) and, unless upper is
 * NULL, an upper and its scratch.  Returns its descriptor, or -1.
 */
static int
overlay_fs(const char *const *lowers, const char *upper, const char *work,
    const char **what)
{
	u_int	 attr = MOUNT_ATTR_NOSUID|MOUNT_ATTR_NODEV;
	int	 fs, mnt = -1, i;

	*what = "fsopen overlay";
	if ((fs = fsopen("overlay", FSOPEN_CLOEXEC)) == -1)
		return (-1);
	*what = "the overlay's options";
	for (i = 0; lowers[i] != NULL; i++) {
		if (fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir+", lowers[i],
		    0) != 0)
			goto out;
	}
	if (upper != NULL && (fsconfig(fs, FSCONFIG_SET_STRING, "upperdir",
	    upper, 0) != 0 || fsconfig(fs, FSCONFIG_SET_STRING, "workdir",
	    work, 0) != 0))
		goto out;
	if (upper == NULL)
		attr |= MOUNT_ATTR_RDONLY;
	/* Its own attributes (opaque, whiteouts) in user.overlay.*. */
	if (fsconfig(fs, FSCONFIG_SET_FLAG, "userxattr", NULL, 0) != 0)
		goto out;
	*what = "mounting the overlay";
	if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
		mnt = fsmount(fs, FSMOUNT_CLOEXEC, attr);
out:
	close(fs);
	return (mnt);
}

/*
 * In the job's keeper, before it makes the job's jail and fence and forks
 * the job: user and mount namespaces of its own, and the overlay mounted
 * on the target there.  The job and its fence's supervisor (the keeper)
 * then see the same tree by the same paths; nothing outside sees it.
 * Returns 0, or -1 with errno and *what.
 */
int
overlay_enter(const struct overlay *o, const char **what)
{
	const char	*lowers[2] = { o->lower, NULL };
	int		 mnt;

	if (overlay_unshare(o, what) != 0)
		return (-1);
	if ((mnt = overlay_fs(lowers, o->upper, o->work, what)) == -1)
		return (-1);
	*what = "moving the overlay into place";
	if (move_mount(mnt, "", AT_FDCWD, o->target,
	    MOVE_MOUNT_F_EMPTY_PATH) != 0) {
		close(mnt);
		return (-1);
	}
	close(mnt);
	return (0);
}

/*
 * What the job with these directories needs (its keeper calls
 * overlay_enter).  The caller frees it with overlay_free.
 */
struct overlay *
overlay_create(const char *lower, const char *upper, const char *work,
    const char *target)
{
	struct overlay	*o;

	o = xcalloc(1, sizeof *o);
	o->lower = xstrdup(lower);
	o->upper = xstrdup(upper);
	o->work = xstrdup(work);
	o->target = xstrdup(target);
	snprintf(o->uid_map, sizeof o->uid_map, "%u %u 1\n", getuid(),
	    getuid());
	snprintf(o->gid_map, sizeof o->gid_map, "%u %u 1\n", getgid(),
	    getgid());
	return (o);
}

/*
 * Its -v for podman (a container over the tree: docs/containers.md):
 * LOWER:TARGET:O,upperdir=UPPER,workdir=WORK.  The caller frees it.
 */
char *
overlay_podman_volume(const struct overlay *o, const char *target)
{
	char	*v;

	xasprintf(&v, "%s:%s:O,upperdir=%s,workdir=%s", o->lower, target,
	    o->upper, o->work);
	return (v);
}

void
overlay_free(struct overlay *o)
{
	if (o == NULL)
		return;
	free(o->lower);
	free(o->upper);
	free(o->work);
	free(o->target);
	free(o);
}

/* In the view's child: the merged tree, read-only, sent up as a dir fd. */
static dead void
overlay_view_child(const struct overlay *o, int sock)
{
	const char	*lowers[3] = { o->upper, o->lower, NULL }, *what, *e;
	int		 mnt, fd;

	if (overlay_unshare(o, &what) != 0 ||
	    (mnt = overlay_fs(lowers, NULL, NULL, &what)) == -1 ||
	    (fd = openat(mnt, ".", O_RDONLY|O_DIRECTORY|O_CLOEXEC)) == -1 ||
	    send_fd(sock, fd, 0) != 0) {
		e = strerrordesc_np(errno);
		/* A byte first: recv_fd takes it. */
		write_all(sock, "!", 1);
		write_all(sock, what, strlen(what));
		write_all(sock, ": ", 2);
		write_all(sock, e != NULL ? e : "error", strlen(e != NULL ? e :
		    "error"));
		_exit(1);
	}
	_exit(0);
}

/*
 * The tree a job left: its upper directory over the stored tree, merged
 * as the job saw it, mounted read-only in a namespace of a child's (the
 * daemon may have threads, and must keep its own namespaces).  The mount
 * lives as long as the descriptor.  Returns a directory fd (the caller
 * closes it), or -1 with *cause.
 */
int
overlay_view(const char *lower, const char *upper, char **cause)
{
	struct overlay	*o;
	char		 buf[128], c;
	ssize_t		 n;
	pid_t		 pid;
	int		 sp[2], fd = -1, ws;

	if (socketpair(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC, 0, sp) != 0) {
		xasprintf(cause, "socketpair: %s", strerror(errno));
		return (-1);
	}
	o = overlay_create(lower, upper, upper, upper);
	if ((pid = fork_quiet()) == -1)
		fatal("fork");
	if (pid == 0) {
		close(sp[0]);
		overlay_view_child(o, sp[1]);
	}
	close(sp[1]);
	overlay_free(o);
	if ((fd = recv_fd(sp[0], &c)) == -1) {
		n = read(sp[0], buf, sizeof buf - 1);
		buf[n > 0 ? n : 0] = '\0';
		xasprintf(cause, "the job's tree: %s", *buf ? buf : "failed");
	}
	close(sp[0]);
	while (waitpid(pid, &ws, 0) == -1 && errno == EINTR)
		;
	return (fd);
}

/* The probe's child: what a job does with its tree, in a tree of its own. */
static dead void
overlay_probe_child(const struct overlay *o)
{
	const char	*what;
	int		 fd;

	if (overlay_enter(o, &what) != 0 || chdir(o->target) != 0)
		_exit(1);
	if ((fd = open("new", O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0600)) == -1 ||
	    write(fd, "x", 1) != 1 || close(fd) != 0)
		_exit(2);
	if (unlink("old") != 0 || unlink("dir/f") != 0 || rmdir("dir") != 0 ||
	    mkdir("dir", 0700) != 0)
		_exit(3);
	_exit(0);
}

/* Makes the probe's directories under dir: lower (with old, dir/f), ... */
static int
overlay_probe_dirs(const char *dir, struct overlay **o)
{
	char	*lower, *upper, *work, *target, *p, *cause = NULL;
	int	 rc;

	xasprintf(&lower, "%s/lower", dir);
	xasprintf(&upper, "%s/upper", dir);
	xasprintf(&work, "%s/ovl", dir);
	xasprintf(&target, "%s/work", dir);
	xasprintf(&p, "%s/dir", lower);
	rc = mkdir(dir, 0700) != 0 || mkdir(lower, 0700) != 0 ||
	    mkdir(upper, 0700) != 0 || mkdir(work, 0700) != 0 ||
	    mkdir(target, 0700) != 0 || mkdir(p, 0700) != 0 ? -1 : 0;
	free(p);
	xasprintf(&p, "%s/dir/f", lower);
	if (rc == 0)
		rc = write_file_replace(p, "f", 1, 0600, &cause);
	free(p);
	xasprintf(&p, "%s/old", lower);
	if (rc == 0)
		rc = write_file_replace(p, "o", 1, 0600, &cause);
	free(p);
	free(cause);
	*o = overlay_create(lower, upper, work, target);
	free(lower);
	free(upper);
	free(work);
	free(target);
	return (rc);
}

/*
 * Tries, in a directory of dir's, what a job over an overlay does (mount,
 * write, remove a lower file, replace a lower directory), then what a pull
 * does (the merged view).  Returns 0, or -1 with *cause.
 */
static int
overlay_probe(const char *dir, char **cause)
{
	struct overlay	*o = NULL;
	struct stat	 st;
	char		*old;
	pid_t		 pid;
	int		 ws = 0, fd, rc = -1;

	confine_remove(dir);
	if (overlay_probe_dirs(dir, &o) != 0) {
		xasprintf(cause, "%s: %s", dir, strerror(errno));
		goto out;
	}
	if ((pid = fork_quiet()) == -1)
		fatal("fork");
	if (pid == 0)
		overlay_probe_child(o);
	while (waitpid(pid, &ws, 0) == -1 && errno == EINTR)
		;
	if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
		xasprintf(cause, "%s", WIFEXITED(ws) && WEXITSTATUS(ws) == 1 ?
		    "this kernel does not let a user namespace mount one" :
		    "it does not behave as an overlay");
		goto out;
	}
	if ((fd = overlay_view(o->lower, o->upper, cause)) == -1)
		goto out;
	xasprintf(&old, "%s/old", o->lower);
	if (fstatat(fd, "new", &st, 0) != 0 || fstatat(fd, "old", &st, 0) ==
	    0 || fstatat(fd, "dir/f", &st, 0) == 0 || stat(old, &st) != 0)
		xasprintf(cause, "its merged view is not what was written");
	else
		rc = 0;
	close(fd);
	free(old);
out:
	overlay_free(o);
	confine_remove(dir);
	return (rc);
}

static int	 overlay_state;	/* 0: not tried; 1: works; -1: does not */
static char	*overlay_why;

/*
 * Whether jobs here can run over an overlay: tried once (unless the
 * operator set REMOTE_OVERLAY=0), then remembered.  Returns 1, or 0 with
 * *cause (when cause is not NULL).
 */
int
overlay_ready(char **cause)
{
	const char	*why;
	char		*dir;

	if (overlay_state == 0) {
		xasprintf(&dir, "%s/overlay-probe", path_home());
		if (config_uint("REMOTE_OVERLAY", 1, 0, 1) == 0) {
			overlay_why = xstrdup("REMOTE_OVERLAY=0");
			overlay_state = -1;
		} else if (tenant_accounts_on(&why)) {
			/* A job's own copy, given to its account. */
			overlay_why = xstrdup("TENANT_ACCOUNTS=1");
			overlay_state = -1;
		} else if (overlay_probe(dir, &overlay_why) == 0)
			overlay_state = 1;
		else
			overlay_state = -1;
		free(dir);
		log_info("%s: jobs' trees: %s%s", __func__, overlay_state == 1 ?
		    "overlays over stored trees" : "copies: ", overlay_state ==
		    1 ? "" : overlay_why);
	}
	if (overlay_state == 1)
		return (1);
	if (cause != NULL)
		xasprintf(cause, "no overlay here: %s", overlay_why);
	return (0);
}
