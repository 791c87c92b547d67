/*
 * keeper.c: the small process that owns one job (like conmon or
 * containerd-shim).  Forked from the daemon, it leaves the daemon's session,
 * starts the job in a process group of its own, appends its output to the
 * job's log as frames, carries out stop requests (SIGTERM to the group, then
 * SIGKILL after the grace period) and writes the exit status when the job
 * ends.  It outlives the daemon: a restarted daemon reconnects to its
 * control socket (jobs/jN/ctl), or reads the status file if it is gone.
 *
 * Control protocol, one line per request on the daemon's link or on a
 * connection to ctl:
 *	stop GRACE_MS REASON	TERM now, KILL after GRACE_MS; REASON is
 *				"stopped" or "preempted"
 *	cancel			no KILL after a "stopped" stop after all
 *	ping			answered "pong"
 * The daemon makes ctl before it forks the keeper.  The keeper tells its
 * daemon link, and each connection to ctl, "pid JOB KEEPER" once the job
 * runs, and every one "exit JSON" (the exit frame's payload) as soon as it
 * has ended, before the status file is made durable.
 *
 * A job whose spec has orphan_ms (a --requeue cluster job) is stopped by
 * the keeper itself once no connection has been open for that long: its
 * cluster may place it again elsewhere after that, daemon or not.
 */

#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

#define KEEPER_MAX_CONNS	8
#define KEEPER_LINE_MAX		256	/* a request's longest line */
#define KEEPER_DRAIN_MS		200
/* a dying CUDA process may take seconds */
#define KEEPER_REAP_MS		10000

struct keeper {
	const struct keeper_spec *spec;
	int		 log_fd;
	int		 out_fd;	/* the job's stdout, -1 at EOF */
	int		 err_fd;
	int		 copy_fd[2];	/* --output, --error files; -1: none */
	int		 sig_fd;
	int		 listen_fd;
	int		 conns[KEEPER_MAX_CONNS];
	/* each connection's line so far (a read may end within one) */
	char		 in[KEEPER_MAX_CONNS][KEEPER_LINE_MAX];
	size_t		 in_len[KEEPER_MAX_CONNS];
	int		 in_over[KEEPER_MAX_CONNS];	/* in a long line */
	pid_t		 pid;		/* the job, leader of its group */
	int		 wstatus;
	int		 exited;
	const char	*reason;	/* "stopped", "preempted", "failed" */
	char		*error;		/* why it failed to start */
	int		 error_code;	/* 126 or 127, as a shell would */
	int64_t		 kill_at;	/* monotonic ms; 0: no stop pending */
	int64_t		 orphan_since;	/* mono ms with no connection; 0 */
	int64_t		 drain_until;
	uint64_t	 lost;		/* bytes the log could not take */
	char		**env;		/* the job's, plus the fence's */
	char		**argv;		/* the job's, or its podman run */
	char		 *path;		/* the command, found in its PATH */
	char		**sh_argv;	/* the same by /bin/sh (no #! line) */
	struct fence_job *fence;	/* NULL: not fenced */
	struct jail	*jail;		/* a remote job's; NULL: none */
	int64_t		 fence_stats_at;
};

/*
 * Appends one frame.  One writev on an O_APPEND file, so a frame is never
 * interleaved; a short write (a full disk) is cut off again, so the log
 * stays a sequence of whole frames, and the lost bytes are counted.
 */
static int
keeper_frame(struct keeper *k, u_char type, const void *data, size_t len)
{
	u_char		 hdr[FRAME_HDR];
	struct iovec	 iov[2];
	struct stat	 st;
	ssize_t		 n;

	frame_header(hdr, type, (uint32_t)len);
	iov[0].iov_base = hdr;
	iov[0].iov_len = sizeof hdr;
	iov[1].iov_base = (void *)data;
	iov[1].iov_len = len;
	while ((n = writev(k->log_fd, iov, 2)) == -1 && errno == EINTR)
		;
	if (n == (ssize_t)(sizeof hdr + len))
		return (0);
	if (n > 0 && fstat(k->log_fd, &st) == 0)
		(void)!ftruncate(k->log_fd, st.st_size - n);
	if (frame_counts(type))
		k->lost += len;
	return (-1);
}

/* In the job, before exec: tells the keeper what failed, then exits. */
static dead void
keeper_child_fail(int errpipe, char stage)
{
	int	 e = errno;

	write_all(errpipe, &stage, 1);
	write_all(errpipe, &e, sizeof e);
	_exit(stage == 'x' && e == ENOENT ? 127 : 126);
}

/*
 * In the job, with accounts (docs/tenants.md): becomes its tenant's
 * account for good, before it enters its directory or execs: no
 * supplementary groups, its GID, its UID, no new privileges; dumpable
 * again (a change of UID clears it), so that its /proc files are its own
 * (the fence writes its user namespace's maps there).  Raw system calls:
 * this may be a vfork child, and the keeper is single-threaded.
 */
