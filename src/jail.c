/*
 * jail.c: what a job that came over TCP (a remote job) may reach.  Its
 * owner holds a token, not an account on this host, yet the job runs as
 * the daemon's user: unconfined, it could read other owners' trees and the
 * host's key and tokens, talk to the daemon's own socket and signal its
 * processes.  The jail is one Landlock domain, made by the keeper before
 * fork() and entered by the job's child before exec(): the system's
 * hierarchies to read and run, the job's own tree and tmp to write,
 * nothing else of the host's files; no signal and no abstract socket out
 * of the domain; TCP connects only through the fence, which every remote
 * job gets (its AF_UNIX rule: only sockets in the job's own directories).
 * Where user namespaces work the job also gets an IPC namespace of its
 * own.  docs/isolation.md says what this hides and what it does not.
 */

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

#define JAIL_ABI	6	/* scopes: signals, abstract sockets */
#define JAIL_PATH	"/usr/local/bin:/usr/bin:/bin"

#define JAIL_RO		(LANDLOCK_READ|LANDLOCK_LIST)
#define JAIL_RX		(JAIL_RO|LANDLOCK_EXEC)
#define JAIL_RW		(JAIL_RX|LANDLOCK_WRITE|LANDLOCK_CREATE)
#define JAIL_DEV	(LANDLOCK_READ|LANDLOCK_WRITE|LANDLOCK_DEVICE)

static int	 jail_check_home(const char *, char **);

struct jail {
	int		 ruleset;	/* files, TCP connects, scopes */
	char		**sockets;	/* where it may connect: its dirs */
	int		  loopback;	/* the host's loopback is open to it */
};

/*
 * What every remote job may use.  Not /tmp, /var, /run, /home, /root, /mnt,
 * /srv or /media: state of others lives there.  /dev only by name: no
 * listing it (nor /dev/shm, whose files other jobs make), no terminals.
 */
static const struct {
	const char	*path;
	u_int		 rights;
} jail_system[] = {
	{ "/usr", JAIL_RX },
	{ "/bin", JAIL_RX },
	{ "/sbin", JAIL_RX },
	{ "/lib", JAIL_RX },
	{ "/lib32", JAIL_RX },
	{ "/lib64", JAIL_RX },
	{ "/libx32", JAIL_RX },
	{ "/opt", JAIL_RX },
	{ "/nix/store", JAIL_RX },
	{ "/etc", JAIL_RO },
	{ "/proc", JAIL_RO },
	{ "/sys", JAIL_RO },
	{ "/dev/null", JAIL_DEV },
	{ "/dev/zero", JAIL_DEV },
	{ "/dev/full", JAIL_DEV },
	{ "/dev/random", JAIL_DEV },
	{ "/dev/urandom", JAIL_DEV },
	{ "/dev/shm", LANDLOCK_READ|LANDLOCK_WRITE|LANDLOCK_CREATE },
	{ "/dev/dri", JAIL_DEV|LANDLOCK_LIST },		/* AMD, Intel */
	{ "/dev/kfd", JAIL_DEV },
	{ "/dev/accel", JAIL_DEV|LANDLOCK_LIST },
	{ "/dev/nvidia-caps", JAIL_DEV|LANDLOCK_LIST },
	{ "/dev/infiniband", JAIL_DEV|LANDLOCK_LIST },	/* NCCL, RDMA */
	/* Where these lead when they are links out of /etc (systemd). */
	{ "/etc/resolv.conf", JAIL_RO },
	{ "/etc/hosts", JAIL_RO },
	{ "/etc/localtime", JAIL_RO },
};

/* The kernel's Landlock ABI; tests may pretend it is older, never newer. */
static int
jail_abi(void)
{
	const char	*v = getenv("GMUX_TEST_LANDLOCK_ABI");
	int		 abi = landlock_abi();

	if (v != NULL && *v >= '0' && *v <= '9' && atoi(v) < abi)
		abi = atoi(v);
	return (abi);
}

