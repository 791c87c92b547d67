/*
 * cmd-setup.c: gmux setup install|uninstall, gmux as a service started at
 * boot, unattended (setup.c does the work).
 */

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "setup-int.h"

static int	cmd_setup_exec(int, char **);

const struct cmd_entry cmd_setup_entry = {
	.name = "setup",
	.args = "install [--yes] [--user] [--root DIR] | uninstall [--user] "
	    "[--root DIR]",
	.help = "install gmux as a service started at boot, or remove it",
	.options =
	    "  --yes                do it (else install says what it would "
	    "do)\n"
	    "  --user               a user unit, even as root\n"
	    "  --root DIR           install under DIR (default $DESTDIR, or /)"
	    "\n"
	    "\nAs root: /usr/local/bin/gmux, /usr/local/lib/gmux/libgmux.so, "
	    "the manual page\nand bash's completion under /usr/local/share, "
	    "/var/lib/gmux/config and the\nsystem unit "
	    "/etc/systemd/system/gmux.service.  Else the same under "
	    "~/.local,\nthe config where gmux reads it and the user unit "
	    "~/.config/systemd/user/\ngmux.service.  When systemd runs, it "
	    "enables and starts the unit; else it\nsays so.  Both may run "
	    "again; uninstall removes what install made (a config\nchanged "
	    "since is kept).\n",
	.exec = cmd_setup_exec,
	.here = 1,
};

enum { OPT_YES = 256, OPT_ROOT, OPT_USER };

static const struct option setup_opts[] = {
	{ "yes", no_argument, NULL, OPT_YES },
	{ "root", required_argument, NULL, OPT_ROOT },
	{ "user", no_argument, NULL, OPT_USER },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

/* systemctl [--user] ARGS... gmux, when systemd runs and the root is /. */
static void
setup_systemctl(const struct setup *s, const char *what)
{
	char	*cmd;

	if (*s->root != '\0') {
		if (strcmp(what, "start") == 0)
			printf("under --root: the unit is not enabled\n");
		return;
	}
	if (!setup_systemd_running()) {
		printf("systemd is not this machine's init: wrote the unit, "
		    "cannot %s it; run gmux serve -d yourself\n", what);
		return;
	}
	xasprintf(&cmd, "systemctl %s daemon-reload && systemctl %s %s gmux",
	    s->system ? "" : "--user", s->system ? "" : "--user",
	    strcmp(what, "start") == 0 ? "enable --now" : "disable --now");
	if (system(cmd) != 0)
		printf("%s failed\n", cmd);
	else if (!s->system && strcmp(what, "start") == 0)
		printf("for it to start at boot without a login: loginctl "
		    "enable-linger\n");
	free(cmd);
}

static void
setup_plan(const struct setup *s)
{
	printf("would install %s%s/bin/gmux, libgmux.so, gmux.1, bash's "
	    "completion, %s%s and %s%s/gmux.service (%s unit)\n", s->root,
	    s->prefix, s->root, s->config, s->root, s->unitdir,
	    s->system ? "system" : "user");
}

static int
cmd_setup_exec(int argc, char **argv)
{
	struct setup	 s;
	const char	*root = getenv("DESTDIR"), *verb;
	char		*cause = NULL;
	int		 ch, yes = 0, user = 0, rc;

	if (argc > 1 && argv[1][0] == '-') {
		while (cmd_getopt(&cmd_setup_entry, argc, argv, "h",
		    setup_opts) != -1)
			;
	}
	if (argc < 2 || (strcmp(argv[1], "install") != 0 &&
	    strcmp(argv[1], "uninstall") != 0))
		cmd_usage_error(&cmd_setup_entry, "give install or uninstall");
	verb = argv[1];
	while ((ch = cmd_getopt(&cmd_setup_entry, argc - 1, argv + 1, "h",
	    setup_opts)) != -1) {
		if (ch == OPT_YES)
			yes = 1;
		else if (ch == OPT_ROOT)
			root = optarg;
		else if (ch == OPT_USER)
			user = 1;
	}
	if (optind != argc - 1)
		cmd_usage_error(&cmd_setup_entry, "unexpected '%s'",
		    argv[optind + 1]);
	if (root != NULL && *root != '\0' && *root != '/')
		cmd_usage_error(&cmd_setup_entry, "--root: '%s' is not an "
		    "absolute path", root);
	setup_init(&s, root, !user && geteuid() == 0);
	if (strcmp(verb, "install") == 0 && !yes) {
		setup_plan(&s);
		setup_clear(&s);
		cmd_usage_error(&cmd_setup_entry, "install: add --yes to "
		    "do it");
	}
	if (strcmp(verb, "uninstall") == 0)
		setup_systemctl(&s, "stop");
	rc = verb[0] == 'i' ? setup_install(&s, &cause) :
	    setup_uninstall(&s, &cause);
	if (rc != 0)
		fprintf(stderr, "gmux setup: %s\n", cause);
	else if (verb[0] == 'i') {
		printf("installed under %s/ (%s unit)\n", s.root, s.system ?
		    "system" : "user");
		setup_systemctl(&s, "start");
	} else
		printf("uninstalled from %s/\n", s.root);
	free(cause);
	setup_clear(&s);
	return (rc != 0);
}
