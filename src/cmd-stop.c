/* cmd-stop.c: gmux stop, SIGTERM to a job's group, SIGKILL after a grace. */

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gmux.h"

static int	cmd_stop_exec(int, char **);

const struct cmd_entry cmd_stop_entry = {
	.name = "stop",
	.args = "[--grace DURATION] JOB...",
	.help = "stop jobs: SIGTERM to the whole group, "
	    "SIGKILL after the grace",
	.options =
	    "  --grace DURATION     time between SIGTERM and SIGKILL "
	    "(default: the job's,\n"
	    "                       10s unless it was started with --grace)\n"
	    "  --no-wait            return without waiting for the jobs to "
	    "end\n"
	    "\nA cluster job (NAME.T) is stopped by its member, asked through "
	    "any member, and\nwaited for the same way (with --no-wait: "
	    "\"ID: stop asked\").\n",
	.exec = cmd_stop_exec,
};

enum { OPT_GRACE = 256, OPT_NOWAIT };

static const struct option stop_opts[] = {
	{ "grace", required_argument, NULL, OPT_GRACE },
	{ "no-wait", no_argument, NULL, OPT_NOWAIT },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

/* A local job (an array too) has ended once its record says so. */
static int
stop_ended_local(json_t *o)
{
	return (!json_is_null(json_object_get(o, "ended")));
}

/*
 * A cluster job is stopped by its member, wherever it runs: it has ended
 * once it is no longer queued, assigned or running (an array: once no
 * element is).
 */
static int
stop_ended_cluster(json_t *o)
{
	const char	*st = json_string_value(json_object_get(o, "state"));

	return (st == NULL || (strcmp(st, "queued") != 0 &&
	    strcmp(st, "assigned") != 0 && strcmp(st, "running") != 0));
}

/*
 * An array, or a cluster job, answers a stop at once while it stops:
 * waiting is polling its record at path until ended says it has.
 */
static void
stop_wait(const char *path, int (*ended_cb)(json_t *))
{
	struct timespec		 ts = { 0, 100 * 1000000L };
	struct client_reply	 r;
	int			 ended = 0;

	while (!ended) {
		if (client_call("GET", path, NULL, &r) != 0 || r.status != 200)
			ended = 1;	/* gone: nothing to wait for */
		else
			ended = ended_cb(r.body);
		client_reply_clear(&r);
		if (!ended)
			nanosleep(&ts, NULL);
	}
}

static int
stop_one(const char *job, int64_t grace, int wait)
{
	struct client_reply	 r;
	json_t			*body;
	char			*path;
	int			 rc;

	/* A cluster job's member stops it (docs/cluster.md): asked once. */
	if (cmd_cluster_id(job) && wait) {
		xasprintf(&path, "/v1/cluster/jobs/%s", job);
		stop_wait(path, stop_ended_cluster);
		free(path);
		return (0);
	}
	body = json_pack("{s:b}", "wait", wait);
	if (grace >= 0)
		json_object_set_new(body, "grace_ms", json_integer(grace));
	xasprintf(&path, "/v1/%sjobs/%s/stop", cmd_cluster_id(job) ?
	    "cluster/" : "", job);
	rc = client_call("POST", path, body, &r);
	free(path);
	json_decref(body);
	if (rc != 0 || client_ok(&r, "stop") != 0)
		rc = -1;
	else if (wait && r.status == 202 &&
	    json_object_get(r.body, "count") != NULL) {
		xasprintf(&path, "/v1/jobs/%s", job);
		stop_wait(path, stop_ended_local);
		free(path);
	}
	client_reply_clear(&r);
	return (rc);
}

static int
cmd_stop_exec(int argc, char **argv)
{
	int64_t	 grace = -1;
	int	 ch, i, wait = 1, failed = 0, *bad;

	while ((ch = cmd_getopt(&cmd_stop_entry, argc, argv, "h",
	    stop_opts)) != -1) {
		if (ch == OPT_GRACE)
			grace = cmd_arg_duration(&cmd_stop_entry, "--grace",
			    optarg);
		else if (ch == OPT_NOWAIT)
			wait = 0;
	}
	if (optind >= argc)
		cmd_usage_error(&cmd_stop_entry, "a job is needed");
	/* Signal them all first, then wait: the graces run side by side. */
	bad = xcalloc((size_t)argc, sizeof *bad);
	for (i = optind; i < argc; i++) {
		if ((bad[i] = stop_one(argv[i], grace, 0) != 0))
			failed = 1;
	}
	for (i = optind; i < argc; i++) {
		if (bad[i])
			continue;
		if (!wait && cmd_cluster_id(argv[i]))
			printf("%s: stop asked\n", argv[i]);
		else if (!wait || stop_one(argv[i], grace, 1) == 0)
			printf("%s\n", argv[i]);
	}
	free(bad);
	return (failed);
}