static void
keeper_drop(const struct keeper_spec *s, int errpipe)
{
	if (!s->as_account)
		return;
	/* Its jail's tmp, made by the keeper, is its HOME and TMPDIR. */
	if (s->jail != NULL && chown(s->jail->tmp, s->uid, s->gid) != 0)
		keeper_child_fail(errpipe, 'u');
	if (syscall(SYS_setgroups, 0, NULL) != 0 ||
	    syscall(SYS_setresgid, s->gid, s->gid, s->gid) != 0 ||
	    syscall(SYS_setresuid, s->uid, s->uid, s->uid) != 0 ||
	    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0)
		keeper_child_fail(errpipe, 'u');
	/*
	 * Rootless podman maps the account's subordinate IDs with set-uid
	 * newuidmap: its container's processes get no_new_privs instead.
	 */
	if (s->container == NULL && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		keeper_child_fail(errpipe, 'u');
}

/*
 * In the job: its descriptors for exec, 0 to 2 and the error pipe (at 3,
 * close-on-exec) and no other; a container whose fence is installed
 * inside has the fence's socket at 3 (podman --preserve-fds=1) and the
 * error pipe at 4.  Returns the error pipe's.
 */
static int
keeper_child_fds(struct keeper *k, int errpipe)
{
	int	 ep = 3;

	if (k->fence != NULL && k->spec->container != NULL) {
		if ((errpipe = fcntl(errpipe, F_DUPFD_CLOEXEC, 10)) == -1)
			_exit(126);
		fence_job_child_pass(k->fence, 3);
		ep = 4;
	}
	if (dup2(errpipe, ep) == -1)
		_exit(126);
	fcntl(ep, F_SETFD, FD_CLOEXEC);
	closefrom(ep + 1);
	return (ep);
}

/*
 * In the job: the last steps before exec.  Never returns.  The command is
 * looked up in the job's own PATH (the caller's), not the keeper's.
 */
static dead void
keeper_child(struct keeper *k, int out, int err, int errpipe)
{
	const struct keeper_spec	*s = k->spec;
	sigset_t			 set;
	int				 null, ep;

	setpgid(0, 0);
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&set);
	sigprocmask(SIG_SETMASK, &set, NULL);
	if (s->umask >= 0)
		umask((mode_t)s->umask);
	if (s->stdin_path != NULL) {
		if ((null = open(s->stdin_path, O_RDONLY|O_NOFOLLOW)) == -1)
			keeper_child_fail(errpipe, 'i');
		dup2(null, 0);
	} else if ((null = open("/dev/null", O_RDONLY)) != -1)
		dup2(null, 0);
	dup2(out, 1);
	dup2(err, 2);
	keeper_drop(s, errpipe);
	if (s->cwd != NULL && chdir(s->cwd) == -1)
		keeper_child_fail(errpipe, 'c');
	if (k->fence != NULL && s->container == NULL)
		fence_job_child(k->fence);	/* exits 126 if it cannot */
	ep = keeper_child_fds(k, errpipe);
	if (k->path == NULL) {
		errno = ENOENT;
		keeper_child_fail(ep, 'x');
	}
	execve(k->path, k->argv, k->env);
	/* Not a binary nor a #! script: a shell script, as execvp has it. */
	if (errno == ENOEXEC && k->sh_argv != NULL)
		execve("/bin/sh", k->sh_argv, k->env);
	keeper_child_fail(ep, 'x');
}

/*
 * /bin/sh PATH ARGS..., for a command that turns out to be a script with
 * no #! line: made before the (v)fork, where the child may not allocate.
 */
static char **
keeper_sh_argv(struct keeper *k)
{
	char	**v;
	size_t	  n = strv_len(k->argv), i;

	if (k->path == NULL)
		return (NULL);
	v = xcalloc(n + 2, sizeof *v);
	v[0] = (char *)"/bin/sh";
	v[1] = k->path;
	for (i = 1; i < n; i++)
		v[i + 1] = k->argv[i];
	return (v);
}

/* The job's PATH (from its own environment, the caller's). */
static const char *
keeper_job_path(struct keeper *k)
{
	char	**e;

	for (e = k->env; e != NULL && *e != NULL; e++) {
		if (strncmp(*e, "PATH=", 5) == 0)
			return (*e + 5);
	}
	return ("/usr/local/bin:/usr/bin:/bin");
}

/*
 * Finds the command as a shell would, in the job's PATH (relative entries
 * are relative to the job's directory), before the job is forked: the
 * child then only has to exec, which lets it be a vfork.  NULL if it is
 * nowhere; an entry that exists but cannot be run is still returned, so
 * exec says why.
 */
static char *
keeper_resolve(struct keeper *k)
{
	const char	*cmd = k->argv[0], *p, *end, *cwd;
	char		*path, *found = NULL;
	struct stat	 st;
	size_t		 len;

	cwd = k->spec->cwd != NULL ? k->spec->cwd : "/";
	if (strchr(cmd, '/') != NULL) {
		if (*cmd == '/')
			return (xstrdup(cmd));
		xasprintf(&path, "%s/%s", cwd, cmd);
		return (path);
	}
	for (p = keeper_job_path(k); p != NULL; p = *end ? end + 1 : NULL) {
		end = p + strcspn(p, ":");
		len = (size_t)(end - p);
		if (len == 0)
			xasprintf(&path, "%s/%s", cwd, cmd);
		else if (*p == '/')
			xasprintf(&path, "%.*s/%s", (int)len, p, cmd);
		else
			xasprintf(&path, "%s/%.*s/%s", cwd, (int)len, p, cmd);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(path, X_OK) == 0) {
			free(found);
			return (path);
		}
		if (found == NULL && stat(path, &st) == 0 &&
		    S_ISREG(st.st_mode))
			found = path;
		else
			free(path);
	}
	return (found);
}

