/*
 * fence-unix.c: a fenced job's AF_UNIX connects and binds, and a jailed
 * job's chmod() and chown(), done by the supervisor on its behalf.  A job
 * may connect to sockets it bound itself (wherever: Python's
 * multiprocessing puts them in /tmp), known by identity (device, inode,
 * birth time), not by where they are now, and to those an --allow
 * unix:PATH names; never to anything else: resolver daemons, docker.sock,
 * gmux's own socket, other jobs' keepers.  A path is no proof: a job runs
 * as the daemon's user and can rename() any socket of that user (a tmux
 * server, an ssh ControlMaster, a relay) into its own directory.  Only a
 * jailed job, which Landlock keeps from moving anything in and whose
 * binds the kernel makes itself (unrecorded), may also connect to sockets
 * in its own directories.  Abstract sockets are refused: their namespace
 * belongs to the network namespace, not to a directory, and the host's
 * (X11, containerd, D-Bus) live there.
 *
 * The path is resolved as the kernel would for the job: relative to the
 * calling thread's working directory (/proc/TID/cwd), following symlinks,
 * once, into an O_PATH descriptor that is both what is checked and what
 * is connected to (through /proc/self/fd/N), so the job cannot swap the
 * file between the check and the connect.
 */

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "fence-int.h"

#define UNIX_MAX_BOUND	1024

struct unix_id {
	dev_t		 dev;
	ino_t		 ino;
	int64_t		 btime;		/* tells a reused inode number apart */
};

struct fence_unix {
	char		**dirs;		/* real paths: the job's own */
	u_int		 ndirs;
	char		*deny[2];	/* gmux's own directories */
	struct unix_id	 daemon;	/* gmux's socket */
	struct unix_id	*bound;		/* sockets the job bound */
	u_int		 nbound;
	char		**allow;	/* --allow unix:PATH */
	u_int		 nallow;
	int		 flags;		/* FENCE_UNIX_* */
	ino_t		 mntns;		/* ours, and our root: the job's must */
	struct unix_id	 root;		/* be the same for paths to agree */
};

static int
get_id(int dfd, const char *path, int flags, struct unix_id *id,
    struct statx *stx)
{
	struct statx	 sx;

	if (stx == NULL)
		stx = &sx;
	if (statx(dfd, path, flags, STATX_BASIC_STATS|STATX_BTIME, stx) != 0)
		return (-1);
	id->dev = makedev(stx->stx_dev_major, stx->stx_dev_minor);
	id->ino = stx->stx_ino;
	id->btime = (stx->stx_mask & STATX_BTIME) ?
	    stx->stx_btime.tv_sec * 1000000000LL + stx->stx_btime.tv_nsec : 0;
	return (0);
}

static int
same_id(const struct unix_id *a, const struct unix_id *b)
{
	return (a->dev == b->dev && a->ino == b->ino && a->btime == b->btime);
}

/* Adds a directory of the job's own (all of / is no job's). */
static void
add_dir(struct fence_unix *fu, const char *dir)
{
	char	*real;

	if (dir == NULL || (real = realpath(dir, NULL)) == NULL)
		return;
	if (strcmp(real, "/") == 0) {
		free(real);
		return;
	}
	fu->dirs = xreallocarray(fu->dirs, fu->ndirs + 1, sizeof *fu->dirs);
	fu->dirs[fu->ndirs++] = real;
}

/*
 * Takes the policy's unix:PATH rules; a jailed job's, only the task
 * broker's socket (which the daemon names for a task worker: a remote
 * request's unix: rules are refused).
 */
static void
add_allowed(struct fence_unix *fu, const struct fence *policy, int jailed)
{
	u_int	 i;

	for (i = 0; policy != NULL && i < policy->nrules; i++) {
		if (policy->rules[i].path == NULL)
			continue;
		if (jailed &&
		    strcmp(policy->rules[i].path, path_task_socket()) != 0)
			continue;
		fu->allow = xreallocarray(fu->allow, fu->nallow + 1,
		    sizeof *fu->allow);
		fu->allow[fu->nallow++] = xstrdup(policy->rules[i].path);
	}
}

/*
 * Returns the checker for a job in workdir whose directories are dirs too
 * (NULL-ended, or NULL), fenced by policy; flags FENCE_UNIX_*.  The caller
 * frees it.
 */
