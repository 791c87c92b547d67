/*
 * cmd-shell.c: gmux shell, a terminal that outlives its client
 * (docs/terminals.md): a job whose command runs in a tmux session on the
 * host, relayed here in raw mode; gmux shell JOB attaches to it again.
 */

#include <sys/ioctl.h>

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "gmux.h"
#include "jobspec-int.h"
#include "term-int.h"

#define SHELL_QUEUED_US	250000	/* between looks at a queued shell */

static int	cmd_shell_exec(int, char **);

const struct cmd_entry cmd_shell_entry = {
	.name = "shell",
	.args = "[--share F] [--mem SIZE] [--publish PORT] [RUN'S FLAGS]\n"
	    "                  [-- COMMAND [ARGS...]]\n       gmux shell JOB\n"
	    "       gmux shell WORKSPACE",
	.help = "a terminal that outlives its client: a tmux session, as a "
	    "job",
	.options =
	    "  --share F            guaranteed fraction of a card (default 0: "
	    "CPU only)\n"
	    "  --mem SIZE           memory cap, like 20G (default: share x the "
	    "card's)\n"
	    "  --publish PORT       the owner may reach this port (gmux port; "
	    "repeatable)\n"
	    "\nAny other flag of gmux run too: the terminal is a job with its "
	    "share, caps,\nfence and books. Starts COMMAND (default: $SHELL, "
	    "else /bin/sh) in a tmux\nsession held by the job's keeper, "
	    "prints its job id and attaches this\nterminal to it. Detach with "
	    "C-b d (tmux's key); a dropped connection detaches\ntoo, and the "
	    "session goes on. gmux shell JOB attaches again, with the screen\n"
	    "as it was. Exits 0 when detached, with the command's status when "
	    "it ended.\ngmux shell WORKSPACE is a terminal inside that "
	    "workspace's container (its\nsh -l): the first starts it, the "
	    "next attach to it; it ends with the workspace.\nTo a cluster's "
	    "member, --gpus MODEL:N, --server or --partition make it the\n"
	    "cluster's job; a cluster job's terminal (NAME.T) is attached "
	    "through any\nmember.\n",
	.exec = cmd_shell_exec,
};

static const struct option shell_own_opts[] = {
	{ "help", no_argument, NULL, 'h' },
};

static const struct option *
shell_opts(void)
{
	static struct option	 all[64];

	return (runopt_options(all, nitems(all), shell_own_opts,
	    nitems(shell_own_opts)));
}

/* The request: run's flags, the command (or the shell), "terminal". */
static json_t *
shell_request(int argc, char **argv, const struct target *t)
{
	const struct cmd_entry	*c = &cmd_shell_entry;
	char			*cause = NULL, *dflt[2];
	json_t			*o = json_object();
	int			 ch;

	while ((ch = cmd_getopt(c, argc, argv, "h", shell_opts())) != -1) {
		if (runopt_apply(o, ch - RUNOPT_BASE, optarg, &cause) != 0)
			cmd_usage_error(c, "%s", cause);
	}
	if (json_object_get(o, "array") != NULL)
		cmd_usage_error(c, "--array: a terminal is one job");
	dflt[0] = getenv("SHELL");
	if (dflt[0] == NULL || *dflt[0] == '\0')
		dflt[0] = (char *)"/bin/sh";
	dflt[1] = NULL;
	if (optind < argc)
		run_request_here(c, o, argc - optind, argv + optind);
	else
		run_request_here(c, o, 1, dflt);
	json_object_set_new(o, "terminal", json_true());
	if (t != NULL) {	/* a remote job runs in its own directory */
		json_object_del(o, "cwd");
		json_object_del(o, "env");
	}
	return (o);
}

/*
 * Starts the terminal job req asks for (POSTed to path: a host's jobs or
 * a cluster's); its id (the caller frees it).
 */
static char *
shell_post(json_t *req, const struct target *t, const char *path)
{
	struct client_reply	 r;
	const char		*id;
	char			*job;
	int			 rc;

	rc = client_call_at(t, "POST", path, req, &r);
	if (client_ok(&r, "shell") != 0 || rc != 0) {
		if (rc != 0 && r.error == NULL)
			fprintf(stderr, "gmux shell: the request failed\n");
		exit(r.status == 400 ? EXIT_USAGE : 1);
	}
	id = json_string_value(json_object_get(r.body, "id"));
	job = xstrdup(id != NULL ? id : "?");
	client_reply_clear(&r);
	return (job);
}

/*
 * The terminal req asks for: the cluster's job where the daemon asked is
 * a member and a placement directive says where (--gpus MODEL:N,
 * --server, --partition), as gmux run's; else the host's.
 */
static char *
shell_start(json_t *req, const struct target *t)
{
	char	*job;

	if (!run_cluster_wanted(req))
		job = shell_post(req, t, "/v1/jobs");
	else if (json_integer_value(json_object_get(req, "nodes")) > 1)
		cmd_usage_error(&cmd_shell_entry, "--nodes: a terminal is "
		    "one job");
	else
		job = shell_post(req, t, "/v1/cluster/jobs");

	fprintf(stderr, "gmux: shell %s (detach: C-b d; attach again: gmux "
	    "shell %s)\n", job, job);
	return (job);
}