/*
 * The files --output and --error name (absolute, made by the daemon): the
 * job's stdout and stderr go there as well as to its log.  The same path
 * for both is one file.  They are the job's files: made with its umask.
 */
static int
keeper_open_copies(struct keeper *k)
{
	const char	*path[2] = { k->spec->out_path, k->spec->err_path };
	mode_t		 old = 0;
	int		 i, rc = -1;

	if (k->spec->umask >= 0)
		old = umask((mode_t)k->spec->umask);
	for (i = 0; i < 2; i++) {
		k->copy_fd[i] = -1;
		if (path[i] == NULL)
			continue;
		if (i == 1 && path[0] != NULL && strcmp(path[0], path[1]) == 0)
			k->copy_fd[1] = k->copy_fd[0];
		else if ((k->copy_fd[i] = open(path[i], O_WRONLY|O_CREAT|
		    O_TRUNC|O_APPEND|O_CLOEXEC|O_NOFOLLOW, 0666)) == -1) {
			xasprintf(&k->error, "%s: %s", path[i],
			    strerror(errno));
			k->error_code = 126;
			goto out;
		}
	}
	rc = 0;
out:
	if (k->spec->umask >= 0)
		umask(old);
	return (rc);
}

/* Starts the job; on failure records why (the job then "failed"). */
static int
keeper_start_job(struct keeper *k)
{
	int	 out[2], err[2], ep[2], e = 0;
	char	 stage = 0;
	ssize_t	 n;

	if (keeper_open_copies(k) != 0)
		return (-1);
	if (pipe2(out, O_CLOEXEC) == -1 || pipe2(err, O_CLOEXEC) == -1 ||
	    pipe2(ep, O_CLOEXEC) == -1) {
		xasprintf(&k->error, "pipe: %s", strerror(errno));
		return (-1);
	}
	k->path = keeper_resolve(k);
	k->sh_argv = keeper_sh_argv(k);
	/*
	 * Forking copies the keeper's page tables (a daemon's worth) and can
	 * leave the child waiting for a CPU; a vfork child runs at once and
	 * only execs.  A fenced job needs its keeper alongside it before the
	 * exec (fence_job_start), so it gets a real fork.
	 */
	if (k->fence == NULL)
		k->pid = vfork();
	else
		k->pid = fork();
	if (k->pid == -1) {
		xasprintf(&k->error, "fork: %s", strerror(errno));
		return (-1);
	}
	if (k->pid == 0)
		keeper_child(k, out[1], err[1], ep[1]);
	setpgid(k->pid, k->pid);
	/* No job without its fence: if it cannot start, the job goes. */
	if (k->fence != NULL && fence_job_start(k->fence, &k->error) != 0) {
		kill(k->pid, SIGKILL);
		k->error_code = 126;
	}
	close(out[1]);
	close(err[1]);
	close(ep[1]);
	k->out_fd = out[0];
	k->err_fd = err[0];
	/*
	 * The error pipe closes on a successful exec; a byte means it
	 * failed.
	 */
	while ((n = read(ep[0], &stage, 1)) == -1 && errno == EINTR)
		;
	if (k->error == NULL && n == 1 &&
	    read(ep[0], &e, sizeof e) == (ssize_t)sizeof e) {
		xasprintf(&k->error, "%s: %s", stage == 'c' ? k->spec->cwd :
		    stage == 'i' ? "stdin" : stage == 'u' ? "its account" :
		    k->argv[0], strerror(e));
		k->error_code = stage == 'x' && e == ENOENT ? 127 : 126;
	}
	close(ep[0]);
	set_nonblock(k->out_fd);
	set_nonblock(k->err_fd);
	return (k->error == NULL ? 0 : -1);
}

/*
 * The address of dir's control socket, dir/ctl, through /proc so the path
 * fits sun_path however deep $GMUX_HOME is; returns the directory's fd,
 * to close once the address is used, or -1.
 */
static int
keeper_ctl_addr(const char *dir, struct sockaddr_un *sun)
{
	int	 dfd;

	if ((dfd = open(dir, O_PATH|O_DIRECTORY|O_CLOEXEC)) == -1)
		return (-1);
	memset(sun, 0, sizeof *sun);
	sun->sun_family = AF_UNIX;
	snprintf(sun->sun_path, sizeof sun->sun_path, "/proc/self/fd/%d/ctl",
	    dfd);
	return (dfd);
}

/*
 * The keeper's control socket, jobs/jN/ctl, made by the daemon before it
 * forks the keeper: a daemon stopped in the next millisecond leaves a
 * socket the next daemon can reach (its connection waits in the backlog
 * until the keeper runs), never a live keeper it would take for lost.
 */
