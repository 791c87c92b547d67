/* cmd-logs.c: gmux logs and gmux attach, a job's output. */

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"

static int	cmd_logs_exec(int, char **);
static int	cmd_attach_exec(int, char **);

const struct cmd_entry cmd_logs_entry = {
	.name = "logs",
	.args = "[-f] [--from BYTES] JOB",
	.help = "print a job's output so far, or follow it",
	.options =
	    "  -f, --follow         keep printing until the job ends\n"
	    "  --from BYTES         start at this byte of the output\n"
	    "\nA cluster job's (NAME.T) is read through any member.\n",
	.exec = cmd_logs_exec,
};

const struct cmd_entry cmd_attach_entry = {
	.name = "attach",
	.args = "[--from BYTES] JOB",
	.help = "stream a job's output again until it ends; Ctrl-C detaches",
	.options =
	    "  --from BYTES         start at this byte of the output\n"
	    "\nExits with the job's exit code when it ends.  A cluster job's "
	    "(NAME.T) is read\nthrough any member.\n",
	.exec = cmd_attach_exec,
};

enum { OPT_FROM = 256 };

static const struct option logs_opts[] = {
	{ "follow", no_argument, NULL, 'f' },
	{ "from", required_argument, NULL, OPT_FROM },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static int
logs_common(const struct cmd_entry *c, int argc, char **argv, int attach)
{
	struct stream	 s;
	char		*path, *end;
	const char	*short_opts = attach ? "h" : "fh";
	unsigned long long from = 0;
	int		 ch, follow = attach, rc, cluster;

	while ((ch = cmd_getopt(c, argc, argv, short_opts, logs_opts)) != -1) {
		switch (ch) {
		case 'f':
			if (attach)
				cmd_usage_error(c, "unknown option -f");
			follow = 1;
			break;
		case OPT_FROM:
			from = strtoull(optarg, &end, 10);
			if (*optarg < '0' || *optarg > '9' || *end != '\0')
				cmd_usage_error(c, "--from: '%s' is not a byte "
				    "offset", optarg);
			break;
		}
	}
	if (optind + 1 != argc)
		cmd_usage_error(c, "one job is needed");
	stream_init(&s, argv[optind], attach ? STREAM_ATTACH : STREAM_LOGS);
	s.offset = from;
	/* A cluster job's, from any member: it follows it there. */
	cluster = s.cluster = cmd_cluster_id(argv[optind]);
	xasprintf(&path, "/v1/%sjobs/%s/log?from=%llu%s", cluster ?
	    "cluster/" : "", argv[optind], from, follow ? "&follow=1" : "");
	rc = stream_run(&s, "GET", path, NULL, follow);
	free(path);
	if (rc != 0)
		return (rc == 1 ? 0 : 1);
	if (attach && s.ended)
		return (s.exit_code >= 0 ? s.exit_code : 125);
	return (0);
}

static int
cmd_logs_exec(int argc, char **argv)
{
	return (logs_common(&cmd_logs_entry, argc, argv, 0));
}

static int
cmd_attach_exec(int argc, char **argv)
{
	return (logs_common(&cmd_attach_entry, argc, argv, 1));
}
