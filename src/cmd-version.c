/*
 * cmd-version.c: gmux version, the daemon's if one runs, and each
 * configured host's that answers.
 */

#include <getopt.h>
#include <string.h>

#include "gmux.h"

static int	cmd_version_exec(int, char **);

const struct cmd_entry cmd_version_entry = {
	.name = "version",
	.args = "",
	.help = "print gmux's version, the daemon's and each host's",
	.options = "",
	.exec = cmd_version_exec,
};

static const struct option version_opts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

/* One daemon's version line: "daemon 0.1.0 (api 1)", "gpu1 0.1.0 ...". */
static void
version_said(const char *who, json_t *o)
{
	printf("%s %s (api %lld)\n", who, json_string_value(json_object_get(o,
	    "version")), (long long)json_integer_value(json_object_get(o,
	    "api")));
}

/* Every configured host that answers, asked at once. */
static void
version_hosts(void)
{
	const struct remote	*rv[REMOTES_MAX];
	struct remote_probe	 p[REMOTES_MAX];
	struct client_reply	 r;
	u_int			 i, n;

	n = hosts_configured(rv, REMOTES_MAX);
	memset(p, 0, sizeof p);
	for (i = 0; i < n; i++)
		p[i].rm = rv[i];
	remote_probe(p, n, 0);
	for (i = 0; i < n; i++) {
		if (p[i].error == NULL)
			version_said(rv[i]->name, p[i].version);
		else {
			memset(&r, 0, sizeof r);
			r.error = p[i].error;
			hosts_skipped(rv[i], &r);
		}
	}
	remote_probe_clear(p, n);
}

static int
cmd_version_exec(int argc, char **argv)
{
	struct client_reply	 r;

	while (cmd_getopt(&cmd_version_entry, argc, argv, "h",
	    version_opts) != -1)
		;
	printf("gmux %s\n", GMUX_VERSION);
	if (client_daemon_running()) {
		if (client_call_at(NULL, "GET", "/v1/version", NULL, &r) == 0 &&
		    r.status == 200)
			version_said("daemon", r.body);
		client_reply_clear(&r);
	}
	version_hosts();
	return (0);
}
