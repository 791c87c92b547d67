/* cmd-serve.c: gmux serve, the daemon. */

#include <getopt.h>
#include <stdlib.h>

#include "gmux.h"

static int	cmd_serve_exec(int, char **);

const struct cmd_entry cmd_serve_entry = {
	.name = "serve",
	.args = "[--fake SPEC] [--addr [HOST]:PORT] [--ui] [--announce] [-d] "
	    "[-v]",
	.help = "run the daemon that shares this host's cards",
	.options =
	    "  --fake SPEC          add fake cards, e.g. "
	    "2xH100:80G,1xMI300X:192G\n"
	    "  --addr [HOST]:PORT   also serve remote clients over TLS on TCP "
	    "(:7070: every\n"
	    "                       address); the first time, prints the line "
	    "to paste on\n"
	    "                       a client: gmux remote add NAME "
	    "INVITE@HOST:PORT#PIN\n"
	    "  --ui                 serve the dashboard under /ui (also UI=1 "
	    "in the config;\n"
	    "                       see gmux ui and docs/ui.md)\n"
	    "  --announce           tell the LAN (UDP broadcast, signed, no "
	    "token) where\n"
	    "                       --addr serves and its pin: gmux remote "
	    "discover\n"
	    "  -d, --detach         run in the background once it serves\n"
	    "  -v, --verbose        log every request and job change\n"
	    "  --audit-report-only  report a job's GPU processes that escaped "
	    "the memory\n"
	    "                       cap instead of stopping them\n",
	.exec = cmd_serve_exec,
	.here = 1,
};

static const struct option serve_opts[] = {
	{ "fake", required_argument, NULL, 'f' },
	{ "addr", required_argument, NULL, 'a' },
	{ "ui", no_argument, NULL, 'u' },
	{ "announce", no_argument, NULL, 'n' },
	{ "detach", no_argument, NULL, 'd' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "audit-report-only", no_argument, NULL, 'A' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static int
cmd_serve_exec(int argc, char **argv)
{
	const char	*fake = NULL;
	int		 ch, detach = 0, verbose = log_level();

	while ((ch = cmd_getopt(&cmd_serve_entry, argc, argv, "dvh",
	    serve_opts)) != -1) {
		switch (ch) {
		case 'f':
			fake = optarg;
			break;
		case 'a':
			server_tls_addr = optarg;
			break;
		case 'u':
			ui_on = 1;
			break;
		case 'n':
			server_announce_on = 1;
			break;
		case 'd':
			detach = 1;
			break;
		case 'v':
			verbose = 2;
			break;
		case 'A':
			server_audit_report_only = 1;
			break;
		}
	}
	if (optind != argc)
		cmd_usage_error(&cmd_serve_entry, "unexpected argument '%s'",
		    argv[optind]);
	if (server_announce_on && server_tls_addr == NULL)
		cmd_usage_error(&cmd_serve_entry, "--announce needs --addr (it "
		    "announces the TLS port)");
	if (fake != NULL) {
		struct cards	 check = { NULL, 0 };
		char		*cause;

		if (card_fake_parse(fake, &check, &cause) != 0)
			cmd_usage_error(&cmd_serve_entry, "--fake: %s", cause);
		cards_free(&check);
	}
	log_open(verbose, NULL);
	return (server_main(fake, detach));
}
