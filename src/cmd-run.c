/* cmd-run.c: gmux run, a job with a share of a card. */

#include <sys/random.h>
#include <sys/stat.h>

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "jobspec-int.h"

#define RUN_FAILED	125	/* gmux itself failed (as docker run does) */
#define RUN_RETRY_US	500000	/* before a lost submission goes again */

extern char	**environ;

static int	cmd_run_exec(int, char **);

const struct cmd_entry cmd_run_entry = {
	.name = "run",
	.args = "[--share F] [--mem SIZE] [--card N|UUID] [--cards N] "
	    "[--priority P]\n                [--burst] [--preemptible] "
	    "[--requeue] [--no-wait] [--timeout DUR] [-d]\n"
	    "                [--gpus [TYPE:]N] [--cpus N] [--ram SIZE] "
	    "[--vram SIZE] [--mode M]\n"
	    "                [--time LIMIT] [--array SPEC] [DIRECTIVES...] "
	    "-- COMMAND [ARGS...]",
	.help = "run a command as a job on a share of a card",
	.options =
	    "  --share F            guaranteed fraction of a card, 0.01 to 1 "
	    "(default 0:\n"
	    "                       no card, CPU only)\n"
	    "  --mem SIZE           memory cap, like 20G (default: share x the "
	    "card's)\n"
	    "  --card N|UUID        this card only\n"
	    "  --cards N            N cards at once, each with the share "
	    "(default 1)\n"
	    "  --priority P         0 (lowest) to 9 (default 5)\n"
	    "  --burst              may use idle compute above the guarantee\n"
	    "  --preemptible        may be pushed off by higher priority work\n"
	    "  --requeue            when pushed off, wait again instead of "
	    "ending\n"
	    "  --no-wait            refuse instead of waiting when the cards "
	    "are full\n"
	    "  --timeout DURATION   give up if it has not started by then\n"
	    "  --python NAME        a published interpreter "
	    "(PYTHON_INTERPRETERS) runs\n"
	    "                       the command python or python3\n"
	    "  --deny-net           no network at all\n"
	    "  --allow HOST[:PORT]  may connect there (a name, an address or a "
	    "CIDR range;\n"
	    "                       unix:PATH: a socket file; unix:dgram: "
	    "datagram sockets;\n"
	    "                       repeatable); everything else is refused\n"
	    "  --add-host NAME=ADDR resolve NAME to ADDR for this job "
	    "(repeatable)\n"
	    "  --grace DURATION     from SIGTERM to SIGKILL when stopped "
	    "(default 10s)\n"
	    RUNOPT_HELP
	    "  -d, --detach         print the job's id and return at once\n"
	    "  --idempotency-key K  a retry with K gets the job the first made "
	    "(default:\n"
	    "                       one of its own, for the one retry on a "
	    "lost reply)\n"
	    "  -q, --quiet          say nothing of where it went or what a "
	    "pull fetched\n"
	    "  --pull GLOB          on a remote host: when the job ends, "
	    "fetch its files\n"
	    "                       matching GLOB (as in .gitignore; "
	    "repeatable) into\n"
	    "                       this directory\n"
	    "\nThe job runs in this directory with this environment; its "
	    "output streams\nback and gmux exits with its exit code (128+N "
	    "if killed by signal N;\n125 if gmux itself failed). Ctrl-C stops "
	    "the job; a second Ctrl-C\ndetaches and leaves it running.  To "
	    "a cluster's member, --gpus MODEL:N,\n--server, --nodes or "
	    "--partition make it the cluster's job, placed on any\nmember "
	    "and followed through this one (docs/cluster.md); a gang "
	    "(--nodes N)\nshows rank 0's output and exits with the first "
	    "failure's exit code.\n",
	.exec = cmd_run_exec,
};

enum { OPT_PULL = 256, OPT_KEY };

/* run's own flags; the request's come from runopt.c's table. */
static const struct option run_own_opts[] = {
	{ "detach", no_argument, NULL, 'd' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "pull", required_argument, NULL, OPT_PULL },
	{ "idempotency-key", required_argument, NULL, OPT_KEY },
	{ "help", no_argument, NULL, 'h' },
};

/* getopt_long's table: the request's flags, then run's own. */
static const struct option *
run_opts(void)
{
	static struct option	 all[64];

	return (runopt_options(all, nitems(all), run_own_opts,
	    nitems(run_own_opts)));
}

/*
 * The submission's idempotency key: the one given (checked as the daemon
 * will), or a random one, so the retry after a lost reply (a daemon
 * killed while it answered) finds the job the first try made.
 */