struct fence_unix *
fence_unix_create(const char *workdir, char *const *dirs,
    const struct fence *policy, int flags)
{
	struct fence_unix	*fu;
	struct stat		 st;
	char			*dir, *slash;
	u_int			 i;

	fu = xcalloc(1, sizeof *fu);
	fu->flags = flags;
	add_allowed(fu, policy, flags & FENCE_UNIX_OWNDIRS);
	add_dir(fu, workdir);
	for (i = 0; dirs != NULL && dirs[i] != NULL; i++)
		add_dir(fu, dirs[i]);
	fu->deny[0] = realpath(path_home(), NULL);
	dir = xstrdup(path_socket());
	if ((slash = strrchr(dir, '/')) != NULL)
		*slash = '\0';
	fu->deny[1] = realpath(dir, NULL);
	free(dir);
	get_id(AT_FDCWD, path_socket(), 0, &fu->daemon, NULL);
	if (stat("/proc/self/ns/mnt", &st) == 0)
		fu->mntns = st.st_ino;
	get_id(AT_FDCWD, "/", 0, &fu->root, NULL);
	return (fu);
}

void
fence_unix_free(struct fence_unix *fu)
{
	u_int	 i;

	if (fu == NULL)
		return;
	for (i = 0; i < fu->ndirs; i++)
		free(fu->dirs[i]);
	free(fu->dirs);
	free(fu->deny[0]);
	free(fu->deny[1]);
	free(fu->bound);
	for (i = 0; i < fu->nallow; i++)
		free(fu->allow[i]);
	free(fu->allow);
	free(fu);
}

/*
 * The path of a sockaddr_un, NUL-terminated as the kernel takes it (the
 * length bounds it).  Returns 0, or EINVAL for an unnamed address and
 * ECONNREFUSED for an abstract one.
 */
static int
unix_path(const struct fence_call *c, char *path, size_t size)
{
	const struct sockaddr_un *sun = (const struct sockaddr_un *)c->addr;
	size_t			 off = offsetof(struct sockaddr_un, sun_path);
	size_t			 n;

	if (c->alen <= off || c->alen > sizeof *sun)
		return (EINVAL);
	if (sun->sun_path[0] == '\0')
		return (ECONNREFUSED);
	n = strnlen(sun->sun_path, c->alen - off);
	if (n >= size)
		return (EINVAL);
	memcpy(path, sun->sun_path, n);
	path[n] = '\0';
	return (0);
}

/* Whether the job's thread sees the same mounts and root as we do. */
static int
same_view(struct fence_unix *fu, pid_t pid)
{
	struct unix_id	 root;
	struct stat	 st;
	char		 p[64];

	snprintf(p, sizeof p, "/proc/%d/ns/mnt", (int)pid);
	if (stat(p, &st) != 0 || st.st_ino != fu->mntns)
		return (0);
	snprintf(p, sizeof p, "/proc/%d/root", (int)pid);
	return (get_id(AT_FDCWD, p, 0, &root, NULL) == 0 &&
	    same_id(&root, &fu->root));
}

/* Opens path as the job's thread would find it; O_PATH, symlinks followed. */
static int
open_as_job(pid_t pid, const char *path, int flags)
{
	char	 p[64];
	int	 dfd, fd, saved;

	if (*path == '/')
		return (open(path, flags|O_PATH|O_CLOEXEC));
	snprintf(p, sizeof p, "/proc/%d/cwd", (int)pid);
	if ((dfd = open(p, O_PATH|O_DIRECTORY|O_CLOEXEC)) == -1)
		return (-1);
	fd = openat(dfd, *path == '\0' ? "." : path, flags|O_PATH|O_CLOEXEC);
	saved = errno;
	close(dfd);
	errno = saved;
	return (fd);
}

/*
 * Whether real lies in one of the job's directories, and not in gmux's
 * own unless that directory of the job's is there itself (a remote job's
 * tree is $GMUX_HOME/jobs/jN/work; its keeper's socket is next to it).
 */
static int
in_own_dir(const struct fence_unix *fu, const char *real)
{
	const char	*d;
	u_int		 i, k;

	for (i = 0; i < fu->ndirs; i++) {
		d = fu->dirs[i];
		if (!path_under(real, d))
			continue;
		for (k = 0; k < nitems(fu->deny); k++) {
			if (path_under(real, fu->deny[k]) &&
			    !path_under(d, fu->deny[k]))
				break;
		}
		if (k == nitems(fu->deny))
			return (1);
	}
	return (0);
}

