/*
 * cmd.c: the command table.  Each cmd-*.c exports one entry; `gmux help`
 * and `gmux CMD --help` are made from it, and so is every usage error.
 */

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "cmd-int.h"

static const struct cmd_entry *cmd_table[] = {
	&cmd_serve_entry,
	&cmd_run_entry,
	&cmd_submit_entry,
	&cmd_status_entry,
	&cmd_queue_entry,
	&cmd_ps_entry,
	&cmd_logs_entry,
	&cmd_attach_entry,
	&cmd_stop_entry,
	&cmd_resize_entry,
	&cmd_explain_entry,
	&cmd_cards_entry,
	&cmd_top_entry,
	&cmd_ui_entry,
	&cmd_usage_entry,
	&cmd_remote_entry,
	&cmd_token_entry,
	&cmd_tenant_entry,
	&cmd_workspace_entry,
	&cmd_cluster_entry,
	&cmd_workers_entry,
	&cmd_sync_entry,
	&cmd_shell_entry,
	&cmd_port_entry,
	&cmd_version_entry,
	&cmd_doctor_entry,
	&cmd_setup_entry,
	&cmd_completion_entry,
	&cmd_help_entry,
	NULL
};

/* The table's entry number n, or NULL past its end. */
const struct cmd_entry *
cmd_at(u_int n)
{
	if (n >= nitems(cmd_table) - 1)
		return (NULL);
	return (cmd_table[n]);
}

const struct cmd_entry *
cmd_find(const char *name)
{
	const struct cmd_entry	**c;

	for (c = cmd_table; *c != NULL; c++) {
		if (strcmp((*c)->name, name) == 0)
			return (*c);
	}
	return (NULL);
}

/*
 * A command's help: its synopsis, its options and the ones every command
 * takes, then its notes (what follows the first blank line of .options).
 */
void
cmd_print_help(const struct cmd_entry *c, FILE *f)
{
	const char	*opts = c->options != NULL ? c->options : "";
	const char	*notes;
	int		 n;

	fprintf(f, "usage: gmux %s%s%s\n\n%s\n\noptions:\n", c->name,
	    *c->args ? " " : "", c->args, c->help);
	if ((notes = strstr(opts, "\n\n")) != NULL)
		n = (int)(notes - opts) + 1;
	else
		n = (int)strlen(opts);
	fprintf(f, "%.*s", n, opts);
	if (!c->here) {
		fprintf(f, "  --remote NAME        on remote host NAME "
		    "(gmux remote)\n"
		    "  --local              on this machine's daemon\n");
	}
	fprintf(f, "  -h, --help           show this help\n");
	if (notes != NULL)
		fprintf(f, "%s", notes + 1);
}

void
cmd_print_usage(FILE *f)
{
	const struct cmd_entry	**c;

	fprintf(f, "usage: gmux [-v] [--local | --remote NAME] COMMAND "
	    "[ARGS...]\n\n"
	    "gmux shares GPUs: every job gets a capped share of a card.\n\n"
	    "commands:\n");
	for (c = cmd_table; *c != NULL; c++) {
		if (!(*c)->hidden)
			fprintf(f, "  %-10s %s\n", (*c)->name, (*c)->help);
	}
	fprintf(f, "\nRun 'gmux COMMAND --help' for a command's options.\n"
	    "A command goes to --remote NAME, or with --local, or when a "
	    "daemon runs here,\nto this machine's daemon; else to the hosts "
	    "of gmux remote ls.\n"
	    "Files live under $GMUX_HOME when it is set.\n");
}

/* A bad flag or value: one line naming it, and exit code 2. */
void
cmd_usage_error(const struct cmd_entry *c, const char *fmt, ...)
{
	va_list	 ap;

	fprintf(stderr, "gmux %s: ", c->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see gmux %s --help)\n", c->name);
	exit(EXIT_USAGE);
}

/* The options every command takes: where it goes (hosts.c). */
#define CMD_OPT_REMOTE	0x7f00
#define CMD_OPT_LOCAL	0x7f01
static const struct option cmd_where_opts[] = {
	{ "remote", required_argument, NULL, CMD_OPT_REMOTE },
	{ "local", no_argument, NULL, CMD_OPT_LOCAL },
};