static void
run_request_key(json_t *o)
{
	const struct cmd_entry	*c = &cmd_run_entry;
	const char		*k;
	u_char			 r[16];
	char			 key[40];
	u_int			 i;

	if ((k = json_string_value(json_object_get(o, "idempotency_key")))
	    != NULL) {
		if (!jobreq_key_ok(k))
			cmd_usage_error(c, "--idempotency-key: %s",
			    JOBREQ_KEY_RULE);
		return;
	}
	if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
		return;		/* no key: no retry either */
	memcpy(key, "run-", 4);
	for (i = 0; i < sizeof r; i++)
		snprintf(key + 4 + 2 * i, 3, "%02x", r[i]);
	json_object_set_new(o, "idempotency_key", json_string(key));
}

/* The request from the command line: share, caps, command, here and now. */
json_t *
run_request(int argc, char **argv, int *flags, char ***pulls)
{
	const struct cmd_entry	*c = &cmd_run_entry;
	json_t			*o;
	char			*cause = NULL, *why;
	size_t			 n;
	int			 ch;

	o = json_object();
	while ((ch = cmd_getopt(c, argc, argv, "dqh", run_opts())) != -1) {
		switch (ch) {
		case 'd':
			*flags |= RUN_DETACH;
			break;
		case 'q':
			*flags |= RUN_QUIET;
			break;
		case OPT_KEY:
			json_object_set_new(o, "idempotency_key",
			    json_string(optarg));
			break;
		case OPT_PULL:
			if (remote_pull_pattern(optarg, &why) != 0)
				cmd_usage_error(c, "--pull %s", why);
			n = strv_len(*pulls);
			*pulls = xreallocarray(*pulls, n + 2, sizeof **pulls);
			(*pulls)[n] = xstrdup(optarg);
			(*pulls)[n + 1] = NULL;
			break;
		default:
			if (runopt_apply(o, ch - RUNOPT_BASE, optarg,
			    &cause) != 0)
				cmd_usage_error(c, "%s", cause);
			break;
		}
	}
	if (optind >= argc)
		cmd_usage_error(c, "a command to run is needed (gmux run -- "
		    "COMMAND)");
	run_request_key(o);
	run_request_here(c, o, argc - optind, argv + optind);
	/* An array's elements are followed one by one: it is detached. */
	if (json_object_get(o, "array") != NULL)
		*flags |= RUN_DETACH;
	return (o);
}

/*
 * What a request takes from here and now: the command (argc words of
 * argv), this environment, this directory (unless --chdir said), the
 * umask.  gmux run and gmux submit share it.
 */
void
run_request_here(const struct cmd_entry *c, json_t *o, int argc, char **argv)
{
	json_t	*a, *v;
	char	*cwd;
	mode_t	 mask;
	int	 i;

	/* JSON carries UTF-8 only: say so rather than lose an argument. */
	a = json_array();
	for (i = 0; i < argc; i++) {
		if ((v = json_string(argv[i])) == NULL)
			cmd_usage_error(c, "argument %d of the command is not "
			    "valid UTF-8", i);
		json_array_append_new(a, v);
	}
	json_object_set_new(o, "argv", a);
	a = json_array();
	for (i = 0; environ[i] != NULL; i++) {
		/* this caller's own cluster job, if it runs in one: not the
		 * new job's (its member sets that) */
		if (strncmp(environ[i], "GMUX_CLUSTER_JOB=", 17) == 0)
			continue;
		if ((v = json_string(environ[i])) != NULL)
			json_array_append_new(a, v);
		else
			fprintf(stderr, "gmux %s: %.*s is not valid UTF-8; "
			    "the job will not have it\n", c->name,
			    (int)strcspn(environ[i], "="), environ[i]);
	}
	json_object_set_new(o, "env", a);
	if (json_object_get(o, "cwd") == NULL) {	/* (--chdir) */
		if ((cwd = getcwd(NULL, 0)) == NULL) {
			fprintf(stderr, "gmux %s: this directory is gone\n",
			    c->name);
			exit(RUN_FAILED);
		}
		if ((v = json_string(cwd)) == NULL)
			cmd_usage_error(c, "this directory's path is not "
			    "valid UTF-8");
		json_object_set_new(o, "cwd", v);
		free(cwd);
	}
	mask = umask(0);
	umask(mask);
	json_object_set_new(o, "umask", json_integer(mask));
}

/*
 * Takes the idempotency key out of the request: it goes in the query
 * (POST /v1/jobs?idempotency_key=K), which a daemon older than the key
 * ignores, where it would refuse an unknown field.  The caller frees it.
 */
static char *
run_take_key(json_t *req)
{
	const char	*k;
	char		*key = NULL;

	if ((k = json_string_value(json_object_get(req, "idempotency_key")))
	    != NULL)
		key = xstrdup(k);
	json_object_del(req, "idempotency_key");
	return (key);
}