/*
 * The shell in workspace name: started, or the live one found again (one
 * per workspace).  Its job id (the caller frees it), or exits.
 */
static char *
shell_in_workspace(const char *name, const struct target *t)
{
	json_t	*req;
	char	*job;

	req = json_pack("{s:b,s:s,s:[ss]}", "terminal", 1, "in_workspace",
	    name, "argv", "/bin/sh", "-l");
	job = shell_post(req, t, "/v1/jobs");
	json_decref(req);
	fprintf(stderr, "gmux: shell %s in workspace %s (detach: C-b d; "
	    "attach again: gmux shell %s)\n", job, name, name);
	return (job);
}

/* The attach request's path, of this terminal's size and type. */
static char *
shell_path(const char *job)
{
	struct winsize	 ws;
	const char	*term = getenv("TERM");
	char		*path;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0 ||
	    ws.ws_row == 0 || ws.ws_col > TERM_SIZE_MAX ||
	    ws.ws_row > TERM_SIZE_MAX) {
		ws.ws_col = 80;
		ws.ws_row = 24;
	}
	if (term == NULL || !term_name_ok(term))
		term = TERM_DEFAULT;
	/* a cluster job's, through any member (docs/cluster.md) */
	xasprintf(&path, "/v1/%sjobs/%s/terminal?cols=%u&rows=%u&term=%s",
	    cmd_cluster_id(job) ? "cluster/" : "", job, ws.ws_col, ws.ws_row,
	    term);
	return (path);
}

/* Attaches, waiting while the job is queued; exits on a refusal. */
static struct conn *
shell_attach(const char *job, const struct target *t)
{
	struct conn	*c;
	char		*path, *cause = NULL;
	long		 status;
	int		 said = 0;

	if (strchr(job, '/') != NULL || strchr(job, '?') != NULL) {
		fprintf(stderr, "gmux shell: %s: not a job id\n", job);
		exit(EXIT_USAGE);
	}
	path = shell_path(job);
	while ((c = term_upgrade(t, path, TERM_UPGRADE, &status,
	    &cause)) == NULL) {
		/* queued, or claimed by its member and not started yet */
		if (status == 409 && (strstr(cause, " is queued") != NULL ||
		    strstr(cause, " has not started on ") != NULL)) {
			if (!said++)
				fprintf(stderr, "gmux: %s\n", cause);
			free(cause);
			cause = NULL;
			usleep(SHELL_QUEUED_US);
			continue;
		}
		fprintf(stderr, "gmux shell: %s\n", cause);
		exit(status == 400 ? EXIT_USAGE : 1);
	}
	free(path);
	return (c);
}

/* Relays this terminal, raw, until a detach or the session's end. */
static int
shell_relay(struct conn *c, const char *job, const char *again)
{
	struct termios	 saved, raw;
	char		*cause = NULL;
	int		 tty = isatty(STDIN_FILENO), code;

	if (tty && tcgetattr(STDIN_FILENO, &saved) == 0) {
		raw = saved;
		cfmakeraw(&raw);
		/* TCSANOW: keys typed before the attach are kept */
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	} else
		tty = 0;
	code = term_relay(c, STDIN_FILENO, STDOUT_FILENO, &cause);
	if (tty)
		tcsetattr(STDIN_FILENO, TCSADRAIN, &saved);
	conn_close(c);
	if (code == -2) {
		fprintf(stderr, "\r\ngmux shell: %s: %s (gmux shell %s "
		    "attaches again)\n", job, cause, again);
		free(cause);
		return (1);
	}
	if (code == -1) {
		fprintf(stderr, "\r\ngmux: detached from %s (gmux shell %s "
		    "attaches again)\n", job, again);
		return (0);
	}
	if (code == -3) {
		fprintf(stderr, "\r\ngmux: the session of %s has ended\n",
		    job);
		return (0);
	}
	return (code);
}

static int
cmd_shell_exec(int argc, char **argv)
{
	const struct target	*t = term_target();
	json_t			*req;
	char			*job;
	const char		*again;
	int			 rc;

	/* gmux shell JOB or WORKSPACE: one word, no "--" before it. */
	if (argc == 2 && argv[1][0] != '-' && (jobspec_reads_as_job(argv[1]) ||
	    cmd_cluster_job_at(t, argv[1])))
		job = xstrdup(argv[1]);
	else if (argc == 2 && argv[1][0] != '-')
		job = shell_in_workspace(argv[1], t);
	else {
		req = shell_request(argc, argv, t);
		job = shell_start(req, t);
		json_decref(req);
	}
	again = argc == 2 && argv[1][0] != '-' ? argv[1] : job;
	rc = shell_relay(shell_attach(job, t), job, again);
	free(job);
	return (rc);
}