/* Calls cb for each REMOTE_READ path (colon-separated); stops at nonzero. */
static int
jail_each_read(int (*cb)(const char *, void *), void *arg)
{
	const char	*v = config_get("REMOTE_READ");
	char		*copy, *p, *next;
	int		 rc = 0;

	if (v == NULL)
		return (0);
	copy = xstrdup(v);
	for (p = copy; p != NULL && rc == 0; p = next) {
		if ((next = strchr(p, ':')) != NULL)
			*next++ = '\0';
		if (*p != '\0')
			rc = cb(p, arg);
	}
	free(copy);
	return (rc);
}

/*
 * A remote job's PATH: the operator's REMOTE_PATH, else the daemon's own,
 * so that a command resolves as it does in the host user's shell (a venv,
 * a conda environment).  The jail lets its directories be read and run.
 */
const char *
jail_path(void)
{
	const char	*v = config_get("REMOTE_PATH");

	if (v == NULL || *v == '\0')
		v = getenv("PATH");
	if (v == NULL || *v == '\0')
		v = JAIL_PATH;
	return (v);
}

/*
 * Is dir/bin's dir a Python environment (a venv's pyvenv.cfg, conda's
 * conda-meta)?  Its interpreter needs the rest of it (lib/, the config).
 * Any other parent of a bin (a home, ~/.local) stays closed.
 */
static int
jail_path_env(const char *dir)
{
	static const char *const marks[] = { "pyvenv.cfg", "conda-meta" };
	struct stat	 sb;
	char		*mark;
	size_t		 i;
	int		 found = 0;

	for (i = 0; i < nitems(marks) && !found; i++) {
		xasprintf(&mark, "%s/%s", dir, marks[i]);
		found = lstat(mark, &sb) == 0;
		free(mark);
	}
	return (found);
}

/*
 * Calls cb for each directory the PATH lends a remote job: each absolute
 * entry, and the prefix of one that is a Python environment's bin.
 */
static int
jail_each_path(int (*cb)(const char *, void *), void *arg)
{
	char	*copy, *p, *next, *slash;
	int	 rc = 0;

	copy = xstrdup(jail_path());
	for (p = copy; p != NULL && rc == 0; p = next) {
		if ((next = strchr(p, ':')) != NULL)
			*next++ = '\0';
		if (*p != '/')
			continue;	/* relative: the job's own tree */
		rc = cb(p, arg);
		slash = strrchr(p, '/');
		if (rc == 0 && slash != NULL && slash != p &&
		    strcmp(slash, "/bin") == 0) {
			*slash = '\0';
			if (jail_path_env(p))
				rc = cb(p, arg);
		}
	}
	free(copy);
	return (rc);
}

struct jail_build {
	struct jail	*j;
	int		 abi;
};

static int
jail_grant_read(const char *path, void *arg)
{
	struct jail_build	*b = arg;

	if (landlock_allow(b->j->ruleset, b->abi, path, JAIL_RX) != 0)
		log_debug("%s: %s: %s", __func__, path, strerror(errno));
	return (0);
}

/* A directory of the PATH, unless it holds gmux's own (a home, say). */
static int
jail_grant_path(const char *path, void *arg)
{
	char	*why = NULL;

	if (jail_check_home(path, &why) != 0) {
		log_debug("%s: %s not lent: %s", __func__, path, why);
		free(why);
		return (0);
	}
	return (jail_grant_read(path, arg));
}

/* Grants what every job needs; a path that is not there is skipped. */
static void
jail_grant_system(struct jail_build *b)
{
	glob_t	 g;
	size_t	 i;

	for (i = 0; i < nitems(jail_system); i++) {
		if (landlock_allow(b->j->ruleset, b->abi, jail_system[i].path,
		    jail_system[i].rights) != 0 && errno != ENOENT)
			log_debug("%s: %s: %s", __func__, jail_system[i].path,
			    strerror(errno));
	}
	if (glob("/dev/nvidia*", 0, NULL, &g) == 0) {
		for (i = 0; i < g.gl_pathc; i++)
			landlock_allow(b->j->ruleset, b->abi, g.gl_pathv[i],
			    JAIL_DEV|LANDLOCK_LIST);
		globfree(&g);
	}
	jail_each_read(jail_grant_read, b);
	jail_each_path(jail_grant_path, b);
}