static int
keeper_listen(const char *dir)
{
	struct sockaddr_un	 sun;
	int			 fd, dfd;

	if ((dfd = keeper_ctl_addr(dir, &sun)) == -1)
		return (-1);
	unlink(sun.sun_path);
	fd = socket(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC|SOCK_NONBLOCK, 0);
	/* No one can connect before listen: the mode is set in between. */
	if (fd == -1 ||
	    bind(fd, (struct sockaddr *)&sun, sizeof sun) == -1 ||
	    chmod(sun.sun_path, 0600) == -1 ||
	    listen(fd, 8) == -1) {
		if (fd != -1)
			close(fd);
		fd = -1;
	}
	close(dfd);
	return (fd);
}

static void
keeper_signal_group(struct keeper *k, int sig)
{
	if (k->pid > 0)
		kill(-k->pid, sig);
}

/*
 * Withdraws a user's stop: its KILL is no longer pending (gmux run's
 * second Ctrl-C detaches and leaves the job running).  Its TERM was sent;
 * a later stop sends another.  A preemption is not withdrawn.
 */
static void
keeper_cancel(struct keeper *k, int fd)
{
	if (k->exited || k->kill_at == 0 || k->reason == NULL ||
	    strcmp(k->reason, "stopped") != 0) {
		write_all(fd, "none\n", 5);
		return;
	}
	k->kill_at = 0;
	k->reason = NULL;
	write_all(fd, "ok\n", 3);
}

static void
keeper_command(struct keeper *k, int fd, char *line)
{
	long long	 grace;
	char		 why[32];

	if (strcmp(line, "ping") == 0) {
		write_all(fd, "pong\n", 5);
		return;
	}
	if (sscanf(line, "stop %lld %31s", &grace, why) == 2 && grace >= 0) {
		if (grace > 86400000)
			grace = 86400000;
		/*
		 * One TERM per job: a second one makes many programs abandon
		 * their clean shutdown.  A later stop may only bring the KILL
		 * forward.
		 */
		if (!k->exited && k->reason == NULL) {
			k->reason = strcmp(why, "preempted") == 0 ?
			    "preempted" : "stopped";
			keeper_signal_group(k, SIGTERM);
			keeper_signal_group(k, SIGCONT);
		}
		if (!k->exited && (k->kill_at == 0 ||
		    clock_mono_ms() + grace < k->kill_at))
			k->kill_at = clock_mono_ms() + grace;
		write_all(fd, "ok\n", 3);
		return;
	}
	if (strcmp(line, "cancel") == 0) {
		keeper_cancel(k, fd);
		return;
	}
	write_all(fd, "error\n", 6);
}

/*
 * Reads connection i's requests, a line at a time however the reads cut
 * them; a line longer than KEEPER_LINE_MAX is answered "error" once and
 * skipped.  Returns -1 when it is closed.
 */
static int
keeper_read_conn(struct keeper *k, int i)
{
	char	 buf[4096], *p, *nl, *end;
	ssize_t	 n;
	size_t	 len;

	n = read(k->conns[i], buf, sizeof buf);
	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return (0);
	if (n <= 0)
		return (-1);
	for (p = buf, end = buf + n; p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		len = (size_t)(nl - p);
		if (!k->in_over[i] && k->in_len[i] + len < KEEPER_LINE_MAX) {
			memcpy(k->in[i] + k->in_len[i], p, len);
			k->in_len[i] += len;
		} else if (!k->in_over[i]) {
			k->in_over[i] = 1;
			write_all(k->conns[i], "error\n", 6);
		}
		if (nl == end)
			break;
		if (!k->in_over[i]) {
			k->in[i][k->in_len[i]] = '\0';
			keeper_command(k, k->conns[i], k->in[i]);
		}
		k->in_len[i] = 0;
		k->in_over[i] = 0;
	}
	return (0);
}

/*
 * "pid JOB KEEPER": said once the job runs, to the first daemon and to
 * each that connects later (one may have come before the first heard it).
 */
static void
keeper_tell_pid(struct keeper *k, int fd)
{
	char	 msg[64];
	int	 n;

	if (k->pid <= 0)
		return;
	n = snprintf(msg, sizeof msg, "pid %ld %ld\n", (long)k->pid,
	    (long)getpid());
	write_all(fd, msg, (size_t)n);
}

static void
keeper_accept(struct keeper *k)
{
	int	 fd, i;

	if ((fd = accept4(k->listen_fd, NULL, NULL, SOCK_CLOEXEC)) == -1)
		return;
	for (i = 1; i < KEEPER_MAX_CONNS; i++) {
		if (k->conns[i] == -1) {
			k->conns[i] = fd;
			k->orphan_since = 0;	/* a daemon is back */
			keeper_tell_pid(k, fd);
			return;
		}
	}
	close(fd);
}

/* Moves what the job printed into the log; -1 at end of file. */
static int
keeper_pump(struct keeper *k, int fd, u_char type)
{
	static char	 buf[65536];
	ssize_t		 n;

	n = read(fd, buf, sizeof buf);
	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return (0);
	if (n <= 0)
		return (-1);
	keeper_frame(k, type, buf, (size_t)n);
	if (k->copy_fd[type == FRAME_STDERR] != -1 &&
	    write_all(k->copy_fd[type == FRAME_STDERR], buf, (size_t)n) == -1)
		k->copy_fd[type == FRAME_STDERR] = -1;	/* the log has it */
	return (0);
}

