/* cmd-explain.c: gmux explain, why a job waits or where it runs. */

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"

static int	cmd_explain_exec(int, char **);

const struct cmd_entry cmd_explain_entry = {
	.name = "explain",
	.args = "[--json] JOB",
	.help = "why a job waits, or where it runs and why",
	.options =
	    "  --json               the job object with an explain field\n",
	.exec = cmd_explain_exec,
};

enum { OPT_JSON = 256 };

static const struct option explain_opts[] = {
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static int
cmd_explain_exec(int argc, char **argv)
{
	json_t		*o;
	char		*path;
	const char	*text;
	size_t		 len;
	int		 ch, json = 0;

	while ((ch = cmd_getopt(&cmd_explain_entry, argc, argv, "h",
	    explain_opts)) != -1) {
		if (ch == OPT_JSON)
			json = 1;
	}
	if (optind + 1 != argc)
		cmd_usage_error(&cmd_explain_entry, "one job is needed");
	xasprintf(&path, "/v1/jobs/%s/explain", argv[optind]);
	o = cmd_call(&cmd_explain_entry, "GET", path, NULL);
	if (json)
		json_print(o, stdout);
	else if ((text = json_string_value(json_object_get(o,
	    "explain"))) != NULL) {
		/* Several lines end with a newline, one line does not. */
		len = strlen(text);
		printf("%s%s", text, len > 0 && text[len - 1] == '\n' ? "" :
		    "\n");
	}
	json_decref(o);
	free(path);
	return (0);
}
