/*
 * cmd-cluster.c: gmux cluster ls/leader/ps/submit, the cluster this
 * machine's daemon is a member of (docs/cluster.md).
 */

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"

static int	cmd_cluster_exec(int, char **);

const struct cmd_entry cmd_cluster_entry = {
	.name = "cluster",
	.args = "ls [-a] [--json] | leader [--json] | ps [--json] | "
	    "queue [--json] | "
	    "submit [RUN-FLAGS] -- COMMAND... | stop ID | logs [-f] ID",
	.help = "the cluster this daemon is a member of",
	.options =
	    "  -a, --all            ls: the members that left too, with "
	    "when last seen\n"
	    "  --json               ls, leader, ps and queue as JSON\n"
	    "  -f, --follow         logs: until the job ends\n"
	    "\nls lists the live members: cards, CPUs, RAM, measured use, "
	    "jobs, the leader.\nleader says who schedules, since when, and "
	    "at what etcd revision.\nps lists the cluster's jobs in every "
	    "state and where they run.\nqueue lists the cluster's queue in "
	    "the leader's order, with what each job waits\nfor (gmux queue "
	    "on a member too).\nsubmit "
	    "queues a job for the cluster with gmux run's flags; it prints "
	    "its id\n(from a client, this directory goes with it, synced "
	    "as gmux run does).\nstop ID stops a cluster job wherever it "
	    "is (queued: at "
	    "once; placed: by its\nmember; a gang: every part).\nlogs ID "
	    "shows the output of a cluster job, wherever it runs (its member "
	    "is\nasked through this one).\n",
	.exec = cmd_cluster_exec,
	.here = 1,
};

enum { OPT_JSON = 256 };

