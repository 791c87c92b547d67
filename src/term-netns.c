/*
 * term-netns.c: a published port of a remote workspace (docs/terminals.md,
 * "Published ports").  Its container has a network namespace of its own,
 * with nothing but its loopback, so its servers are on no address of the
 * host's: the daemon reaches a port from inside that namespace.  A child
 * of the daemon's finds the container, enters its namespace, starts a
 * connect to 127.0.0.1:PORT there and hands the socket back; the socket
 * stays in the container's namespace, and nothing of the host's network
 * is opened.  The daemon waits for neither on its loop (term-dial.c).
 */

#include <sys/socket.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "term-int.h"

#define NETNS_CHILD_S	10	/* a child's life, at most */
#define NETNS_PIDS_MAX	65536	/* processes looked at, at most */

struct netns_proc {
	pid_t	pid;
	pid_t	ppid;
};

/* The processes there are, with their parents; *n of them. */
static struct netns_proc *
netns_procs(size_t *n)
{
	struct netns_proc	*v = NULL;
	struct dirent		*de;
	DIR			*d;
	char			 buf[512], *p;
	size_t			 cap = 0;
	long			 ppid;

	*n = 0;
	if ((d = opendir("/proc")) == NULL)
		return (NULL);
	while ((de = readdir(d)) != NULL && *n < NETNS_PIDS_MAX) {
		if ((p = proc_stat(de->d_name, buf, sizeof buf)) == NULL ||
		    sscanf(p, " %*c %ld", &ppid) != 1)
			continue;
		if (*n == cap) {
			cap = cap == 0 ? 256 : cap * 2;
			v = xreallocarray(v, cap, sizeof *v);
		}
		v[*n].pid = (pid_t)atol(de->d_name);
		v[(*n)++].ppid = (pid_t)ppid;
	}
	closedir(d);
	return (v);
}

/* The inode of pid's network namespace (0: self), or 0 if unknown. */
static ino_t
netns_of(pid_t pid)
{
	struct stat	 sb;
	char		 path[64];

	if (pid == 0)
		snprintf(path, sizeof path, "/proc/self/ns/net");
	else
		snprintf(path, sizeof path, "/proc/%ld/ns/net", (long)pid);
	return (stat(path, &sb) == 0 ? sb.st_ino : 0);
}

/*
 * A process of the job whose keeper is keeper in a network namespace not
 * the daemon's: its container's (podman, conmon and the keeper are in the
 * host's).  -1 if there is none.
 */
static pid_t
netns_container_pid(pid_t keeper)
{
	struct netns_proc	*v;
	pid_t			*todo, found = -1;
	size_t			 n, head = 0, tail = 0, i;
	ino_t			 self = netns_of(0), ns;

	if (keeper <= 1 || (v = netns_procs(&n)) == NULL)
		return (-1);
	todo = xcalloc(n + 1, sizeof *todo);
	todo[tail++] = keeper;
	while (head < tail && found == -1) {
		for (i = 0; i < n && tail <= n; i++) {
			if (v[i].ppid != todo[head] || v[i].pid == keeper)
				continue;
			ns = netns_of(v[i].pid);
			if (ns != 0 && ns != self) {
				found = v[i].pid;
				break;
			}
			todo[tail++] = v[i].pid;
		}
		head++;
	}
	free(todo);
	free(v);
	return (found);
}

/*
 * Enters pid's network namespace: directly where the daemon may (root),
 * else through its user namespace, which a rootless daemon owns.
 */
static int
netns_enter(pid_t pid)
{
	char	 path[64];
	int	 net, user, rc;

	snprintf(path, sizeof path, "/proc/%ld/ns/net", (long)pid);
	if ((net = open(path, O_RDONLY|O_CLOEXEC)) == -1)
		return (-1);
	if ((rc = setns(net, CLONE_NEWNET)) == -1 && errno == EPERM) {
		snprintf(path, sizeof path, "/proc/%ld/ns/user", (long)pid);
		if ((user = open(path, O_RDONLY|O_CLOEXEC)) != -1) {
			if (setns(user, CLONE_NEWUSER) == 0)
				rc = setns(net, CLONE_NEWNET);
			close(user);
		}
	}
	close(net);
	return (rc);
}

/*
 * In the child: finds the container, enters its network and starts a
 * connect there, then sends the socket (its connect perhaps still going
 * on: the daemon waits for it on its loop) or why not.  The child has an
 * alarm of its own, so one that hangs goes without the daemon killing a
 * pid that may be another's by then.
 */
static dead void
netns_child(int sock, pid_t keeper, u_int port)
{
	sigset_t	 set;
	char		*cause = NULL;
	pid_t		 pid;
	int		 fd = -1;

	signal(SIGALRM, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	alarm(NETNS_CHILD_S);
	if ((pid = netns_container_pid(keeper)) == -1)
		xasprintf(&cause, "its container is not running");
	else if (netns_enter(pid) != 0)
		xasprintf(&cause, "its container's network: %s",
		    strerror(errno));
	else
		fd = term_port_open(port, &cause);
	if (fd == -1)
		(void)fdpass_send(sock, cause, strlen(cause), -1);
	else
		(void)fdpass_send(sock, "", 1, fd);
	_exit(0);
}

/*
 * The child's answer, once sock is readable: its socket (non-blocking,
 * its connect perhaps going on), or -1 with *cause.
 */
int
term_netns_answer(int sock, char **cause)
{
	char	 buf[256];
	ssize_t	 n;
	int	 fd = -1;

	if ((n = fdpass_recv(sock, buf, sizeof buf - 1, &fd)) <= 0) {
		xasprintf(cause, "its container's network: %s", n == 0 ?
		    "no answer" : strerror(errno));
		return (-1);
	}
	buf[n] = '\0';
	if (fd == -1)
		xasprintf(cause, "%s", buf);
	return (fd);
}

/*
 * Starts a child that connects to 127.0.0.1:port in the network namespace
 * of the container of the job whose keeper is keeper.  Returns the end of
 * the socketpair its answer comes on (term_netns_answer), non-blocking,
 * or -1 with *cause.  Nothing here waits: the child, reaped by the
 * daemon's SIGCHLD as its other children, does the looking.
 */
int
term_netns_start(pid_t keeper, u_int port, char **cause)
{
	pid_t	 child;
	int	 sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET|SOCK_CLOEXEC|SOCK_NONBLOCK,
	    0, sv) == -1) {
		xasprintf(cause, "socketpair: %s", strerror(errno));
		return (-1);
	}
	if ((child = fork_quiet()) == -1) {
		xasprintf(cause, "fork: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return (-1);
	}
	if (child == 0) {
		close(sv[0]);
		netns_child(sv[1], keeper, port);
	}
	close(sv[1]);
	log_debug("%s: child %ld for port %u", __func__, (long)child, port);
	return (sv[0]);
}