/*
 * Kills what the job left behind: its group, and every other descendant.
 * The keeper is a child subreaper, so processes that left the group (a
 * double fork and setsid) are still its children once their parents die.
 */
static void
keeper_kill_rest(struct keeper *k)
{
	char	 path[64], buf[4096], *p, *end;
	ssize_t	 n;
	long	 pid;
	int	 fd;

	keeper_signal_group(k, SIGKILL);
	snprintf(path, sizeof path, "/proc/self/task/%ld/children",
	    (long)getpid());
	if ((fd = open(path, O_RDONLY|O_CLOEXEC)) == -1)
		return;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	for (p = buf; (pid = strtol(p, &end, 10)) > 0; p = end)
		kill((pid_t)pid, SIGKILL);
}

static void
keeper_reap(struct keeper *k)
{
	struct signalfd_siginfo	 si;
	pid_t			 pid;
	int			 ws;

	/* TERM, INT, HUP and QUIT are read and ignored: only ctl stops it. */
	while (read(k->sig_fd, &si, sizeof si) == (ssize_t)sizeof si)
		;
	while ((pid = waitpid(-1, &ws, WNOHANG)) > 0) {
		if (pid != k->pid || k->exited)
			continue;
		k->exited = 1;
		k->wstatus = ws;
		/* The job is over: nothing it started may keep its share. */
		keeper_kill_rest(k);
		k->drain_until = clock_mono_ms() + KEEPER_DRAIN_MS;
	}
}

/* Reaps the last of the job's processes before the keeper goes. */
static void
keeper_reap_all(struct keeper *k)
{
	int64_t	 until = clock_mono_ms() + KEEPER_REAP_MS;

	keeper_kill_rest(k);
	while (clock_mono_ms() < until) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		if (waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD)
			break;
		keeper_kill_rest(k);
		usleep(2000);
	}
}

/* The fence's counters for gmux ps, once a second and at the end. */
static void
keeper_fence_stats(struct keeper *k, int now)
{
	char	*cause = NULL;

	if (!now && clock_mono_ms() < k->fence_stats_at)
		return;
	k->fence_stats_at = clock_mono_ms() + 1000;
	if (fence_job_write_stats(k->fence, "fence", &cause) != 0)
		free(cause);
}

/*
 * What the job's log should say of its fence, among its output: that a
 * remote job's connect to the host's loopback was refused, and why.
 */
static void
keeper_fence_news(struct keeper *k)
{
	char	*line;

	if ((line = fence_job_loopback_news(k->fence)) != NULL) {
		keeper_frame(k, FRAME_STDERR, line, strlen(line));
		free(line);
	}
}

/* A connection closed: with none left, the keeper is an orphan from now. */
static void
keeper_closed(struct keeper *k, int i)
{
	close(k->conns[i]);
	k->conns[i] = -1;
	k->in_len[i] = 0;
	k->in_over[i] = 0;
	for (i = 0; i < KEEPER_MAX_CONNS; i++) {
		if (k->conns[i] != -1)
			return;
	}
	k->orphan_since = clock_mono_ms();
}

/*
 * No daemon for long (docs/cluster.md, "Faults"): the job is stopped so
 * that it is gone by orphan_ms, before its cluster may run it elsewhere.
 * TERM goes its grace before that, but not before half of it (a daemon
 * back soon takes the job over as ever); KILL at orphan_ms at the latest.
 */
static void
keeper_orphan(struct keeper *k)
{
	const struct keeper_spec	*s = k->spec;
	int64_t				 now = clock_mono_ms(), end, term;
	static const char		 msg[] = "gmux: no daemon for long: "
					    "stopped before its cluster may "
					    "run it again elsewhere\n";

	if (s->orphan_ms <= 0 || k->orphan_since == 0 || k->exited)
		return;
	end = k->orphan_since + s->orphan_ms;
	term = end - s->grace_ms;
	if (term < k->orphan_since + s->orphan_ms / 2)
		term = k->orphan_since + s->orphan_ms / 2;
	if (now < term)
		return;
	if (k->reason == NULL) {
		k->reason = "stopped";
		keeper_frame(k, FRAME_STDERR, msg, sizeof msg - 1);
		keeper_signal_group(k, SIGTERM);
		keeper_signal_group(k, SIGCONT);
	}
	if (k->kill_at == 0 || k->kill_at > end)
		k->kill_at = end;
}

static int
keeper_poll_timeout(struct keeper *k)
{
	int64_t	 now = clock_mono_ms(), t = -1;

	if (k->kill_at != 0 && !k->exited)
		t = k->kill_at - now;
	if (k->exited)
		t = k->drain_until - now;
	if (t < 0 && (k->exited || k->kill_at != 0))
		t = 0;
	if (k->fence != NULL && (t < 0 || t > 1000))
		t = 1000;
	if (k->orphan_since != 0 && k->spec->orphan_ms > 0 && !k->exited &&
	    (t < 0 || t > 100))
		t = 100;	/* an orphan: keeper_orphan's next step */
	return (t > 60000 ? 60000 : (int)t);
}