static const struct option cluster_opts[] = {
	{ "all", no_argument, NULL, 'a' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "follow", no_argument, NULL, 'f' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static const char *
cl_str(json_t *o, const char *k)
{
	const char	*s = json_string_value(json_object_get(o, k));

	return (s != NULL ? s : "-");
}

/*
 * GET path, a listing: printed as it is with --json (NULL returned), else
 * returned for a table (the caller frees it).
 */
static json_t *
cl_list(const char *path, int json)
{
	json_t	*a = cmd_call(&cmd_cluster_entry, "GET", path, NULL);

	if (!json)
		return (a);
	json_print(a, stdout);
	json_decref(a);
	return (NULL);
}

static char *
cl_cards(json_t *cards)
{
	json_t	*c;
	size_t	 i;
	char	*s = xstrdup(""), *t, *mem;

	json_array_foreach(cards, i, c) {
		mem = format_size((uint64_t)json_integer_value(
		    json_object_get(c, "memory")));
		xasprintf(&t, "%s%s%s:%s", s, i ? "," : "", cl_str(c, "model"),
		    mem);
		free(mem);
		free(s);
		s = t;
	}
	if (*s == '\0') {
		free(s);
		s = xstrdup("-");
	}
	return (s);
}

/* When member m was last seen: now if it is live, else how long ago. */
static char *
cl_seen(json_t *m)
{
	char	*age, *s;

	if (!json_is_true(json_object_get(m, "gone")))
		return (xstrdup("now"));
	age = format_age(clock_ms() - json_integer_value(json_object_get(m,
	    "last_seen")));
	xasprintf(&s, "%s ago", age);
	free(age);
	return (s);
}

static int
cluster_ls(int json, int all)
{
	static const char *const hdr[] = { "NAME", "CARDS", "CPUS", "RAM",
	    "LOAD", "JOBS", "ADDR", "SEEN", "LEADER" };
	struct table	*t;
	json_t		*a, *m;
	char		*cards, *ram, *seen, cpus[16], load[16], jobs[16];
	size_t		 i;
	int		 gone;

	if ((a = cl_list(all ? "/v1/cluster/members?all=1" :
	    "/v1/cluster/members", json)) == NULL)
		return (0);
	t = table_create(hdr, nitems(hdr));
	json_array_foreach(a, i, m) {
		gone = json_is_true(json_object_get(m, "gone"));
		cards = cl_cards(json_object_get(m, "cards"));
		ram = format_size((uint64_t)json_integer_value(
		    json_object_get(m, "ram")));
		seen = cl_seen(m);
		snprintf(cpus, sizeof cpus, "%lld", (long long)
		    json_integer_value(json_object_get(m, "cpus")));
		snprintf(load, sizeof load, "%.1f", json_number_value(
		    json_object_get(json_object_get(m, "use"), "load")));
		snprintf(jobs, sizeof jobs, "%lld", (long long)
		    json_integer_value(json_object_get(m, "jobs")));
		table_add(t, cl_str(m, "name"), cards, cpus, ram, gone ? "-" :
		    load, gone ? "-" : jobs, cl_str(m, "addr"), seen,
		    json_is_true(json_object_get(m, "leader")) ? "*" : "");
		free(cards);
		free(ram);
		free(seen);
	}
	table_print(t, stdout);
	table_free(t);
	json_decref(a);
	return (0);
}

static int
cluster_leader(int json)
{
	json_t	*o;
	char	*age;

	o = cmd_call(&cmd_cluster_entry, "GET", "/v1/cluster/leader", NULL);
	if (json)
		json_print(o, stdout);
	else {
		age = format_age(clock_ms() - json_integer_value(
		    json_object_get(o, "since")));
		printf("%s leads since %s ago (leader key revision %lld, etcd "
		    "revision %lld)\n", cl_str(o, "name"), age, (long long)
		    json_integer_value(json_object_get(o, "revision")),
		    (long long)json_integer_value(json_object_get(o,
		    "etcd_revision")));
		free(age);
	}
	json_decref(o);
	return (0);
}

/* Has cluster job o (its record, or a status of one) ended? */
int
cmd_cluster_ended(json_t *o)
{
	const char	*st = json_string_value(json_object_get(o, "state"));

	return (st != NULL && (strcmp(st, "exited") == 0 ||
	    strcmp(st, "failed") == 0 || strcmp(st, "stopped") == 0));
}

/*
 * The cluster's jobs (all: ended ones too) as a table; heading: under
 * gmux ps, said only if some job is shown.
 */
static void
cluster_ps_table(json_t *a, int all, const char *heading)
{
	static const char *const hdr[] = { "ID", "STATE", "MEMBER", "OWNER",
	    "EXIT", "AGE", "COMMAND" };
	struct table	*t;
	json_t		*j, *argv, *x;
	char		 code[16], *cmd, *age;
	char		**v;
	size_t		 i, k, shown = 0;

	t = table_create(hdr, nitems(hdr));
	json_array_foreach(a, i, j) {
		if (!all && cmd_cluster_ended(j))
			continue;
		shown++;
		argv = json_object_get(json_object_get(j, "req"), "argv");
		v = xcalloc(json_array_size(argv) + 1, sizeof *v);
		json_array_foreach(argv, k, x)
			v[k] = (char *)json_string_value(x);
		cmd = strv_join(v, " ");
		free(v);
		x = json_object_get(j, "exit_code");
		snprintf(code, sizeof code, "%s", "-");
		if (json_is_integer(x) && json_integer_value(x) >= 0)
			snprintf(code, sizeof code, "%lld",
			    (long long)json_integer_value(x));
		age = format_age(clock_ms() - json_integer_value(
		    json_object_get(j, "submitted")));
		table_add(t, cl_str(j, "id"), cl_str(j, "state"),
		    cl_str(j, "member"), cl_str(j, "owner"), code, age, cmd);
		free(age);
		free(cmd);
	}
	if (heading == NULL || shown > 0) {
		if (heading != NULL)
			printf("\n%s\n", heading);
		table_print(t, stdout);
	}
	table_free(t);
}

static int
cluster_ps(int json)
{
	json_t	*a;

	if ((a = cl_list("/v1/cluster/jobs", json)) == NULL)
		return (0);
	cluster_ps_table(a, 1, NULL);
	json_decref(a);
	return (0);
}

/*
 * gmux ps, below the host's own jobs: where the daemon asked is a
 * cluster's member, the cluster's live jobs (all: ended ones too)
 * wherever they run, if there are any.  Quiet where the cluster is not
 * the caller's (not a member, a token without its grant); a line on
 * stderr where it cannot be read now (etcd away): gmux ps still shows
 * the host's.
 */
void
cmd_cluster_ps_below(int all)
{
	struct client_reply	 r;
	const char		*mode;
	char			*heading = NULL;

	if (client_call("GET", "/v1/cluster", NULL, &r) == 0 &&
	    r.status == 200 && (mode = json_string_value(json_object_get(
	    r.body, "mode"))) != NULL && strcmp(mode, "member") == 0)
		xasprintf(&heading, "cluster %s (gmux cluster ps):",
		    cl_str(r.body, "cluster"));
	client_reply_clear(&r);
	if (heading == NULL)
		return;
	if (client_call("GET", "/v1/cluster/jobs", NULL, &r) == 0 &&
	    r.status == 200)
		cluster_ps_table(r.body, all, heading);
	else if (r.status == 0 || r.status >= 500)	/* etcd away: said */
		fprintf(stderr, "gmux ps: the cluster's jobs: %s\n",
		    r.error != NULL ? r.error : "no answer");
	client_reply_clear(&r);
	free(heading);
}

/*
 * Syncs req's directory to the remote asked: the job names its tree, not
 * its cwd (gmux cluster submit and gmux submit from a client).
 */
void
cmd_cluster_tree(json_t *req)
{
	const struct remote	*rv[REMOTES_MAX];
	const char		*cwd = cl_str(req, "cwd");
	char			 mdigest[DIGEST_HEX];

	if (hosts_candidates(rv, REMOTES_MAX) == 0)
		cmd_usage_error(&cmd_cluster_entry, "no remote host to "
		    "submit to");
	if (run_remote_sync(rv[0], cwd, 1, "gmux cluster submit",
	    mdigest) != 0)
		exit(EXIT_FAILURE_GMUX);
	json_object_del(req, "cwd");
	json_object_set_new(req, "manifest", json_string(mdigest));
}

static int
cluster_submit(int argc, char **argv)
{
	json_t		*req, *o;
	char		**pulls = NULL;
	int		 flags = 0;

	req = run_request(argc, argv, &flags, &pulls);
	if (pulls != NULL)
		cmd_usage_error(&cmd_cluster_entry, "--pull: not for cluster "
		    "jobs yet");
	/* From another machine, a cluster job runs in this directory's tree,
	 * synced to the member asked (docs/cluster.md, "Trees"). */
	if (hosts_remote())
		cmd_cluster_tree(req);
	o = cmd_call(&cmd_cluster_entry, "POST", "/v1/cluster/jobs", req);
	printf("%s\n", cl_str(o, "id"));
	json_decref(o);
	json_decref(req);
	return (0);
}

static int
cluster_stop(const char *id)
{
	json_t	*o;
	char	*path;

	if (strchr(id, '/') != NULL || strchr(id, '?') != NULL)
		cmd_usage_error(&cmd_cluster_entry, "stop: '%s' is not a job "
		    "id", id);
	xasprintf(&path, "/v1/cluster/jobs/%s/stop", id);
	o = cmd_call(&cmd_cluster_entry, "POST", path, NULL);
	printf("%s: %s\n", id, json_is_true(json_object_get(o, "stop")) &&
	    strcmp(cl_str(o, "state"), "queued") != 0 ? "stopping" :
	    "stopped");
	json_decref(o);
	free(path);
	return (0);
}

/* Is the daemon asked (or the remote) a cluster's member?  For c. */
int
cmd_cluster_member(const struct cmd_entry *c)
{
	json_t		*o = cmd_call(c, "GET", "/v1/cluster", NULL);
	const char	*mode = json_string_value(json_object_get(o, "mode"));
	int		 yes;

	yes = mode != NULL && strcmp(mode, "member") == 0;
	json_decref(o);
	return (yes);
}

/*
 * Does id name a cluster job (SUBMITTER.T, docs/cluster.md) rather than
 * a host's (jN, jN_K, HOST:jN)?  gmux logs, attach and stop ask any
 * member for those.
 */
int
cmd_cluster_id(const char *id)
{
	const char	*dot = strchr(id, '.');

	return (dot != NULL && dot != id && dot[1] != '\0' &&
	    strpbrk(id, ":/?") == NULL);
}

/*
 * Does word name a cluster job of the daemon t names (NULL: this host's)?
 * A dotted word is also a workspace's name where the daemon is no
 * cluster's member, so that is asked (gmux shell and gmux port).
 */
int
cmd_cluster_job_at(const struct target *t, const char *word)
{
	struct client_reply	 r;
	const char		*mode;
	int			 yes;

	if (!cmd_cluster_id(word))
		return (0);
	if (client_call_at(t, "GET", "/v1/cluster", NULL, &r) != 0 ||
	    r.status != 200) {
		client_reply_clear(&r);
		return (0);
	}
	mode = json_string_value(json_object_get(r.body, "mode"));
	yes = mode != NULL && strcmp(mode, "member") == 0;
	client_reply_clear(&r);
	return (yes);
}

/*
 * A cluster job's output, from whichever member this asks: that member
 * reads it, or relays it from the member that runs it.
 */
static int
cluster_logs(const char *id, int follow)
{
	struct stream	 s;
	char		*path;
	int		 rc;

	if (strchr(id, '/') != NULL || strchr(id, '?') != NULL)
		cmd_usage_error(&cmd_cluster_entry, "logs: '%s' is not a job "
		    "id", id);
	stream_init(&s, NULL, STREAM_LOGS);
	xasprintf(&path, "/v1/cluster/jobs/%s/log?from=0%s", id, follow ?
	    "&follow=1" : "");
	rc = stream_run(&s, "GET", path, NULL, 0) == -1;
	free(path);
	return (rc);
}

/*
 * cluster queue: the cluster's queue in the leader's order; gmux queue
 * too, on a member.
 */
int
cmd_cluster_queue(int json)
{
	static const char *const hdr[] = { "POS", "ID", "PRIO", "AGE",
	    "OWNER", "FROM", "WAITS FOR" };
	struct table	*t;
	json_t		*a, *j;
	char		 pos[16], prio[16], *age;
	size_t		 i;

	if ((a = cl_list("/v1/cluster/queue", json)) == NULL)
		return (0);
	t = table_create(hdr, nitems(hdr));
	json_array_foreach(a, i, j) {
		snprintf(pos, sizeof pos, "%lld", (long long)
		    json_integer_value(json_object_get(j, "position")));
		snprintf(prio, sizeof prio, "%lld", (long long)
		    json_integer_value(json_object_get(j, "prio")));
		age = format_age(clock_ms() - json_integer_value(
		    json_object_get(j, "submitted")));
		table_add(t, pos, cl_str(j, "id"), prio, age,
		    cl_str(j, "owner"), cl_str(j, "from"), cl_str(j,
		    "waits_for"));
		free(age);
	}
	table_print(t, stdout);
	table_free(t);
	json_decref(a);
	return (0);
}

static int
cmd_cluster_exec(int argc, char **argv)
{
	const char	*sub;
	int		 ch, json = 0, follow = 0, all = 0;

	if (argc < 2 || argv[1][0] == '-') {
		while ((ch = cmd_getopt(&cmd_cluster_entry, argc, argv, "h",
		    cluster_opts)) != -1)
			;
		cmd_usage_error(&cmd_cluster_entry, "ls, leader, ps, "
		    "queue or submit?");
	}
	sub = argv[1];
	argc--;
	argv++;
	if (strcmp(sub, "submit") == 0)
		return (cluster_submit(argc, argv));
	while ((ch = cmd_getopt(&cmd_cluster_entry, argc, argv, "afh",
	    cluster_opts)) != -1) {
		if (ch == OPT_JSON)
			json = 1;
		else if (ch == 'f')
			follow = 1;
		else if (ch == 'a')
			all = 1;
	}
	if (strcmp(sub, "stop") == 0 && optind + 1 == argc)
		return (cluster_stop(argv[optind]));
	if (strcmp(sub, "logs") == 0 && optind + 1 == argc)
		return (cluster_logs(argv[optind], follow));
	if (strcmp(sub, "logs") == 0)
		cmd_usage_error(&cmd_cluster_entry, "logs: which job?");
	if (optind != argc)
		cmd_usage_error(&cmd_cluster_entry, "%s: no argument expected",
		    sub);
	if (strcmp(sub, "ls") == 0)
		return (cluster_ls(json, all));
	if (strcmp(sub, "leader") == 0)
		return (cluster_leader(json));
	if (strcmp(sub, "ps") == 0)
		return (cluster_ps(json));
	if (strcmp(sub, "queue") == 0)
		return (cmd_cluster_queue(json));
	if (strcmp(sub, "stop") == 0 && argc == 1)
		cmd_usage_error(&cmd_cluster_entry, "stop: which job?");
	cmd_usage_error(&cmd_cluster_entry, "%s: not ls, leader, ps, queue or "
	    "submit", sub);
}
