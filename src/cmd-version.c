/* cmd-version.c: gmux version, and the daemon's if one runs. */

#include <getopt.h>

#include "gmux.h"

static int	cmd_version_exec(int, char **);

const struct cmd_entry cmd_version_entry = {
	.name = "version",
	.args = "",
	.help = "print gmux's version and the daemon's",
	.options = "",
	.exec = cmd_version_exec,
};

static const struct option version_opts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static int
cmd_version_exec(int argc, char **argv)
{
	struct client_reply	 r;

	while (cmd_getopt(&cmd_version_entry, argc, argv, "h",
	    version_opts) != -1)
		;
	printf("gmux %s\n", GMUX_VERSION);
	if (!client_daemon_running())
		return (0);
	if (client_call("GET", "/v1/version", NULL, &r) == 0 &&
	    r.status == 200)
		printf("daemon %s (api %lld)\n", json_string_value(
		    json_object_get(r.body, "version")), (long long)
		    json_integer_value(json_object_get(r.body, "api")));
	client_reply_clear(&r);
	return (0);
}
