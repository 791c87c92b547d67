/* cmd-queue.c: gmux queue, the cluster's queue in the leader's order. */

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"

static int	cmd_queue_exec(int, char **);

const struct cmd_entry cmd_queue_entry = {
	.name = "queue",
	.args = "[--json]",
	.help = "the cluster's queue: position, priority, age",
	.options =
	    "  --json               a JSON array of queued jobs\n",
	.exec = cmd_queue_exec,
	.here = 1,
};

enum { OPT_JSON = 256 };

static const struct option queue_opts[] = {
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static int
cmd_queue_exec(int argc, char **argv)
{
	static const char *const hdr[] = { "POS", "ID", "PRIO", "AGE",
	    "OWNER", "FROM" };
	struct table	*t;
	json_t		*a, *j;
	char		 pos[16], prio[16], *age;
	size_t		 i;
	int		 ch, json = 0;

	while ((ch = cmd_getopt(&cmd_queue_entry, argc, argv, "h",
	    queue_opts)) != -1) {
		if (ch == OPT_JSON)
			json = 1;
	}
	if (optind != argc)
		cmd_usage_error(&cmd_queue_entry, "no argument expected");
	a = cmd_call(&cmd_queue_entry, "GET", "/v1/cluster/queue", NULL);
	if (json) {
		json_print(a, stdout);
		json_decref(a);
		return (0);
	}
	t = table_create(hdr, nitems(hdr));
	json_array_foreach(a, i, j) {
		snprintf(pos, sizeof pos, "%lld", (long long)
		    json_integer_value(json_object_get(j, "position")));
		snprintf(prio, sizeof prio, "%lld", (long long)
		    json_integer_value(json_object_get(j, "prio")));
		age = format_age(clock_ms() - json_integer_value(
		    json_object_get(j, "submitted")));
		table_add(t, pos, json_string_value(json_object_get(j, "id")),
		    prio, age, json_string_value(json_object_get(j, "owner")),
		    json_string_value(json_object_get(j, "from")));
		free(age);
	}
	table_print(t, stdout);
	table_free(t);
	json_decref(a);
	return (0);
}
