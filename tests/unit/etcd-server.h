/*
 * etcd-server.h: a real etcd (Debian's etcd-server) for a test: one
 * member on free loopback ports with its data in a temporary directory,
 * started and stopped by the test itself.
 */

#ifndef ETCD_SERVER_H
#define ETCD_SERVER_H

#include <sys/socket.h>
#include <sys/wait.h>

#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct etcd_server {
	pid_t	 pid;
	u_int	 port;
	char	 url[64];
	char	 dir[64];
};

static inline u_int
etcd_server_free_port(void)
{
	struct sockaddr_in	 sin;
	socklen_t		 len = sizeof sin;
	int			 fd;
	u_int			 port;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	bind(fd, (struct sockaddr *)&sin, sizeof sin);
	getsockname(fd, (struct sockaddr *)&sin, &len);
	port = ntohs(sin.sin_port);
	close(fd);
	return (port);
}

/* Starts etcd and waits (10 s at most) until it answers; 0 or -1. */
static inline int
etcd_server_start(struct etcd_server *s)
{
	char	 client[64], peer[64], initial[96], cmd[160], *data;
	u_int	 i, pport;

	snprintf(s->dir, sizeof s->dir, "/tmp/gmux-etcd.XXXXXX");
	if (mkdtemp(s->dir) == NULL)
		return (-1);
	s->port = etcd_server_free_port();
	pport = etcd_server_free_port();
	snprintf(s->url, sizeof s->url, "http://127.0.0.1:%u", s->port);
	snprintf(client, sizeof client, "http://127.0.0.1:%u", s->port);
	snprintf(peer, sizeof peer, "http://127.0.0.1:%u", pport);
	snprintf(initial, sizeof initial, "e1=%s", peer);
	xasprintf(&data, "%s/data", s->dir);
	if ((s->pid = fork()) == 0) {
		int fd = open("/dev/null", O_WRONLY);
		dup2(fd, 1);
		dup2(fd, 2);
		execlp("etcd", "etcd", "--name", "e1", "--data-dir", data,
		    "--listen-client-urls", client, "--advertise-client-urls",
		    client, "--listen-peer-urls", peer,
		    "--initial-advertise-peer-urls", peer,
		    "--initial-cluster", initial,
		    (char *)NULL);
		_exit(127);
	}
	free(data);
	snprintf(cmd, sizeof cmd, "curl -sf -o /dev/null %s/health", s->url);
	for (i = 0; i < 200; i++) {
		if (system(cmd) == 0)
			return (0);
		usleep(50000);
	}
	return (-1);
}

/*
 * Stops etcd where it is (SIGSTOP) and returns once every one of its
 * threads has stopped: kill(2) returns before then, and on a loaded
 * machine a thread still running may answer a call made after it.
 */
static inline void
etcd_server_pause(struct etcd_server *s)
{
	int	 st;

	kill(s->pid, SIGSTOP);
	while (waitpid(s->pid, &st, WUNTRACED) == -1 && errno == EINTR)
		;
}

static inline void
etcd_server_resume(struct etcd_server *s)
{
	int	 st;

	kill(s->pid, SIGCONT);
	while (waitpid(s->pid, &st, WCONTINUED) == -1 && errno == EINTR)
		;
}

static inline void
etcd_server_stop(struct etcd_server *s)
{
	char	 cmd[96];
	int	 st;

	if (s->pid > 0) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, &st, 0);
	}
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "%s failed\n", cmd);
}

#endif