/* Grants the job's own: its tree, its tmp, what enforcement needs. */
static int
jail_grant_own(struct jail_build *b, const struct jail_spec *s, char **cause)
{
	const char	*own[2] = { s->work, s->tmp };
	size_t		 i;

	for (i = 0; i < nitems(own); i++) {
		if (own[i] == NULL)
			continue;
		if (landlock_allow(b->j->ruleset, b->abi, own[i],
		    JAIL_RW) != 0) {
			xasprintf(cause, "%s: %s", own[i], strerror(errno));
			return (-1);
		}
		strv_add(&b->j->sockets, own[i]);
	}
	for (i = 0; s->exec != NULL && s->exec[i] != NULL; i++)
		landlock_allow(b->j->ruleset, b->abi, s->exec[i], JAIL_RX);
	for (i = 0; s->rw != NULL && s->rw[i] != NULL; i++)
		landlock_allow(b->j->ruleset, b->abi, s->rw[i],
		    LANDLOCK_READ|LANDLOCK_WRITE);
	for (i = 0; s->sockets != NULL && s->sockets[i] != NULL; i++) {
		landlock_allow(b->j->ruleset, b->abi, s->sockets[i], JAIL_RW);
		strv_add(&b->j->sockets, s->sockets[i]);
	}
	for (i = 0; s->devs != NULL && s->devs[i] != NULL; i++)
		landlock_allow(b->j->ruleset, b->abi, s->devs[i],
		    JAIL_DEV|LANDLOCK_LIST);
	return (0);
}

/*
 * Builds a remote job's jail (in the keeper, before fork()).  NULL with
 * *cause if this kernel cannot confine it: the job must then not run.
 */
struct jail *
jail_create(const struct jail_spec *s, char **cause)
{
	struct jail_build	 b;
	int			 abi = jail_abi();

	if (abi < JAIL_ABI) {
		xasprintf(cause, "this kernel's Landlock is ABI %d; a remote "
		    "job's jail needs ABI %d (Linux 6.12)", abi, JAIL_ABI);
		return (NULL);
	}
	b.abi = abi;
	b.j = xcalloc(1, sizeof *b.j);
	b.j->loopback = s->loopback;
	b.j->ruleset = landlock_ruleset(abi, LANDLOCK_FS|LANDLOCK_NET|
	    LANDLOCK_SCOPE);
	if (b.j->ruleset == -1) {
		xasprintf(cause, "landlock: %s", strerror(errno));
		jail_free(b.j);
		return (NULL);
	}
	jail_grant_system(&b);
	if (jail_grant_own(&b, s, cause) != 0) {
		jail_free(b.j);
		return (NULL);
	}
	return (b.j);
}

/* The Landlock ruleset for the job's child to enter. */
int
jail_ruleset(const struct jail *j)
{
	return (j->ruleset);
}

/* The directories whose sockets the job may connect to (NULL-ended). */
char *const *
jail_sockets(const struct jail *j)
{
	return (j->sockets);
}

/*
 * Whether the job may connect to the host's loopback as its fence allows
 * (the operator's REMOTE_LOOPBACK=1), not only to what it bound itself.
 */
int
jail_loopback(const struct jail *j)
{
	return (j->loopback);
}

void
jail_free(struct jail *j)
{
	if (j == NULL)
		return;
	if (j->ruleset != -1)
		close(j->ruleset);
	strv_free(j->sockets);
	free(j);
}

void
jail_spec_clear(struct jail_spec *s)
{
	free(s->work);
	free(s->tmp);
	strv_free(s->exec);
	strv_free(s->rw);
	strv_free(s->sockets);
	strv_free(s->devs);
	memset(s, 0, sizeof *s);
}

