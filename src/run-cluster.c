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
run_cluster_refused(char **pulls)
{
	if (pulls != NULL) {
		fprintf(stderr, "gmux run: --pull is not for cluster jobs (its "
		    "files stay on the member that ran it)\n");
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

/* Is job record o's state one of the two given (the second may be NULL)? */
static int
run_cluster_state(json_t *o, const char *one, const char *other)
{
	const char	*st = json_string_value(json_object_get(o, "state"));

	return (st != NULL && (strcmp(st, one) == 0 || (other != NULL &&
	    strcmp(st, other) == 0)));
}

/* Does job record o wait to start (queued, or assigned)? */
static int
run_cluster_unstarted(json_t *o, const char *followed)
{
	return (run_cluster_state(o, "queued", "assigned"));
}

/* The id of gang record o's part of rank 0 (its member said it), or NULL. */
static const char *
run_gang_rank0(json_t *o)
{
	return (json_string_value(json_object_get(o, "rank0")));
}

/*
 * Is gang record o still to be waited for: queued, or running in the
 * attempt whose rank 0 was followed (its other parts go on)?
 */
static int
run_gang_waits(json_t *o, const char *followed)
{
	const char	*part = run_gang_rank0(o);

	if (run_cluster_state(o, "queued", NULL))
		return (1);
	return (run_cluster_state(o, "running", NULL) && (part == NULL ||
	    strcmp(part, followed) == 0));
}

/*
 * Waits while waits(record, followed) says so, Ctrl-C stopping the job
 * (again: detaching).  Returns 0 with its record in *o (the caller frees
 * it) once it is past that, 1 if detached, -1 if the member was lost
 * (said).
 */
static int
run_cluster_wait(struct stream *s, json_t **o,
    int (*waits)(json_t *, const char *), const char *followed)
{
	struct client_reply	 r;
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
			if (!waits(r.body, followed)) {
				*o = json_incref(r.body);
				rc = 0;
				goto out;
			}
		} else if ((r.status >= 400 && r.status < 500) || (lost != 0 &&
		    clock_mono_ms() > lost)) {
			client_ok(&r, "run");
			goto out;
		} else if (lost == 0) {
			/* the member or etcd away (no answer, 5xx): asked
			 * again for RUN_LOST_MS */
			lost = clock_mono_ms() + RUN_LOST_MS;
			fprintf(stderr, "gmux: %s; asking again\n", r.error !=
			    NULL ? r.error : "no answer");
		}
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

/* Gang record o's members, by rank: "a,b" (allocated). */
static char *
run_gang_members(json_t *o)
{
	json_t		*p, *parts = json_object_get(o, "parts");
	const char	**v;
	char		*s;
	size_t		 i, n = json_array_size(parts);
	json_int_t	 rank;

	v = xcalloc(n + 1, sizeof *v);
	json_array_foreach(parts, i, p) {
		rank = json_integer_value(json_object_get(json_object_get(p,
		    "gang"), "rank"));
		if (rank >= 0 && (size_t)rank < n)
			v[rank] = json_string_value(json_object_get(p,
			    "member"));
	}
	for (i = 0; i < n; i++) {
		if (v[i] == NULL)
			v[i] = "?";
	}
	s = strv_join((char **)v, ",");
	free(v);
	return (s);
}

/* Gang record o's part that failed first (ended, not exited 0), or NULL. */
static json_t *
run_gang_first(json_t *o)
{
	json_t		*p, *first = NULL;
	size_t		 i;

	json_array_foreach(json_object_get(o, "parts"), i, p) {
		if (json_object_get(p, "ended") == NULL ||
		    (run_cluster_state(p, "exited", NULL) &&
		    json_integer_value(json_object_get(p, "exit_code")) == 0))
			continue;
		if (first == NULL || json_integer_value(json_object_get(p,
		    "ended")) < json_integer_value(json_object_get(first,
		    "ended")))
			first = p;
	}
	return (first);
}

/*
 * How a gang (record o, ended) ends gmux run: the exit code of its part
 * that failed first, which is said (the output followed was rank 0's).
 */
static int
run_gang_end(struct stream *g, json_t *o, int quiet)
{
	json_t		*f = run_gang_first(o);
	json_t		*code = json_object_get(o, "exit_code");
	const char	*why = json_string_value(json_object_get(o, "reason"));
	json_int_t	 rc = json_integer_value(code);

	if (f == NULL && json_is_integer(code) && rc == 0)
		return (0);
	if (!quiet && f != NULL && g->interrupts == 0)
		fprintf(stderr, "gmux: %s (rank %lld of %s, on %s) %s first "
		    "(exit %lld)%s%s\n", json_string_value(json_object_get(f,
		    "id")), (long long)json_integer_value(json_object_get(
		    json_object_get(f, "gang"), "rank")), g->job,
		    json_string_value(json_object_get(f, "member")),
		    json_string_value(json_object_get(f, "state")), (long long)
		    json_integer_value(json_object_get(f, "exit_code")),
		    why != NULL ? ": " : "", why != NULL ? why : "");
	else if (f == NULL)
		fprintf(stderr, "gmux run: gang %s %s%s%s\n", g->job,
		    json_string_value(json_object_get(o, "state")),
		    why != NULL ? ": " : " before it started", why != NULL ?
		    why : "");
	if (json_is_integer(code) && rc > 0 && rc < 256)
		return ((int)rc);
	return (g->interrupts > 0 ? 130 : RUN_FAILED);
}

/*
 * A gang (--nodes N): once placed, its rank 0's output is followed as a
 * job's (a Ctrl-C stops the whole gang), then the gang is waited for to
 * its end, the first failure's exit code.  A requeued gang (--requeue,
 * a member lost) is followed again in its next attempt.
 */
static int
run_cluster_gang(struct stream *g, int quiet)
{
	struct stream	 s;
	json_t		*o = NULL;
	char		 followed[128] = "", *path, *who;
	const char	*part, *attempt;
	int		 rc;

	for (;;) {
		json_decref(o);
		o = NULL;
		if ((rc = run_cluster_wait(g, &o, run_gang_waits,
		    followed)) != 0)
			return (rc == 1 ? 130 : RUN_FAILED);
		if ((part = run_gang_rank0(o)) == NULL ||
		    !run_cluster_state(o, "running", NULL))
			break;		/* it ended */
		attempt = strchr(part + strlen(g->job), '.');
		if (!quiet && *followed != '\0')
			fprintf(stderr, "gmux: %s was requeued (%s ended: gmux "
			    "status %s); its attempt %s\n", g->job, followed,
			    g->job, attempt != NULL ? attempt + 1 : "0");
		snprintf(followed, sizeof followed, "%s", part);
		if (!quiet) {
			who = run_gang_members(o);
			fprintf(stderr, "gmux: %s on %s, rank 0's output "
			    "follows (gmux logs -f %s-K%s for rank K)\n",
			    g->job, who, g->job, attempt != NULL ? attempt :
			    "");
			free(who);
		}
		stream_init(&s, part, STREAM_RUN);
		s.cluster = 1;
		s.interrupts = g->interrupts;
		snprintf(s.gang, sizeof s.gang, "%s", g->job);
		xasprintf(&path, "/v1/cluster/jobs/%s/log?from=0&follow=1",
		    part);
		rc = stream_run(&s, "GET", path, NULL, 1);
		free(path);
		g->interrupts = s.interrupts;
		if (rc != 0) {
			json_decref(o);
			return (rc == 1 ? 130 : RUN_FAILED);
		}
	}
	rc = run_gang_end(g, o, quiet);
	json_decref(o);
	return (rc);
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

	if (run_cluster_refused(pulls))
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
	if (json_integer_value(json_object_get(req, "nodes")) > 1)
		return (run_cluster_gang(&s, quiet));
	if ((rc = run_cluster_wait(&s, &o, run_cluster_unstarted, NULL)) != 0)
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
