/*
 * run-cluster.c: gmux run with a placement directive, on a cluster's
 * member or from a client whose remote is one: a cluster job (from a
 * client in this directory's tree), its output followed through the
 * member asked (docs/cluster.md, "Jobs from other machines").
 */

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gmux.h"

#define RUN_FAILED	125		/* as cmd-run.c's */
#define RUN_POLL_MS	200		/* between asks while it waits */
#define RUN_LOST_MS	(120 * 1000)	/* how long the member may not answer */

/*
 * Does req say where in a cluster it goes: a GPU model (not only a
 * count), a member, nodes, a partition?  Without one, a job for a member
 * is that host's.
 */
static int
run_cluster_directive(json_t *req)
{
	const char	*g = json_string_value(json_object_get(req, "gpus"));
	char		*type = NULL, *cause = NULL;
	u_int		 n;
	int		 model = 0;

	if (g != NULL && jobspec_gpus(g, &type, &n, &cause) == 0)
		model = type != NULL;
	free(type);
	free(cause);
	return (model || json_object_get(req, "server") != NULL ||
	    json_object_get(req, "nodes") != NULL ||
	    json_object_get(req, "partition") != NULL);
}

/*
 * Is req the job of the cluster the daemon asked (this host's, or the
 * remote's) is a member of?
 */
int
run_cluster_wanted(json_t *req)
{
	return (run_cluster_directive(req) &&
	    cmd_cluster_member(&cmd_run_entry));
}

/*
 * From another machine the job runs in this directory's tree, synced to
 * the member asked; on a member, in this directory on its member (the
 * shared storage a cluster's hosts have: docs/cluster.md).
 */
static void
run_cluster_tree(json_t *req)
{
	if (hosts_remote())
		cmd_cluster_tree(req);
}

/* What a cluster job cannot do from here: said in one line (exit 2). */
static int
run_cluster_refused(json_t *req, int flags, char **pulls)
{
	json_t	*nodes = json_object_get(req, "nodes");

	if (pulls != NULL) {
		fprintf(stderr, "gmux run: --pull is not for cluster jobs (its "
		    "files stay on the member that ran it)\n");
		return (1);
	}
	if (json_integer_value(nodes) > 1 && !(flags & RUN_DETACH)) {
		fprintf(stderr, "gmux run: --nodes makes a gang, whose parts "
		    "are followed one by one: use -d, then gmux logs -f "
		    "ID-K\n");
		return (1);
	}
	return (0);
}

/*
 * Syncs the tree and POSTs the job.  Ctrl-C is caught first and held
 * back until the reply is in: one that comes meanwhile neither kills gmux
 * (the job would go on with no one to follow it) nor abandons the POST,
 * and it stops the job once its id is known.  The id (allocated), or
 * NULL with *rc.
 */
static char *
run_cluster_submit(json_t *req, int *rc)
{
	sigset_t	 set, old;
	char		*id;

	client_catch_interrupts();
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, &old);
	run_cluster_tree(req);
	id = run_post(req, "/v1/cluster/jobs", rc);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return (id);
}

static void
run_cluster_sleep(void)
{
	struct timespec	 ts = { 0, RUN_POLL_MS * 1000000L };

	nanosleep(&ts, NULL);	/* a Ctrl-C ends it early */
}

/*
 * Waits while the job is queued or assigned, Ctrl-C stopping it (again:
 * detaching).  Returns 0 with its record in *o (the caller frees it) once
 * it is past those, 1 if detached, -1 if the member was lost (said).
 */