/*
 * Whether to send a submission (to path) once more: its reply was lost
 * (the daemon went away after it had the request) and its idempotency key
 * makes a second try find the job the first one made.  Clears r if so.
 */
int
run_retry(const char *path, struct client_reply *r)
{
	if (!r->lost || strstr(path, "idempotency_key=") == NULL)
		return (0);
	log_debug("%s: no reply (%s); once more", __func__, r->error ?
	    r->error : "?");
	client_reply_clear(r);
	usleep(RUN_RETRY_US);
	return (1);
}

/*
 * The exit code of a submission the daemon refused: 2 if the request was
 * bad (400: what the command line asked for, as a flag it checks itself
 * would be), else 125.
 */
int
run_refused(long status)
{
	return (status == 400 ? EXIT_USAGE : RUN_FAILED);
}

/*
 * POSTs the submission req to path: the job's id (allocated; "?" if the
 * reply had none), or NULL with *rc, the exit code, having said why.
 */
char *
run_post(json_t *req, const char *path, int *rc)
{
	struct client_reply	 r;
	const char		*id;
	char			*s = NULL;

	/* Why, said without -v: a request that got no reply too. */
	*rc = client_call("POST", path, req, &r);
	if (*rc != 0 && run_retry(path, &r))
		*rc = client_call("POST", path, req, &r);
	if (client_ok(&r, "run") != 0 || *rc != 0) {
		if (*rc != 0 && r.error == NULL)
			fprintf(stderr, "gmux run: the request failed\n");
		*rc = run_refused(r.status);
	} else {
		id = json_string_value(json_object_get(r.body, "id"));
		s = xstrdup(id != NULL ? id : "?");
	}
	client_reply_clear(&r);
	return (s);
}

/* -d: the job's id on stdout; the exit code. */
int
run_detached(json_t *req, const char *path)
{
	char	*id;
	int	 rc;

	if ((id = run_post(req, path, &rc)) == NULL)
		return (rc);
	printf("%s\n", id);
	free(id);
	return (0);
}

/*
 * Says in one line why the job ended as it did: it never ran (a --timeout,
 * a Ctrl-C while it waited), could not be started, or was preempted.
 */
void
run_why(const struct stream *s)
{
	struct client_reply	 r;
	const char		*why = NULL;
	char			*path;

	xasprintf(&path, "/v1/jobs/%s", s->job);
	if (client_call("GET", path, NULL, &r) == 0 && r.status == 200)
		why = json_string_value(json_object_get(r.body, "reason"));
	if (why == NULL)
		fprintf(stderr, "gmux run: %s %s before it started\n", s->job,
		    s->state);
	else if (strncmp(why, s->state, strlen(s->state)) == 0)
		fprintf(stderr, "gmux run: %s %s\n", s->job, why);
	else
		fprintf(stderr, "gmux run: %s %s: %s\n", s->job, s->state, why);
	client_reply_clear(&r);
	free(path);
}

static int
cmd_run_exec(int argc, char **argv)
{
	struct stream	 s;
	json_t		*req;
	char		**pulls = NULL, *key, *path;
	int		 flags = 0, rc, cluster;

	req = run_request(argc, argv, &flags, &pulls);
	key = run_take_key(req);
	/* Placed across a cluster's members (docs/cluster.md); a remote
	 * submission is never sent twice. */
	cluster = run_cluster_wanted(req);
	if (hosts_remote() || cluster) {
		free(key);
		if (cluster)
			rc = run_cluster(req, flags, pulls);
		else
			rc = run_remote(req, flags, pulls);
		json_decref(req);
		strv_free(pulls);
		return (rc);
	}
	if (pulls != NULL) {
		fprintf(stderr, "gmux run: --pull is for remote hosts; this "
		    "job runs here, in this directory\n");
		exit(EXIT_USAGE);
	}
	xasprintf(&path, "/v1/jobs%s%s%s", (flags & RUN_DETACH) ? "" :
	    "?attach=1", key == NULL ? "" : (flags & RUN_DETACH) ?
	    "?idempotency_key=" : "&idempotency_key=", key == NULL ? "" : key);
	free(key);
	if (flags & RUN_DETACH) {
		rc = run_detached(req, path);
		json_decref(req);
		free(path);
		return (rc);
	}
	stream_init(&s, NULL, STREAM_RUN);
	rc = stream_run(&s, "POST", path, req, 1);
	json_decref(req);
	free(path);
	if (rc == 1)
		return (130);
	if (rc != 0 || !s.ended)
		return (run_refused(s.refused));
	if (s.exit_code < 0 || strcmp(s.state, "preempted") == 0)
		run_why(&s);
	if (s.exit_code >= 0)
		return (s.exit_code);
	return (s.interrupts > 0 ? 130 : RUN_FAILED);
}