struct jail_home {
	const char	*what;		/* "$GMUX_HOME" */
	char		*real;
	char		**cause;
};

/* Refuses a home that lies in what remote jobs may read. */
static int
jail_home_in(const char *granted, void *arg)
{
	struct jail_home	*h = arg;
	char			*real;
	int			 in;

	if ((real = realpath(granted, NULL)) == NULL)
		return (0);
	in = strcmp(h->real, real) == 0 || path_under(h->real, real);
	if (in)
		xasprintf(h->cause, "%s (%s) lies in %s, which remote jobs may "
		    "read: put it elsewhere", h->what, h->real, real);
	free(real);
	return (in ? -1 : 0);
}

/* Does gmux's dir lie in what remote jobs may read (or in granted)? */
static int
jail_check_dir(const char *what, const char *path, const char *granted,
    char **cause)
{
	struct jail_home	 h;
	size_t			 i;
	int			 rc = 0;

	h.what = what;
	h.cause = cause;
	if ((h.real = realpath(path, NULL)) == NULL)
		return (0);
	if (granted != NULL)
		rc = jail_home_in(granted, &h);
	for (i = 0; granted == NULL && i < nitems(jail_system) && rc == 0; i++)
		rc = jail_home_in(jail_system[i].path, &h);
	if (granted == NULL && rc == 0)
		rc = jail_each_read(jail_home_in, &h);
	free(h.real);
	return (rc);
}

/*
 * gmux's own directories must lie outside everything a remote job may
 * read (or, with granted, outside that one): the state (home), the
 * socket's, the configuration's.
 */
static int
jail_check_home(const char *granted, char **cause)
{
	char	*sock, *conf, *slash;
	int	 rc;

	sock = xstrdup(path_socket());
	if ((slash = strrchr(sock, '/')) != NULL)
		*slash = '\0';
	conf = xstrdup(path_config());
	if ((slash = strrchr(conf, '/')) != NULL)
		*slash = '\0';
	rc = jail_check_dir("gmux's state directory", path_home(), granted,
	    cause);
	if (rc == 0)
		rc = jail_check_dir("gmux's socket directory", sock, granted,
		    cause);
	if (rc == 0)
		rc = jail_check_dir("gmux's configuration directory", conf,
		    granted, cause);
	free(sock);
	free(conf);
	return (rc);
}

/* In the probe's child, once confined: may it reach what it must not? */
static dead void
jail_probe_child(void)
{
	const char	*why = NULL;
	int		 fd;

	if ((fd = open(path_db(), O_RDONLY|O_CLOEXEC)) != -1 ||
	    errno != EACCES)
		why = "the probe could open state.db\n";
	else if (kill(getppid(), 0) == 0 || errno != EPERM)
		why = "the probe could signal the daemon\n";
	if (why != NULL) {
		write_all(2, why, strlen(why));
		_exit(1);
	}
	_exit(0);
}

/*
 * Confines a child exactly as a remote job would be (the jail, an open
 * fence), and has it try the daemon's state and the daemon itself.
 * Returns 0 (*ipcns: whether it got an IPC namespace), or -1 with *cause.
 */
static int
jail_probe(int *ipcns, char **cause)
{
	struct jail_spec	 s;
	struct jail		*j;
	struct fence_job	*fj = NULL;
	struct fence		*open;
	json_t			*st;
	char			 buf[256];
	ssize_t			 n;
	pid_t			 pid;
	int			 p[2], ws = 0, rc = -1;

	memset(&s, 0, sizeof s);
	if ((j = jail_create(&s, cause)) == NULL)
		return (-1);
	open = fence_open();
	fj = fence_job_create(open, "/", j, cause);
	fence_free(open);
	if (fj == NULL)
		goto out;
	if (pipe2(p, O_CLOEXEC) != 0 || (pid = fork()) == -1)
		fatal("%s", __func__);
	if (pid == 0) {
		dup2(p[1], 2);
		fence_job_child(fj);	/* exits 126, saying why, if not */
		jail_probe_child();
	}
	close(p[1]);
	fence_job_release(fj);
	while ((n = read(p[0], buf, sizeof buf - 1)) == -1 && errno == EINTR)
		;
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	close(p[0]);
	while (waitpid(pid, &ws, 0) == -1 && errno == EINTR)
		;
	if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
		xasprintf(cause, "%s", *buf ? buf : "the probe failed");
		goto out;
	}
	st = fence_job_stats(fj);
	*ipcns = json_is_true(json_object_get(st, "ipcns"));
	json_decref(st);
	rc = 0;
