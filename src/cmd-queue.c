/* cmd-queue.c: gmux queue, what waits: in order, with why. */

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"

static int	cmd_queue_exec(int, char **);

const struct cmd_entry cmd_queue_entry = {
	.name = "queue",
	.args = "[--json]",
	.help = "the queue: position, priority with age, what each waits for",
	.options =
	    "  --json               a JSON array, in queue order\n"
	    "\nOn a cluster's member it is the cluster's queue (gmux cluster "
	    "queue).\n"
	    "\nPRIO is the job's priority, then what waiting has added to it "
	    "(one level\nevery 5 minutes).  An array's elements not made yet "
	    "wait behind its\nelements in the queue, or for its % limit.\n",
	.exec = cmd_queue_exec,
};

enum { OPT_JSON = 256 };

static const struct option queue_opts[] = {
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static void
queue_row(struct table *t, json_t *e)
{
	json_t		*pos = json_object_get(e, "position");
	const char	*id = json_string_value(json_object_get(e, "id"));
	const char	*pending = json_string_value(json_object_get(e,
			    "pending"));
	char		 p[16], prio[32], *waited, name[64];

	if (json_is_integer(pos))
		snprintf(p, sizeof p, "%lld",
		    (long long)json_integer_value(pos));
	else
		snprintf(p, sizeof p, "-");
	snprintf(prio, sizeof prio, "%lld (%.2f)", (long long)
	    json_integer_value(json_object_get(e, "priority")),
	    json_number_value(json_object_get(e, "effective_priority")));
	if (pending != NULL)
		snprintf(name, sizeof name, "%s_[%s]", id, pending);
	else
		snprintf(name, sizeof name, "%s", id ? id : "?");
	waited = format_age(json_integer_value(json_object_get(e,
	    "waited_ms")));
	table_add(t, p, name, json_string_value(json_object_get(e, "owner")),
	    prio, waited, json_string_value(json_object_get(e, "reason")));
	free(waited);
}

static int
cmd_queue_exec(int argc, char **argv)
{
	static const char *const hdr[] = { "POS", "ID", "OWNER", "PRIO",
	    "WAITED", "WAITS FOR" };
	const struct cmd_entry	*c = &cmd_queue_entry;
	struct table		*t;
	json_t			*a, *e;
	size_t			 i;
	int			 ch, json = 0;

	while ((ch = cmd_getopt(c, argc, argv, "h", queue_opts)) != -1) {
		if (ch == OPT_JSON)
			json = 1;
	}
	if (optind != argc)
		cmd_usage_error(c, "no arguments are taken");
	/* a member's queue is the cluster's */
	if (cmd_cluster_member(&cmd_queue_entry))
		return (cmd_cluster_queue(json));
	a = cmd_call(c, "GET", "/v1/queue", NULL);
	if (json) {
		json_print(a, stdout);
		json_decref(a);
		return (0);
	}
	t = table_create(hdr, nitems(hdr));
	json_array_foreach(a, i, e)
		queue_row(t, e);
	table_print(t, stdout);
	table_free(t);
	json_decref(a);
	return (0);
}