/* Whether the socket file open on pfd is one the job may connect to. */
static int
target_allowed(struct fence_unix *fu, int pfd, const struct unix_id *id,
    u_int nlink)
{
	struct unix_id	 named;
	char		 p[64], real[PATH_MAX];
	ssize_t		 n;
	u_int		 i;

	if (same_id(id, &fu->daemon))
		return (0);
	for (i = 0; i < fu->nbound; i++) {
		if (same_id(id, &fu->bound[i]))
			return (1);
	}
	for (i = 0; i < fu->nallow; i++) {
		if (get_id(AT_FDCWD, fu->allow[i], 0, &named, NULL) == 0 &&
		    same_id(id, &named))
			return (1);
	}
	if (!(fu->flags & FENCE_UNIX_OWNDIRS))
		return (0);	/* moved in from anywhere the user may write */
	if (fu->ndirs == 0 || nlink != 1)
		return (0);	/* a second link may be the way in from out */
	snprintf(p, sizeof p, "/proc/self/fd/%d", pfd);
	if ((n = readlink(p, real, sizeof real - 1)) <= 0)
		return (0);
	real[n] = '\0';
	return (in_own_dir(fu, real));
}

/*
 * Connects a socket of the job's type to the job's target if the fence
 * allows it.  Returns 0 with the socket in *sock (non-blocking), or an
 * errno; *refused is set when the fence, not the kernel, said no.
 */
int
fence_unix_connect(struct fence_unix *fu, const struct fence_call *c,
    int *sock, int *refused)
{
	struct sockaddr_un	 sun;
	struct statx		 stx;
	struct unix_id		 id;
	char			 path[sizeof sun.sun_path + 1];
	int64_t			 timeout_ms;
	int			 pfd, ns = -1, err;

	*refused = 0;
	*sock = -1;
	if ((err = unix_path(c, path, sizeof path)) != 0) {
		*refused = err == ECONNREFUSED;
		return (err);
	}
	if (!same_view(fu, c->pid)) {
		*refused = 1;
		return (ECONNREFUSED);
	}
	if ((pfd = open_as_job(c->pid, path, 0)) == -1)
		return (errno);
	err = ECONNREFUSED;	/* what the kernel says to a non-socket */
	if (get_id(pfd, "", AT_EMPTY_PATH, &id, &stx) != 0 ||
	    !S_ISSOCK(stx.stx_mode))
		goto out;
	if (!target_allowed(fu, pfd, &id, stx.stx_nlink)) {
		*refused = 1;
		goto out;
	}
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof sun.sun_path, "/proc/self/fd/%d", pfd);
	ns = fence_out_open(c, &timeout_ms);
	if (ns == -1 || connect(ns, (struct sockaddr *)&sun, sizeof sun) != 0) {
		err = errno;
		goto out;
	}
	*sock = ns;
	ns = -1;
	err = 0;
out:
	if (ns != -1)
		close(ns);
	close(pfd);
	return (err);
}

/* The job's umask, which a socket file it binds must be made with. */
static mode_t
job_umask(pid_t pid)
{
	char	 p[64], *buf, *line;
	mode_t	 mask = 022;

	snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
	if ((buf = read_file(p, 65536, NULL, NULL)) == NULL)
		return (mask);
	if ((line = strstr(buf, "\nUmask:")) != NULL)
		mask = (mode_t)strtoul(line + 7, NULL, 8) & 0777;
	free(buf);
	return (mask);
}

static void
remember(struct fence_unix *fu, const struct unix_id *id)
{
	if (fu->nbound == UNIX_MAX_BOUND) {
		memmove(fu->bound, fu->bound + 1,
		    (UNIX_MAX_BOUND - 1) * sizeof *fu->bound);
		fu->nbound--;
	}
	fu->bound = xreallocarray(fu->bound, fu->nbound + 1,
	    sizeof *fu->bound);
	fu->bound[fu->nbound++] = *id;
}

/*
 * Binds in another root or mount namespace: through /proc/self/fd, so the
 * name the socket reports (getsockname) is that path, not the job's.
 */
static int
bind_elsewhere(const struct fence_call *c, char *path, int *dfdp,
    const char **basep)
{
	struct sockaddr_un	 sun;
	char			*base;
	const char		*dir;
	int			 dfd;

	if ((base = strrchr(path, '/')) == NULL) {
		dir = "";
		base = path;
	} else {
		*base++ = '\0';
		dir = base - 1 == path ? "/" : path;
	}
	if (*base == '\0')
		return (EINVAL);
	if ((dfd = open_as_job(c->pid, dir, O_DIRECTORY)) == -1)
		return (errno);
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if ((size_t)snprintf(sun.sun_path, sizeof sun.sun_path,
	    "/proc/self/fd/%d/%s", dfd, base) >= sizeof sun.sun_path) {
		close(dfd);
		return (ENAMETOOLONG);
	}
	*dfdp = dfd;
	*basep = base;
	if (bind(c->sock, (struct sockaddr *)&sun, sizeof sun) != 0)
		return (errno);
	return (0);
}