/*
 * The command's long options and cmd_where_opts (unless it works on this
 * machine only), in one table.
 */
static const struct option *
cmd_all_opts(const struct cmd_entry *c, const struct option *longopts)
{
	static struct option	 all[64];
	u_int			 n = 0;

	while (longopts[n].name != NULL && n < nitems(all) - 3) {
		all[n] = longopts[n];
		n++;
	}
	if (!c->here) {
		all[n++] = cmd_where_opts[0];
		all[n++] = cmd_where_opts[1];
	}
	memset(&all[n], 0, sizeof all[n]);
	return (all);
}

/*
 * getopt_long for a command: stops at the first operand (so a job's own
 * flags are left alone), turns mistakes into usage errors and answers
 * -h/--help itself.  --remote NAME and --local are taken here.
 */
int
cmd_getopt(const struct cmd_entry *c, int argc, char **argv,
    const char *shortopts, const struct option *longopts)
{
	char	 opts[64];
	int	 ch, idx = 0;

	snprintf(opts, sizeof opts, "+:%s", shortopts);
	opterr = 0;
	do {
		ch = getopt_long(argc, argv, opts, cmd_all_opts(c, longopts),
		    &idx);
		if (ch == CMD_OPT_REMOTE || ch == CMD_OPT_LOCAL)
			hosts_choose(ch == CMD_OPT_LOCAL, optarg);
	} while (ch == CMD_OPT_REMOTE || ch == CMD_OPT_LOCAL);
	switch (ch) {
	case 'h':
		cmd_print_help(c, stdout);
		exit(0);
	case '?':
		if (optopt != 0 && optopt != '?')
			cmd_usage_error(c, "unknown option -%c", optopt);
		cmd_usage_error(c, "unknown option %s", argv[optind - 1]);
	case ':':
		cmd_usage_error(c, "%s needs a value", argv[optind - 1]);
	}
	return (ch);
}

/* The value of an option as a size, a share or a duration, or exit 2. */
uint64_t
cmd_arg_size(const struct cmd_entry *c, const char *opt, const char *v)
{
	uint64_t	 n;
	char		*cause;

	if (parse_size(v, &n, &cause) != 0)
		cmd_usage_error(c, "%s: %s", opt, cause);
	return (n);
}

u_int
cmd_arg_share(const struct cmd_entry *c, const char *opt, const char *v)
{
	u_int	 n;
	char	*cause;

	if (parse_share(v, &n, &cause) != 0)
		cmd_usage_error(c, "%s: %s", opt, cause);
	return (n);
}

int64_t
cmd_arg_duration(const struct cmd_entry *c, const char *opt, const char *v)
{
	int64_t	 n;
	char	*cause;

	if (parse_duration(v, &n, &cause) != 0)
		cmd_usage_error(c, "%s: %s", opt, cause);
	return (n);
}

/* A call's reply body, or its error and exit 1. */
static json_t *
cmd_reply(const struct cmd_entry *c, int rc, struct client_reply *r)
{
	json_t	*o;

	if (rc != 0 || r->status >= 400)
		client_die(r, c->name);
	o = r->body != NULL ? json_incref(r->body) : json_object();
	client_reply_clear(r);
	return (o);
}

/*
 * The same to this machine's daemon alone, whatever the remotes (the
 * commands that manage the host itself: token, tenant).
 */
json_t *
cmd_call_here(const struct cmd_entry *c, const char *method,
    const char *path, json_t *body)
{
	struct client_reply	 r;
	int			 rc;

	rc = client_call_at(NULL, method, path, body, &r);
	return (cmd_reply(c, rc, &r));
}

/* Calls the daemon (or the remotes), or prints the error and exits 1. */
json_t *
cmd_call(const struct cmd_entry *c, const char *method, const char *path,
    json_t *body)
{
	struct client_reply	 r;
	int			 rc;

	rc = client_call(method, path, body, &r);
	return (cmd_reply(c, rc, &r));
}