out:
	fence_job_free(fj);
	jail_free(j);
	return (rc);
}

static int	 jail_state;	/* 0: not checked; 1: ready; -1: cannot */
static char	*jail_why;	/* why not */
static int	 jail_ipcns;	/* the probe got an IPC namespace */

/*
 * Whether remote jobs can be confined here: checked once (the kernel's
 * Landlock, gmux's directories, a confined probe), then remembered.
 * Returns 0, or -1 with *cause.
 */
int
jail_ready(char **cause)
{
	if (jail_state == 0) {
		if (jail_check_home(NULL, &jail_why) == 0 &&
		    jail_probe(&jail_ipcns, &jail_why) == 0)
			jail_state = 1;
		else
			jail_state = -1;
	}
	if (jail_state == 1)
		return (0);
	xasprintf(cause, "this host cannot confine remote jobs: %s",
	    jail_why);
	return (-1);
}

/*
 * Has the host's operator opened its loopback to remote jobs
 * (REMOTE_LOOPBACK=1)?  Else they reach only what they bound themselves.
 */
int
jail_open_loopback(void)
{
	return (config_uint("REMOTE_LOOPBACK", 0, 0, 1) == 1);
}

/* Has the host's operator said remote jobs may run unconfined? */
static int
jail_opted_out(void)
{
	return (config_uint("REMOTE_UNCONFINED", 0, 0, 1) == 1);
}

/*
 * A job that came over TCP: it runs confined (*confined 1), unconfined
 * where it cannot be and the operator said so (REMOTE_UNCONFINED=1,
 * *confined 0), or not at all: -1 with *cause.
 */
int
jail_remote_job(int *confined, char **cause)
{
	char	*why = NULL;

	*confined = 0;
	if (jail_ready(&why) == 0) {
		*confined = 1;
		return (0);
	}
	if (jail_opted_out()) {
		free(why);
		return (0);
	}
	xasprintf(cause, "%s; remote jobs are refused (the host's operator "
	    "may set REMOTE_UNCONFINED=1 to run them unconfined: "
	    "docs/isolation.md)", why);
	free(why);
	return (-1);
}

/*
 * At gmux serve --addr: says on stderr (still the terminal) and in the log
 * how remote jobs will run here: confined, refused, or (the operator's
 * choice) unconfined.
 */
void
jail_serve_check(void)
{
	char	*why = NULL, *line;

	if (jail_ready(&why) == 0)
		xasprintf(&line, "remote jobs run confined (Landlock ABI %d): "
		    "the system's files read-only, their own tree and tmp, "
		    "nothing else of this host's; no signal or abstract socket "
		    "out; AF_UNIX only in their own directories; %s",
		    jail_abi(), jail_ipcns ? "an IPC namespace of their own" :
		    "SysV IPC shared (no user namespaces here)");
	else if (jail_opted_out())
		xasprintf(&line, "WARNING: %s; remote jobs run UNCONFINED, as "
		    "the daemon's user (REMOTE_UNCONFINED=1)", why);
	else
		xasprintf(&line, "%s; remote jobs will be refused "
		    "(docs/isolation.md)", why);
	fprintf(stderr, "gmux serve: %s\n", line);
	log_info("%s", line);
	free(line);
	free(why);
}
