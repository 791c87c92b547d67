/* cmd-top.c: gmux top, the cards and their jobs, live. */

#include <getopt.h>
#include <stdlib.h>

#include "gmux.h"

static int	cmd_top_exec(int, char **);

const struct cmd_entry cmd_top_entry = {
	.name = "top",
	.args = "[--once]",
	.help = "live view of the cards (guaranteed, burst, memory, use) "
	    "and jobs",
	.options =
	    "  --once               print one frame and exit (also when not "
	    "on a terminal)\n"
	    "\nRedraws each second; q quits.\n",
	.exec = cmd_top_exec,
};

enum { OPT_ONCE = 256 };

static const struct option top_opts[] = {
	{ "once", no_argument, NULL, OPT_ONCE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static json_t *
top_get(const char *path, char **cause)
{
	struct client_reply	 r;
	json_t			*o = NULL;

	if (client_call("GET", path, NULL, &r) != 0 || r.status >= 400)
		xasprintf(cause, "%s", r.error ? r.error : "request failed");
	else
		o = json_incref(r.body);
	client_reply_clear(&r);
	return (o);
}

static int
top_fetch(void *arg, json_t **cards, json_t **jobs, char **cause)
{
	if ((*cards = top_get("/v1/cards", cause)) == NULL)
		return (-1);
	if ((*jobs = top_get("/v1/jobs", cause)) == NULL) {
		json_decref(*cards);
		*cards = NULL;
		return (-1);
	}
	return (0);
}

static int
cmd_top_exec(int argc, char **argv)
{
	char	*cause = NULL;
	int	 ch, once = 0;

	while ((ch = cmd_getopt(&cmd_top_entry, argc, argv, "h",
	    top_opts)) != -1) {
		if (ch == OPT_ONCE)
			once = 1;
	}
	if (optind != argc)
		cmd_usage_error(&cmd_top_entry, "unexpected argument '%s'",
		    argv[optind]);
	if (top_loop(top_fetch, NULL, once, &cause) != 0) {
		fprintf(stderr, "gmux top: %s\n", cause);
		free(cause);
		return (1);
	}
	return (0);
}
