/*
 * proc.c: running a vendor tool and capturing what it prints, with a time
 * limit, so a hung nvidia-smi cannot hang the daemon's start.
 */

#include <sys/wait.h>

#include <dirent.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

#define PROC_MAX_OUTPUT	(16 * 1024 * 1024)

/*
 * In a child just forked: runs argv with its standard output on out, its
 * standard input and error on /dev/null, in a process group of its own
 * (so a timeout can kill its children too) and with SIGPIPE as a tool
 * expects it (the daemon ignores it).  Exits 127 if it cannot.
 */
void
proc_exec(char *const *argv, int out)
{
	int	 null;

	setpgid(0, 0);
	signal(SIGPIPE, SIG_DFL);
	if ((null = open("/dev/null", O_RDWR)) != -1) {
		dup2(null, 0);
		dup2(null, 2);
	}
	dup2(out, 1);
	closefrom(3);
	execvp(argv[0], argv);
	_exit(127);
}

/*
 * Runs argv and returns its standard output, NUL-terminated (the caller
 * frees it), or NULL if it could not be run or ran past timeout_ms.  The
 * exit status goes to *status (-1 if killed).
 */
char *
proc_output(char *const *argv, int timeout_ms, int *status)
{
	int	 p[2], ws;
	pid_t	 pid;
	char	*buf = NULL;
	size_t	 used = 0, size = 0;
	ssize_t	 n;
	int64_t	 deadline = clock_mono_ms() + timeout_ms;
	struct pollfd pfd;

	*status = -1;
	if (pipe2(p, O_CLOEXEC) == -1)
		return (NULL);
	if ((pid = fork_quiet()) == -1) {
		close(p[0]);
		close(p[1]);
		return (NULL);
	}
	if (pid == 0)
		proc_exec(argv, p[1]);
	setpgid(pid, pid);
	close(p[1]);
	pfd.fd = p[0];
	pfd.events = POLLIN;
	for (;;) {
		int64_t left = deadline - clock_mono_ms();
		if (left <= 0 || used > PROC_MAX_OUTPUT) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			free(buf);
			buf = NULL;
			break;
		}
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		if (used + 4097 > size) {
			size = size ? size * 2 : 8192;
			buf = xrealloc(buf, size);
		}
		n = read(p[0], buf + used, size - used - 1);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += (size_t)n;
	}
	close(p[0]);
	while (waitpid(pid, &ws, 0) == -1 && errno == EINTR)
		;
	if (buf != NULL) {
		buf[used] = '\0';
		if (WIFEXITED(ws))
			*status = WEXITSTATUS(ws);
	}
	return (buf);
}

/* Does process pid's environment hold the NAME=VALUE entry? */
static int
proc_has_env(const char *pid, const char *entry)
{
	char	 path[300], buf[65536];
	size_t	 len = strlen(entry) + 1;
	ssize_t	 n;
	size_t	 at;
	int	 fd, found = 0;

	snprintf(path, sizeof path, "/proc/%s/environ", pid);
	if ((fd = open(path, O_RDONLY|O_CLOEXEC)) == -1)
		return (0);
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	for (at = 0; n > 0 && at < (size_t)n && !found; ) {
		found = memcmp(buf + at, entry, len) == 0;
		at += strnlen(buf + at, (size_t)n - at) + 1;
	}
	return (found);
}

/*
 * What /proc/NAME/stat says after the process's name (its state, ppid,
 * pgrp, session ...), read into buf; NULL if NAME is no process's (a
 * /proc entry that is not a pid) or its file cannot be read.
 */
char *
proc_stat(const char *name, char *buf, size_t size)
{
	char	 path[300], *p;
	ssize_t	 len;
	int	 fd;

	if (name[0] < '1' || name[0] > '9')
		return (NULL);
	snprintf(path, sizeof path, "/proc/%s/stat", name);
	if ((fd = open(path, O_RDONLY|O_CLOEXEC)) == -1)
		return (NULL);
	len = read(fd, buf, size - 1);
	close(fd);
	if (len <= 0)
		return (NULL);
	buf[len] = '\0';
	/* pid (comm) state ...: comm may hold ')' */
	return ((p = strrchr(buf, ')')) != NULL ? p + 1 : NULL);
}

/*
 * Sends sig to every process of session sid (a keeper's: it called
 * setsid, so its id names the job's processes even after it is gone) whose
 * environment holds env (the job's GMUX_JOB_ID): a pid reused since, by
 * another session's leader, is left alone.  Returns how many were
 * signalled.
 */
u_int
proc_kill_session(pid_t sid, const char *env, int sig)
{
	struct dirent	*de;
	DIR		*d;
	char		 buf[512], *p;
	long		 s;
	u_int		 n = 0;

	if (sid <= 1 || (d = opendir("/proc")) == NULL)
		return (0);
	while ((de = readdir(d)) != NULL) {
		/* state ppid pgrp session ... */
		if ((p = proc_stat(de->d_name, buf, sizeof buf)) == NULL ||
		    sscanf(p, " %*c %*d %*d %ld", &s) != 1 || s != sid ||
		    !proc_has_env(de->d_name, env))
			continue;
		if (kill((pid_t)atol(de->d_name), sig) == 0)
			n++;
	}
	closedir(d);
	return (n);
}