static void
keeper_loop(struct keeper *k)
{
	struct pollfd	 pfd[4 + KEEPER_MAX_CONNS + FENCE_POLLFDS];
	u_int		 nf = 0;
	int		 i, n;

	for (;;) {
		if (k->exited && ((k->out_fd == -1 && k->err_fd == -1) ||
		    clock_mono_ms() >= k->drain_until))
			return;
		keeper_orphan(k);
		if (!k->exited && k->kill_at != 0 &&
		    clock_mono_ms() >= k->kill_at) {
			keeper_signal_group(k, SIGKILL);
			k->kill_at = 0;
		}
		pfd[0] = (struct pollfd){ k->out_fd, POLLIN, 0 };
		pfd[1] = (struct pollfd){ k->err_fd, POLLIN, 0 };
		pfd[2] = (struct pollfd){ k->sig_fd, POLLIN, 0 };
		pfd[3] = (struct pollfd){ k->listen_fd, POLLIN, 0 };
		for (i = 0; i < KEEPER_MAX_CONNS; i++)
			pfd[4 + i] = (struct pollfd){ k->conns[i], POLLIN, 0 };
		if (k->fence != NULL)
			nf = fence_job_pollfds(k->fence,
			    pfd + 4 + KEEPER_MAX_CONNS);
		n = poll(pfd, 4 + KEEPER_MAX_CONNS + nf,
		    keeper_poll_timeout(k));
		if (k->fence != NULL) {
			/* The job waits on its connects: answer those first. */
			if (n > 0) {
				fence_job_dispatch(k->fence,
				    pfd + 4 + KEEPER_MAX_CONNS, nf);
				keeper_fence_news(k);
			}
			keeper_fence_stats(k, 0);
		}
		if (n <= 0)
			continue;
		if (pfd[0].revents && keeper_pump(k, k->out_fd,
		    FRAME_STDOUT) == -1) {
			close(k->out_fd);
			k->out_fd = -1;
		}
		if (pfd[1].revents && keeper_pump(k, k->err_fd,
		    FRAME_STDERR) == -1) {
			close(k->err_fd);
			k->err_fd = -1;
		}
		if (pfd[2].revents)
			keeper_reap(k);
		if (pfd[3].revents)
			keeper_accept(k);
		for (i = 0; i < KEEPER_MAX_CONNS; i++) {
			if (pfd[4 + i].revents == 0)
				continue;
			if (keeper_read_conn(k, i) == -1)
				keeper_closed(k, i);
		}
	}
}

/* The status file, put in place whole (made durable by keeper_sync_status). */
static int
keeper_write_status(const char *text, char **cause)
{
	int	 fd;

	fd = open("status.tmp", O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0600);
	if (fd == -1 || write_all(fd, text, strlen(text)) == -1) {
		xasprintf(cause, "status: %s", strerror(errno));
		if (fd != -1)
			close(fd);
		return (-1);
	}
	close(fd);
	if (rename("status.tmp", "status") == -1) {
		xasprintf(cause, "status: %s", strerror(errno));
		return (-1);
	}
	return (0);
}

static void
keeper_sync_status(void)
{
	int	 fd;

	if ((fd = open("status", O_RDONLY|O_CLOEXEC)) != -1) {
		fsync(fd);
		close(fd);
	}
	if ((fd = open(".", O_RDONLY|O_DIRECTORY|O_CLOEXEC)) != -1) {
		fsync(fd);
		close(fd);
	}
}

/* Records the end: an exit frame in the log, then the status file. */
static void
keeper_finish(struct keeper *k)
{
	json_t		*st;
	char		*text, *line, *cause = NULL, msg[128];
	const char	*state;
	int		 code = 0, sig = 0, i;

	if (k->error != NULL) {
		state = "failed";
		code = k->error_code != 0 ? k->error_code : 126;
	} else if (WIFSIGNALED(k->wstatus)) {
		sig = WTERMSIG(k->wstatus);
		code = 128 + sig;
		state = k->reason != NULL ? k->reason : "exited";
	} else {
		code = WEXITSTATUS(k->wstatus);
		state = k->reason != NULL ? k->reason : "exited";
	}
	st = json_pack("{s:i,s:s,s:I,s:i}", "exit_code", code, "state", state,
	    "ended", (json_int_t)clock_ms(), "pid", (int)k->pid);
	if (sig != 0)
		json_object_set_new(st, "signal", json_integer(sig));
	if (k->error != NULL)
		json_object_set_new(st, "error", json_string(k->error));
	if (k->lost != 0) {
		json_object_set_new(st, "output_lost",
		    json_integer((json_int_t)k->lost));
		snprintf(msg, sizeof msg, "gmux: %llu bytes of output were "
		    "lost (the log's disk is full)\n",
		    (unsigned long long)k->lost);
		keeper_frame(k, FRAME_STDERR, msg, strlen(msg));
	}
	text = json_dumps(st, JSON_COMPACT);
	keeper_frame(k, FRAME_EXIT, text, strlen(text));
	/*
	 * The run's traces go before the daemon hears of its end: the daemon
	 * may start the job again at once (a requeue), in this directory,
	 * under a new keeper, which must find neither this status nor this
	 * keeper's control socket.  Durability comes after, off the path.
	 */
	if (keeper_write_status(text, &cause) != 0)
		free(cause);
	close(k->listen_fd);
	unlink("ctl");
	/* Every daemon connection hears it: the first, or a re-adopting one. */
	xasprintf(&line, "exit %s\n", text);
	for (i = 0; i < KEEPER_MAX_CONNS; i++) {
		if (k->conns[i] != -1)
			write_all(k->conns[i], line, strlen(line));
	}
	free(line);
	keeper_sync_status();
	free(text);
	json_decref(st);
}