static int
run_cluster_wait(struct stream *s, json_t **o)
{
	struct client_reply	 r;
	const char		*st;
	char			*path;
	int64_t			 lost = 0;
	int			 rc = -1;

	xasprintf(&path, "/v1/cluster/jobs/%s", s->job);
	for (;;) {
		while (client_take_interrupt()) {
			if (stream_interrupt(s) != 0) {
				rc = 1;
				goto out;
			}
		}
		if (client_call("GET", path, NULL, &r) == 0 &&
		    r.status == 200) {
			lost = 0;
			st = json_string_value(json_object_get(r.body,
			    "state"));
			if (st == NULL || (strcmp(st, "queued") != 0 &&
			    strcmp(st, "assigned") != 0)) {
				*o = json_incref(r.body);
				rc = 0;
				goto out;
			}
		} else if (r.status >= 400 || (lost != 0 &&
		    clock_mono_ms() > lost)) {
			client_ok(&r, "run");
			goto out;
		} else if (lost == 0)
			lost = clock_mono_ms() + RUN_LOST_MS;
		client_reply_clear(&r);
		run_cluster_sleep();
	}
out:
	client_reply_clear(&r);
	free(path);
	return (rc);
}

/* Did the job (its record o) start on its member? */
static int
run_cluster_ran(json_t *o)
{
	const char	*st = json_string_value(json_object_get(o, "state"));
	json_t		*code = json_object_get(o, "exit_code");

	if (json_object_get(o, "member") == NULL || st == NULL)
		return (0);
	return (strcmp(st, "running") == 0 || (json_is_integer(code) &&
	    json_integer_value(code) >= 0));
}

/*
 * The job ended before it ran (record o; NULL: asked now): its state and
 * why.  130 if a Ctrl-C stopped it, else 125.
 */
static int
run_cluster_never(struct stream *s, json_t *o)
{
	const char	*st, *why;
	char		*path;

	xasprintf(&path, "/v1/cluster/jobs/%s", s->job);
	o = o != NULL ? json_incref(o) : cmd_call(&cmd_run_entry, "GET",
	    path, NULL);
	free(path);
	st = json_string_value(json_object_get(o, "state"));
	why = json_string_value(json_object_get(o, "reason"));
	fprintf(stderr, "gmux run: %s %s%s%s\n", s->job, st != NULL ? st :
	    "ended", why != NULL ? ": " : " before it started", why != NULL ?
	    why : "");
	json_decref(o);
	return (s->interrupts > 0 ? 130 : RUN_FAILED);
}

/* Its output, through the member asked; the job's exit code. */
static int
run_cluster_follow(struct stream *s)
{
	char	*path;
	int	 rc;

	xasprintf(&path, "/v1/cluster/jobs/%s/log?from=0&follow=1", s->job);
	rc = stream_run(s, "GET", path, NULL, 1);
	free(path);
	if (rc == 1)
		return (130);
	if (rc != 0)
		return (RUN_FAILED);
	if (!s->ended || s->exit_code < 0)
		return (run_cluster_never(s, NULL));
	return (s->exit_code);
}

/*
 * gmux run as a cluster job (run_cluster_wanted said so): req as run
 * built it, with its cwd; pulls its --pull patterns.  The exit code.
 */
int
run_cluster(json_t *req, int flags, char **pulls)
{
	struct stream	 s;
	json_t		*o = NULL;
	char		*id;
	int		 rc, quiet = flags & RUN_QUIET;

	if (run_cluster_refused(req, flags, pulls))
		return (EXIT_USAGE);
	if (flags & RUN_DETACH) {
		run_cluster_tree(req);
		return (run_detached(req, "/v1/cluster/jobs"));
	}
	if ((id = run_cluster_submit(req, &rc)) == NULL)
		return (rc);
	stream_init(&s, id, STREAM_RUN);
	s.cluster = 1;
	free(id);
	if (!quiet)
		fprintf(stderr, "gmux: %s queued in the cluster\n", s.job);
	if ((rc = run_cluster_wait(&s, &o)) != 0)
		return (rc == 1 ? 130 : RUN_FAILED);
	if (!run_cluster_ran(o))
		rc = run_cluster_never(&s, o);
	else {
		if (!quiet)
			fprintf(stderr, "gmux: %s on %s\n", s.job,
			    json_string_value(json_object_get(o, "member")));
		rc = run_cluster_follow(&s);
	}
	json_decref(o);
	return (rc);
}