/*
 * Binds to a path for the job, with the job's own address (so that
 * getsockname() tells the job what it asked for), resolved from the job's
 * directory: the supervisor steps into it for the call.  It is single
 * threaded where paths are concerned (the resolver thread uses none), so
 * borrowing the process's directory and umask is safe.  Remembers the
 * socket file made, to let the job connect to it later.
 */
static int
bind_path(struct fence_unix *fu, const struct fence_call *c, char *path)
{
	struct unix_id	 id;
	const char	*base = path;
	char		 p[64];
	mode_t		 old;
	int		 here = -1, dfd = AT_FDCWD, cwd, rc, err = 0;

	old = umask(job_umask(c->pid));
	if (!same_view(fu, c->pid))
		rc = err = bind_elsewhere(c, path, &dfd, &base);
	else {
		if (*path != '/') {
			snprintf(p, sizeof p, "/proc/%d/cwd", (int)c->pid);
			here = open(".", O_PATH|O_DIRECTORY|O_CLOEXEC);
			cwd = open(p, O_PATH|O_DIRECTORY|O_CLOEXEC);
			if (here == -1 || cwd == -1 || fchdir(cwd) != 0)
				err = errno;
			if (cwd != -1)
				close(cwd);
		}
		if (err == 0 && (rc = bind(c->sock,
		    (const struct sockaddr *)c->addr, c->alen)) != 0)
			err = errno;
	}
	umask(old);
	if (err == 0 && get_id(dfd, base, AT_SYMLINK_NOFOLLOW, &id, NULL) == 0)
		remember(fu, &id);
	if (here != -1) {
		if (fchdir(here) != 0)
			fatal("%s: fchdir back", __func__);
		close(here);
	}
	if (dfd != AT_FDCWD)
		close(dfd);
	return (err);
}

/*
 * Binds the job's socket (our duplicate of it) as the job asked.  A path
 * is made relative to the job's directory, with the job's umask.
 * Returns 0 or an errno.
 */
int
fence_unix_bind(struct fence_unix *fu, const struct fence_call *c)
{
	char	 path[sizeof ((struct sockaddr_un *)0)->sun_path + 1];
	int	 err;

	err = unix_path(c, path, sizeof path);
	if (err == 0)
		return (bind_path(fu, c, path));
	if (bind(c->sock, (const struct sockaddr *)c->addr, c->alen) != 0)
		return (errno);
	return (0);
}

/* Whether real is one of the job's directories or lies in one. */
static int
own_path(const struct fence_unix *fu, const char *real)
{
	u_int	 i;

	for (i = 0; i < fu->ndirs; i++) {
		if (strcmp(real, fu->dirs[i]) == 0)
			return (1);
	}
	return (in_own_dir(fu, real));
}

/*
 * A jailed job's chmod() (uid and gid -1) or chown() (mode -1) of path,
 * relative to dirfd (ours: the job's directory, or its thread's working
 * directory), flags FENCE_META_*.  Landlock does not govern modes and
 * owners: done here only for a file in the job's own directories (where
 * it may write anyway), refused elsewhere, so the host's files keep
 * theirs.  An owner can only be the job's own.  Returns 0 or an errno.
 */
int
fence_unix_meta(struct fence_unix *fu, pid_t pid, int dirfd, const char *path,
    int mode, uid_t uid, gid_t gid, int flags)
{
	struct stat	 st;
	char		 p[64], real[PATH_MAX];
	ssize_t		 n;
	int		 fd, err = 0;

	if (*path == '\0' && !(flags & FENCE_META_EMPTY))
		return (ENOENT);
	if (*path == '/' && !same_view(fu, pid))
		return (EPERM);
	if (*path == '\0')
		fd = dup(dirfd);
	else
		fd = openat(dirfd, path, O_PATH|O_CLOEXEC|
		    ((flags & FENCE_META_NOFOLLOW) ? O_NOFOLLOW : 0));
	if (fd == -1)
		return (errno);
	snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
	if ((n = readlink(p, real, sizeof real - 1)) <= 0 ||
	    fstat(fd, &st) != 0)
		err = EACCES;
	else {
		real[n] = '\0';
		if (!own_path(fu, real))
			err = EPERM;
	}
	if (err == 0 && mode != -1) {
		if (S_ISLNK(st.st_mode))
			err = EOPNOTSUPP;
		else if (chmod(p, (mode_t)mode & 07777) != 0)
			err = errno;
	} else if (err == 0) {
		if ((uid != (uid_t)-1 && uid != getuid()) ||
		    (gid != (gid_t)-1 && gid != getgid()))
			err = EPERM;
		else if (fchownat(fd, "", uid, gid, AT_EMPTY_PATH) != 0)
			err = errno;
	}
	close(fd);
	return (err);
}