/*
 * A remote job's jail and its tmp (made empty: a requeued job's last run
 * may have left one).  Returns -1 with k->error if it cannot be confined.
 */
static int
keeper_jail(struct keeper *k)
{
	const struct jail_spec	*js = k->spec->jail;
	char			*cause = NULL;

	if (confine_remove(js->tmp) != 0 || mkdir(js->tmp, 0700) != 0) {
		xasprintf(&k->error, "confine: %s: %s", js->tmp,
		    strerror(errno));
		return (-1);
	}
	if ((k->jail = jail_create(js, &cause)) == NULL) {
		xasprintf(&k->error, "confine: %s: the job does not run",
		    cause);
		free(cause);
		return (-1);
	}
	return (0);
}

/*
 * The job's fence, and its jail if it came over TCP: a remote job always
 * gets the fence, an open one if it asked for none, for its AF_UNIX rule.
 * Returns -1 with k->error (the job fails, 126) if either cannot be set
 * up.
 */
static int
keeper_confine(struct keeper *k)
{
	const struct keeper_spec	*s = k->spec;
	const struct fence		*policy = s->fence;
	struct fence			*open = NULL;
	const char			*what;

	/*
	 * Its tree first: the keeper moves into the job's user and mount
	 * namespaces and mounts it there, so that the jail's rules and the
	 * fence's paths name what the job will see.
	 */
	if (s->overlay != NULL && overlay_enter(s->overlay, &what) != 0) {
		xasprintf(&k->error, "its tree: %s: %s", what,
		    strerror(errno));
		goto fail;
	}
	/* Not confined: the datasets read-only in its mount namespace. */
	if (s->ro != NULL && tenant_datasets_enter(s->ro, s->overlay != NULL,
	    &what) != 0) {
		xasprintf(&k->error, "DATASETS_DIRECTORIES: %s: %s", what,
		    strerror(errno));
		goto fail;
	}
	if (s->jail != NULL) {
		if (keeper_jail(k) != 0)
			goto fail;
		if (policy == NULL)
			policy = open = fence_open();
	}
	if (policy == NULL)
		return (0);
	k->fence = fence_job_create(policy, s->cwd, k->jail, &k->error);
	fence_free(open);
	if (k->fence == NULL)
		goto fail;
	if (s->container != NULL)
		fence_job_inside(k->fence);
	fence_job_env(k->fence, &k->env);
	return (0);
fail:
	k->error_code = 126;
	return (-1);
}

/*
 * A container job that did not end by its own exit (stopped, killed, or
 * podman failed: 125 to 127) may have left its container: removed before
 * the end is recorded, so no ended job has one.
 */
static void
keeper_container_left(struct keeper *k)
{
	int	 code;

	if (k->spec->container == NULL)
		return;
	code = WIFEXITED(k->wstatus) ? WEXITSTATUS(k->wstatus) : -1;
	if (k->reason != NULL || code < 0 || (code >= 125 && code <= 127))
		container_account_remove(k->spec, k->env);
}

/*
 * An account's container: its image into its store (125 if it fails).
 * Podman's pause process, which holds the account's user namespace for
 * all its podman commands, is started by the first of them: not as the
 * keeper's subreaped child, or the keeper's end would kill it (and the
 * account's next podman would find it gone).  The job is not started yet.
 */
static int
keeper_load_image(struct keeper *k)
{
	int	 rc;

	if (k->spec->container == NULL || !k->spec->as_account)
		return (0);
	prctl(PR_SET_CHILD_SUBREAPER, 0);
	rc = container_account_load(k->spec, k->env, &k->error);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (rc == 0)
		return (0);
	k->error_code = 125;
	return (-1);
}

/*
 * Tests only: GMUX_TEST_KEEPER_PAUSE_MS holds a new keeper before its job
 * starts, to stop the daemon in the window between the fork and the job.
 */
static void
keeper_test_pause(void)
{
	const char	*v = getenv("GMUX_TEST_KEEPER_PAUSE_MS");
	long		 ms;

	if (v != NULL && (ms = strtol(v, NULL, 10)) > 0 && ms <= 60000)
		usleep((useconds_t)ms * 1000);
}

