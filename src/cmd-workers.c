/* cmd-workers.c: gmux workers, the warm Python workers of @mesh calls. */

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"

static int	cmd_workers_exec(int, char **);

const struct cmd_entry cmd_workers_entry = {
	.name = "workers",
	.args = "[--json] [--here]",
	.help = "list the warm workers that run Python @mesh tasks",
	.options =
	    "  --json               a JSON array of worker objects\n"
	    "  --here               on a cluster's member, its own broker's "
	    "only\n",
	.exec = cmd_workers_exec,
};

enum { OPT_JSON = 256, OPT_HERE };

static const struct option workers_opts[] = {
	{ "json", no_argument, NULL, OPT_JSON },
	{ "here", no_argument, NULL, OPT_HERE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static const char *
workers_str(json_t *w, const char *name)
{
	const char	*s = json_string_value(json_object_get(w, name));

	return (s != NULL ? s : "-");
}

/*
 * One worker's row; on a cluster's member (hosts) its broker's member
 * first, and a member that did not answer is a row saying so.
 */
static void
workers_row(struct table *t, json_t *w, int hosts)
{
	json_t	*card = json_object_get(w, "card");
	char	 cardbuf[16], tasks[16], score[32], *share;

	if (json_is_integer(card))
		snprintf(cardbuf, sizeof cardbuf, "%lld",
		    (long long)json_integer_value(card));
	else
		snprintf(cardbuf, sizeof cardbuf, "-");
	snprintf(tasks, sizeof tasks, "%lld",
	    (long long)json_integer_value(json_object_get(w, "tasks")));
	snprintf(score, sizeof score, "%.3g",
	    json_number_value(json_object_get(w, "score")));
	share = format_share((u_int)(json_number_value(json_object_get(w,
	    "share")) * 100 + 0.5));
	if (strcmp(workers_str(w, "state"), "missing") == 0)
		snprintf(tasks, sizeof tasks, "-");
	if (hosts)
		table_add(t, workers_str(w, "host"), workers_str(w, "id"),
		    workers_str(w, "job"), workers_str(w, "owner"), cardbuf,
		    share, workers_str(w, "state"), tasks, score,
		    workers_str(w, "device"), workers_str(w, "pool"),
		    workers_str(w, "member"));
	else
		table_add(t, workers_str(w, "id"), workers_str(w, "job"),
	    workers_str(w, "owner"), cardbuf, share, workers_str(w, "state"),
	    tasks, score, workers_str(w, "device"), workers_str(w, "pool"),
	    workers_str(w, "member"));
	free(share);
}

/* The members that did not answer, on stderr (as gmux usage says). */
static void
workers_missing(json_t *a)
{
	json_t	*w;
	size_t	 i;

	json_array_foreach(a, i, w) {
		if (strcmp(workers_str(w, "state"), "missing") == 0)
			fprintf(stderr, "gmux workers: member %s did not "
			    "answer: %s\n", workers_str(w, "host"),
			    workers_str(w, "error"));
	}
}

static int
cmd_workers_exec(int argc, char **argv)
{
	static const char *const hdr[] = { "HOST", "ID", "JOB", "OWNER",
	    "CARD", "SHARE", "STATE", "TASKS", "SCORE", "DEVICE", "POOL",
	    "MEMBER" };
	struct table	*t;
	json_t		*a, *w;
	size_t		 i;
	int		 ch, json = 0, here = 0, hosts;

	while ((ch = cmd_getopt(&cmd_workers_entry, argc, argv, "h",
	    workers_opts)) != -1) {
		if (ch == OPT_JSON)
			json = 1;
		else if (ch == OPT_HERE)
			here = 1;
	}
	if (optind != argc)
		cmd_usage_error(&cmd_workers_entry, "unexpected argument '%s'",
		    argv[optind]);
	a = cmd_call(&cmd_workers_entry, "GET", here ? "/v1/workers?here=1" :
	    "/v1/workers", NULL);
	workers_missing(a);
	if (json) {
		json_print(a, stdout);
		json_decref(a);
		return (0);
	}
	if (json_array_size(a) == 0)
		printf("no workers\n");
	else {
		/* MEMBER, where each runs, on a cluster's member only */
		w = json_array_get(a, 0);
		hosts = json_object_get(w, "host") != NULL;
		t = table_create(hdr + !hosts, nitems(hdr) - !hosts -
		    (!hosts && json_object_get(w, "member") == NULL));
		json_array_foreach(a, i, w)
			workers_row(t, w, hosts);
		table_print(t, stdout);
		table_free(t);
	}
	json_decref(a);
	return (0);
}
