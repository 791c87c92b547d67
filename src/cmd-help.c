/* cmd-help.c: gmux help [COMMAND]. */

#include <getopt.h>

#include "gmux.h"
#include "cmd-int.h"

static int	cmd_help_exec(int, char **);

const struct cmd_entry cmd_help_entry = {
	.name = "help",
	.args = "[COMMAND]",
	.help = "show the commands, or one command's options",
	.options = "",
	.exec = cmd_help_exec,
	.here = 1,
};

enum { OPT_MAN = 256 };

/* --man (the manual page, for make) is not in the help: users run man. */
static const struct option help_opts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "man", no_argument, NULL, OPT_MAN },
	{ NULL, 0, NULL, 0 }
};

static int
cmd_help_exec(int argc, char **argv)
{
	const struct cmd_entry	*c;
	int			 ch;

	while ((ch = cmd_getopt(&cmd_help_entry, argc, argv, "h",
	    help_opts)) != -1) {
		if (ch == OPT_MAN) {
			manpage_write(stdout);
			return (0);
		}
	}
	if (optind == argc) {
		cmd_print_usage(stdout);
		return (0);
	}
	if ((c = cmd_find(argv[optind])) == NULL)
		cmd_usage_error(&cmd_help_entry, "no command '%s'",
		    argv[optind]);
	cmd_print_help(c, stdout);
	return (0);
}