static dead void
keeper_main(const struct keeper_spec *s, int link, int listen_fd)
{
	struct keeper	 k;
	sigset_t	 set;
	int		 i;

	memset(&k, 0, sizeof k);
	k.spec = s;
	k.out_fd = k.err_fd = -1;
	k.copy_fd[0] = k.copy_fd[1] = -1;
	for (i = 0; i < KEEPER_MAX_CONNS; i++)
		k.conns[i] = -1;
	k.conns[0] = link;
	if (chdir(s->dir) == -1)
		_exit(1);
	k.log_fd = open("log", O_WRONLY|O_CREAT|O_APPEND|O_CLOEXEC, 0600);
	if (k.log_fd == -1)
		_exit(1);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	k.sig_fd = signalfd(-1, &set, SFD_NONBLOCK|SFD_CLOEXEC);
	k.listen_fd = listen_fd;
	keeper_test_pause();
	k.env = s->env;
	/* A container's job: the keeper execs its podman run (container.c). */
	k.argv = s->container != NULL ? container_argv(s, k.env) : s->argv;
	if (s->container != NULL && s->container->confined)
		k.env = container_confined_env(k.env);	/* podman's own */
	container_account_env(s, &k.env);
	if (s->container != NULL)
		image_shared_prepare(s->container->image);
	if (keeper_confine(&k) == 0 && keeper_load_image(&k) == 0 &&
	    keeper_start_job(&k) == 0) {
		keeper_tell_pid(&k, link);
		keeper_loop(&k);
		keeper_reap_all(&k);
		keeper_container_left(&k);
	} else {
		keeper_frame(&k, FRAME_STDERR, "gmux: ", 6);
		keeper_frame(&k, FRAME_STDERR, k.error, strlen(k.error));
		keeper_frame(&k, FRAME_STDERR, "\n", 1);
		if (k.pid > 0)
			waitpid(k.pid, NULL, 0);
	}
	if (k.fence != NULL) {
		keeper_fence_stats(&k, 1);
		fence_job_free(k.fence);
	}
	if (s->jail != NULL) {
		jail_free(k.jail);
		confine_remove(s->jail->tmp);
	}
	keeper_finish(&k);
	_exit(0);
}

/*
 * Forks the keeper of spec's job.  A fork, not an exec: the keeper starts
 * with the daemon's pages already mapped, where an exec'd one spends more
 * than a millisecond faulting its code in (measured, bench/run-latency).
 * Returns its pid and, in *link, the daemon's end of a socket pair to it;
 * -1 with *cause on failure.
 */
pid_t
keeper_spawn(const struct keeper_spec *s, int *link, char **cause)
{
	int	 sp[2], fd, sig, lfd;
	pid_t	 pid;

	/* The fence's filter is made once here, not in every keeper. */
	if (s->fence != NULL || s->jail != NULL)
		fence_prepare(s->fence, s->jail != NULL);
	if ((lfd = keeper_listen(s->dir)) == -1) {
		xasprintf(cause, "%s/ctl: %s", s->dir, strerror(errno));
		return (-1);
	}
	if (socketpair(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC, 0, sp) == -1) {
		xasprintf(cause, "socketpair: %s", strerror(errno));
		close(lfd);
		return (-1);
	}
	if ((pid = fork_quiet()) == -1) {
		xasprintf(cause, "fork: %s", strerror(errno));
		close(lfd);
		close(sp[0]);
		close(sp[1]);
		return (-1);
	}
	if (pid == 0) {
		setsid();
		/*
		 * Every disposition back to its default, whatever the daemon
		 * was started with (a job inherits what its keeper ignores);
		 * only SIGPIPE stays ignored here, and the job resets it.
		 */
		for (sig = 1; sig < NSIG; sig++)
			signal(sig, SIG_DFL);
		signal(SIGPIPE, SIG_IGN);
		if ((fd = open("/dev/null", O_RDWR)) != -1) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
		}
		log_child();
		if (dup2(sp[1], 3) == -1 || dup3(lfd, 4, O_CLOEXEC) == -1)
			_exit(1);
		closefrom(5);
		prctl(PR_SET_NAME, "gmux-keeper");
		keeper_main(s, 3, 4);
	}
	close(lfd);
	close(sp[1]);
	*link = sp[0];
	return (pid);
}

/* Connects to a running keeper's control socket; -1 if it is gone. */
int
keeper_connect(u_int id)
{
	struct sockaddr_un	 sun;
	char			*dir;
	int			 fd, dfd;

	dir = path_job(id);
	dfd = keeper_ctl_addr(dir, &sun);
	free(dir);
	if (dfd == -1)
		return (-1);
	fd = socket(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC, 0);
	if (fd != -1 &&
	    connect(fd, (struct sockaddr *)&sun, sizeof sun) == -1) {
		close(fd);
		fd = -1;
	}
	close(dfd);
	return (fd);
}

/*
 * Sends a request line on a keeper's link or control connection, never
 * waiting: a keeper that does not read (wedged, or stopped) fills its link,
 * and the daemon's loop must not wait on it.  -1 if it was not sent whole.
 */
int
keeper_send(int fd, const char *line)
{
	size_t	len = strlen(line);
	ssize_t	n;

	do
		n = send(fd, line, len, MSG_DONTWAIT|MSG_NOSIGNAL);
	while (n == -1 && errno == EINTR);
	return (n == (ssize_t)len ? 0 : -1);
}

/* Reads a finished job's status file; NULL if there is none. */
json_t *
keeper_status(u_int id)
{
	char	*path, *text, *cause = NULL;
	json_t	*st;

	path = path_job_file(id, "status");
	text = read_file(path, 65536, NULL, &cause);
	free(path);
	if (text == NULL) {
		free(cause);
		return (NULL);
	}
	st = json_loads(text, 0, NULL);
	free(text);
	if (st != NULL && !json_is_object(st)) {
		json_decref(st);
		st = NULL;
	}
	return (st);
}
