/* gmux.c: main(): global flags, find the command, run it. */

#include <getopt.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"

static const struct option main_opts[] = {
	{ "verbose", no_argument, NULL, 'v' },
	{ "version", no_argument, NULL, 'V' },
	{ "help", no_argument, NULL, 'h' },
	{ "remote", required_argument, NULL, 'r' },
	{ "local", no_argument, NULL, 'l' },
	{ NULL, 0, NULL, 0 }
};

int
main(int argc, char **argv)
{
	const struct cmd_entry	*c;
	int			 ch, verbose = 0;

	setlocale(LC_CTYPE, "");
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "+:vVh", main_opts, NULL)) != -1) {
		switch (ch) {
		case 'v':
			verbose = 2;
			break;
		case 'V':
			printf("gmux %s\n", GMUX_VERSION);
			return (0);
		case 'h':
			cmd_print_usage(stdout);
			return (0);
		case 'r':
		case 'l':
			hosts_choose(ch == 'l', optarg);
			break;
		case ':':
			fprintf(stderr, "gmux: %s needs a value (see gmux "
			    "help)\n", argv[optind - 1]);
			return (EXIT_USAGE);
		default:
			fprintf(stderr, "gmux: unknown option %s (see gmux "
			    "help)\n", argv[optind - 1]);
			return (EXIT_USAGE);
		}
	}
	if (optind == argc) {
		cmd_print_usage(stderr);
		return (EXIT_USAGE);
	}
	if ((c = cmd_find(argv[optind])) == NULL) {
		fprintf(stderr, "gmux: unknown command '%s' (see gmux help)\n",
		    argv[optind]);
		return (EXIT_USAGE);
	}
	log_open(verbose, NULL);
	argc -= optind;
	argv += optind;
	optind = 1;
	return (c->exec(argc, argv));
}
