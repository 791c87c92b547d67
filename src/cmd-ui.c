/* cmd-ui.c: gmux ui, the dashboard of the chosen host in a local browser. */

#include <sys/socket.h>

#include <netinet/in.h>

#include <arpa/inet.h>

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "ui-int.h"

static int	cmd_ui_exec(int, char **);

const struct cmd_entry cmd_ui_entry = {
	.name = "ui",
	.args = "[--port N]",
	.help = "print a local address that opens the host's dashboard",
	.options =
	    "  --port N             listen on 127.0.0.1:N (default: any free "
	    "port)\n"
	    "\nListens on loopback and passes the browser's requests to the "
	    "local daemon's\nsocket, or with --remote NAME (or the default "
	    "remote) to that host over\nits pinned TLS, adding its token. "
	    "The address printed works once (it holds\na one-time secret); "
	    "stop with Ctrl-C.  The host serves the dashboard with\n"
	    "gmux serve --ui.  See docs/ui.md.\n",
	.exec = cmd_ui_exec,
};

enum { OPT_PORT = 256 };

static const struct option ui_opts[] = {
	{ "port", required_argument, NULL, OPT_PORT },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

/* A socket on 127.0.0.1:*port (0: any); *port is the one it got. */
static int
ui_listen(int *port, char **cause)
{
	struct sockaddr_in	 sin;
	socklen_t		 len = sizeof sin;
	int			 fd, on = 1;

	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)*port);
	if ((fd = socket(AF_INET, SOCK_STREAM|SOCK_CLOEXEC, 0)) == -1)
		fatal("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
	if (bind(fd, (struct sockaddr *)&sin, sizeof sin) != 0 ||
	    listen(fd, 64) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) != 0) {
		xasprintf(cause, "127.0.0.1:%d: %s", *port, strerror(errno));
		close(fd);
		return (-1);
	}
	*port = ntohs(sin.sin_port);
	return (fd);
}

/*
 * Is the host there, the key it shows the pinned one, and its dashboard
 * on?  Said before anything is served.
 */
static int
ui_check(const struct remote *rm, char **cause)
{
	struct client_reply	 r;
	const char		*name = rm != NULL ? rm->name : "this host";
	int			 rc = -1;

	if (client_call_at(rm != NULL ? &rm->target : NULL, "GET",
	    "/v1/session", NULL, &r) != 0)
		xasprintf(cause, "%s: %s", name, r.error);
	else if (r.status >= 400)
		xasprintf(cause, "%s: %s", name, r.error != NULL ? r.error :
		    "no dashboard (an older gmux?)");
	else if (!json_is_true(json_object_get(r.body, "ui")))
		xasprintf(cause, "%s does not serve the dashboard: start it "
		    "with gmux serve --ui (or UI=1 in its config)", name);
	else
		rc = 0;
	client_reply_clear(&r);
	return (rc);
}

static int
cmd_ui_exec(int argc, char **argv)
{
	const struct remote	*rm = NULL;
	char			*cause = NULL;
	u_int			 n;
	int			 ch, port = 0, fd;

	while ((ch = cmd_getopt(&cmd_ui_entry, argc, argv, "h",
	    ui_opts)) != -1) {
		if (ch != OPT_PORT)
			continue;
		if (parse_uint(optarg, 0, 65535, &n, &cause) != 0)
			cmd_usage_error(&cmd_ui_entry, "--port: %s", cause);
		port = (int)n;
	}
	if (optind != argc)
		cmd_usage_error(&cmd_ui_entry, "unexpected argument '%s'",
		    argv[optind]);
	if (hosts_remote() && hosts_candidates(&rm, 1) == 0) {
		fprintf(stderr, "gmux ui: no host (gmux remote add)\n");
		return (1);
	}
	if (rm == NULL && !client_daemon_running()) {
		fprintf(stderr, "gmux ui: no daemon runs here and no remote is "
		    "configured\n");
		return (1);
	}
	if (ui_check(rm, &cause) != 0 || (fd = ui_listen(&port, &cause)) == -1)
		goto fail;
	fprintf(stderr, "gmux: the dashboard of %s; open (once):\n",
	    rm != NULL ? rm->name : "this host");
	if (ui_fwd_serve(rm != NULL ? &rm->target : NULL, fd, port,
	    &cause) == 0)
		return (0);
fail:
	fprintf(stderr, "gmux ui: %s\n", cause);
	free(cause);
	return (1);
}
