/* cmd-doctor.c: gmux doctor, what works here and what to do about the rest. */

#include <getopt.h>
#include <stdlib.h>

#include "gmux.h"
#include "doctor-int.h"

static int	cmd_doctor_exec(int, char **);

const struct cmd_entry cmd_doctor_entry = {
	.name = "doctor",
	.args = "[--json]",
	.help = "check what this host can enforce and each remote",
	.options =
	    "  --json               the checks as a JSON array\n"
	    "\nOne line per check: ok, warn (works, with less) or fail, and "
	    "the fix for each\none not ok.  On a host: the vendors' tools, "
	    "MPS, Landlock's ABI, user\nnamespaces, seccomp's user "
	    "notification, podman and its runtime, etcd when\nthe config "
	    "names it (ETCD), the disk free under GMUX_HOME and the state\n"
	    "files' modes.  On a client: each remote's reachability, pin, "
	    "token and\nversion.  Exits 1 when something the config asks "
	    "for cannot work.\n",
	.exec = cmd_doctor_exec,
	.here = 1,
};

enum { OPT_JSON = 256 };

static const struct option doctor_opts[] = {
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static int
cmd_doctor_exec(int argc, char **argv)
{
	struct doctor	 d = { NULL, 0 };
	json_t		*a;
	int		 ch, json = 0, rc;

	while ((ch = cmd_getopt(&cmd_doctor_entry, argc, argv, "h",
	    doctor_opts)) != -1) {
		if (ch == OPT_JSON)
			json = 1;
	}
	if (optind != argc)
		cmd_usage_error(&cmd_doctor_entry, "unexpected '%s'",
		    argv[optind]);
	doctor_host(&d);
	doctor_remotes(&d);
	if (json) {
		a = doctor_json(&d);
		json_dumpf(a, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(a);
	} else
		doctor_print(&d, stdout);
	rc = doctor_failed(&d);
	doctor_clear(&d);
	return (rc);
}
