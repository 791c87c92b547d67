/*
 * cmd-port.c: gmux port, a local loopback port forwarded to a port a job
 * publishes (docs/terminals.md).  Each connection made to the local port
 * goes over its own upgraded connection to the daemon, in a child of its
 * own, so a slow one holds up no other.
 */

#include <sys/socket.h>

#include <netinet/in.h>

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "term-int.h"

static int	cmd_port_exec(int, char **);

const struct cmd_entry cmd_port_entry = {
	.name = "port",
	.args = "JOB|WORKSPACE PORT [LOCAL]",
	.help = "forward a local port to a port a job publishes (--publish)",
	.options =
	    "\nListens on 127.0.0.1:LOCAL (default: PORT) here and relays "
	    "each connection\nto the job's PORT through the daemon, "
	    "authenticated as every request is;\nnothing listens on the "
	    "host's network. Runs until interrupted. A word that is not a "
	    "job id names a\nworkspace (its --publish ports and its "
	    "devcontainer's forwardPorts). A cluster\njob's (NAME.T) is "
	    "reached through any member.\n",
	.exec = cmd_port_exec,
};

static const struct option port_opts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

/*
 * The job word names: itself if it reads as a job id, else the caller's
 * live workspace of that name (docs/containers.md).  The caller frees it.
 */
static char *
port_job(const struct target *t, const char *word)
{
	struct client_reply	 r;
	json_t			*j;
	const char		*name, *st;
	char			*id = NULL;
	size_t			 i;

	if (jobspec_reads_as_job(word) || cmd_cluster_job_at(t, word))
		return (xstrdup(word));
	if (client_call_at(t, "GET", "/v1/jobs", NULL, &r) != 0 &&
	    r.error == NULL)
		r.error = xstrdup("the request failed");
	if (client_ok(&r, "port") != 0)
		exit(1);
	json_array_foreach(r.body, i, j) {
		name = json_string_value(json_object_get(j, "name"));
		st = json_string_value(json_object_get(j, "state"));
		if (json_is_true(json_object_get(j, "workspace")) &&
		    name != NULL && strcmp(name, word) == 0 && st != NULL &&
		    (strcmp(st, "running") == 0 || strcmp(st, "queued") == 0))
			id = xstrdup(json_string_value(json_object_get(j,
			    "id")));
	}
	client_reply_clear(&r);
	if (id == NULL) {
		fprintf(stderr, "gmux port: no workspace %s\n", word);
		exit(1);
	}
	return (id);
}

/* The job publishes port and runs, or this exits saying why. */
static void
port_check(const struct target *t, const char *job, u_int port)
{
	struct client_reply	 r;
	json_t			*v, *publish;
	char			*path;
	size_t			 i;

	xasprintf(&path, "/v1/%sjobs/%s", cmd_cluster_id(job) ? "cluster/" :
	    "", job);
	if (client_call_at(t, "GET", path, NULL, &r) != 0 && r.error == NULL)
		r.error = xstrdup("the request failed");
	if (client_ok(&r, "port") != 0)
		exit(1);
	free(path);
	/* a cluster job's record has its request (docs/cluster.md) */
	if ((publish = json_object_get(r.body, "publish")) == NULL)
		publish = json_object_get(json_object_get(r.body, "req"),
		    "publish");
	json_array_foreach(publish, i, v) {
		if (json_integer_value(v) == (json_int_t)port) {
			client_reply_clear(&r);
			return;
		}
	}
	fprintf(stderr, "gmux port: %s does not publish port %u "
	    "(--publish)\n", job, port);
	exit(1);
}

/* Listens on 127.0.0.1:port; exits saying why if it cannot. */
static int
port_listen(u_int port)
{
	struct sockaddr_in	 sin;
	int			 fd, one = 1;

	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM|SOCK_CLOEXEC, 0)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof sin) != 0 ||
	    listen(fd, 64) != 0) {
		fprintf(stderr, "gmux port: LOCAL: 127.0.0.1:%u: %s\n", port,
		    strerror(errno));
		exit(1);
	}
	return (fd);
}

/* In a child: one local connection, relayed.  Never returns. */
static dead void
port_relay(const struct target *t, const char *path, int fd)
{
	struct conn	*c;
	char		*cause = NULL;
	long		 status;

	if ((c = term_upgrade(t, path, PORT_UPGRADE, &status,
	    &cause)) == NULL) {
		fprintf(stderr, "gmux port: %s\n", cause);
		_exit(1);
	}
	term_splice(c, fd);
	conn_close(c);
	_exit(0);
}

static int
cmd_port_exec(int argc, char **argv)
{
	const struct cmd_entry	*c = &cmd_port_entry;
	const struct target	*t = term_target();
	char			*path, *cause = NULL, *job;
	u_int			 port, local;
	int			 lfd, fd, ch;

	while ((ch = cmd_getopt(c, argc, argv, "h", port_opts)) != -1)
		cmd_usage_error(c, "unknown flag");
	argc -= optind;
	argv += optind;
	if (argc < 2 || argc > 3)
		cmd_usage_error(c, "JOB and PORT are needed");
	if (strchr(argv[0], '/') != NULL || strchr(argv[0], '?') != NULL)
		cmd_usage_error(c, "JOB: %s is not a job id", argv[0]);
	if (parse_uint(argv[1], 1, 65535, &port, &cause) != 0)
		cmd_usage_error(c, "PORT: %s", cause);
	local = port;
	if (argc == 3 && parse_uint(argv[2], 1, 65535, &local, &cause) != 0)
		cmd_usage_error(c, "LOCAL: %s", cause);
	job = port_job(t, argv[0]);
	port_check(t, job, port);
	lfd = port_listen(local);
	signal(SIGCHLD, SIG_IGN);	/* the relays reap themselves */
	xasprintf(&path, "/v1/%sjobs/%s/port?port=%u", cmd_cluster_id(job) ?
	    "cluster/" : "", job, port);
	fprintf(stderr, "gmux: 127.0.0.1:%u -> %s:%u\n", local, job, port);
	for (;;) {
		if ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) == -1) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			fprintf(stderr, "gmux port: accept: %s\n",
			    strerror(errno));
			return (1);
		}
		if (fork() == 0) {
			close(lfd);
			port_relay(t, path, fd);
		}
		close(fd);
	}
}
