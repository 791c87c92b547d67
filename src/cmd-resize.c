/* cmd-resize.c: gmux resize, a running job's guarantee and memory cap. */

#include <getopt.h>
#include <stdlib.h>

#include "gmux.h"

static int	cmd_resize_exec(int, char **);

const struct cmd_entry cmd_resize_entry = {
	.name = "resize",
	.args = "JOB [--share F] [--mem SIZE]",
	.help = "grow or shrink a running job's share and memory cap",
	.options =
	    "  --share F            the new guaranteed fraction (0.01 to 1)\n"
	    "  --mem SIZE           the new memory cap (default: as before, or "
	    "share x the\n"
	    "                       card's memory if it was the default)\n"
	    "\nGrowing must fit now, or is refused with the reason; shrinking "
	    "always\nsucceeds.  docs/isolation.md says what changes at once "
	    "on each card.\n",
	.exec = cmd_resize_exec,
};

enum { OPT_SHARE = 256, OPT_MEM };

static const struct option resize_opts[] = {
	{ "share", required_argument, NULL, OPT_SHARE },
	{ "mem", required_argument, NULL, OPT_MEM },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static int
cmd_resize_exec(int argc, char **argv)
{
	const struct cmd_entry	*c = &cmd_resize_entry;
	json_t			*body, *o;
	char			*path, *share, *mem;
	const char		*job = NULL;
	int			 ch;

	body = json_object();
	/* The job may come before or after the options. */
	if (argc > 1 && argv[1][0] != '-') {
		job = argv[1];
		argv[1] = argv[0];
		argc--;
		argv++;
	}
	while ((ch = cmd_getopt(c, argc, argv, "h", resize_opts)) != -1) {
		if (ch == OPT_SHARE) {
			u_int seats = cmd_arg_share(c, "--share", optarg);
			if (seats == 0)
				cmd_usage_error(c, "--share: at least 0.01");
			json_object_set_new(body, "share",
			    json_real(seats / 100.0));
		} else if (ch == OPT_MEM)
			json_object_set_new(body, "mem", json_integer(
			    (json_int_t)cmd_arg_size(c, "--mem", optarg)));
	}
	if (job == NULL && optind < argc)
		job = argv[optind++];
	if (job == NULL || optind != argc)
		cmd_usage_error(c, "one job is needed");
	if (json_object_size(body) == 0)
		cmd_usage_error(c, "--share or --mem is needed");
	xasprintf(&path, "/v1/jobs/%s", job);
	o = cmd_call(c, "PATCH", path, body);
	share = format_share((u_int)(json_number_value(json_object_get(o,
	    "share")) * 100 + 0.5));
	mem = format_size((uint64_t)json_integer_value(json_object_get(o,
	    "mem")));
	printf("%s: share %s, mem %s\n", job, share, mem);
	free(share);
	free(mem);
	free(path);
	json_decref(o);
	json_decref(body);
	return (0);
}
