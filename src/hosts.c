/*
 * hosts.c: where a command goes.  The rule: --local, or --remote NAME, or
 * the local daemon if one runs, or else the configured hosts (remotes.c).
 * With every configured host, a listing (jobs, cards, usage) asks them all
 * at once and merges the answers, each row marked with its host; a request
 * about one job goes to the host that has it, named as NAME:jN or found by
 * asking them all; anything else goes to the default host.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"

#define HOSTS_ASK_MS	5000	/* a listing waits this long for a host */
				/* (and less for one silent: hosts-slow.c) */

static int		 hosts_resolved;
static int		 hosts_is_remote;
static int		 hosts_opt_local;
static char		*hosts_opt_remote;
static struct remotes	 hosts_rs;
static const struct remote *hosts_one;	/* --remote NAME's */

/* --local or --remote NAME, from any command's options. */
void
hosts_choose(int local, const char *remote)
{
	if (local) {
		hosts_opt_local = 1;
		free(hosts_opt_remote);
		hosts_opt_remote = NULL;
	} else {
		hosts_opt_local = 0;
		free(hosts_opt_remote);
		hosts_opt_remote = xstrdup(remote);
	}
}

/* Loads the configured hosts, or exits with the reason. */
static void
hosts_load(void)
{
	char	*path, *cause = NULL;

	path = remotes_path();
	if (remotes_load(&hosts_rs, path, &cause) != 0) {
		fprintf(stderr, "gmux: %s\n", cause);
		exit(1);
	}
	free(path);
}

static void
hosts_resolve(void)
{
	char	*path;
	int	 have;

	if (hosts_resolved)
		return;
	hosts_resolved = 1;
	if (hosts_opt_local)
		return;
	path = remotes_path();
	have = access(path, F_OK) == 0;
	free(path);
	if (hosts_opt_remote == NULL && !have)
		return;
	hosts_load();
	if (hosts_opt_remote != NULL) {
		if ((hosts_one = remotes_find(&hosts_rs, hosts_opt_remote)) ==
		    NULL) {
			fprintf(stderr, "gmux: no remote %s (see gmux remote "
			    "ls)\n", hosts_opt_remote);
			exit(1);
		}
		hosts_is_remote = 1;
		return;
	}
	if (hosts_rs.n == 0 || client_daemon_running())
		return;
	hosts_is_remote = 1;
}

/* Does this command go to remote hosts (not the local daemon)? */
int
hosts_remote(void)
{
	hosts_resolve();
	return (hosts_is_remote);
}

/*
 * Does this request name a job on a remote (/v1/jobs/NAME:jN...)?  Such a
 * request goes there even when a local daemon runs, unless --local.
 */
int
hosts_names_remote(const char *path)
{
	const char	*ref;
	char		*name;
	int		 found;

	if (hosts_opt_local || strncmp(path, "/v1/jobs/", 9) != 0)
		return (0);
	ref = path + 9;
	if (strchr(ref, ':') == NULL || strcspn(ref, ":") > strcspn(ref, "/?"))
		return (0);
	hosts_resolve();
	if (hosts_rs.path == NULL)
		hosts_load();
	name = xstrndup(ref, strcspn(ref, ":"));
	found = remotes_find(&hosts_rs, name) != NULL;
	free(name);
	return (found);
}

/*
 * The hosts a command may go to: --remote NAME's, or every configured one
 * (the default first, those remembered as slow last).  Fills at most max
 * entries; returns how many.
 */
u_int
hosts_candidates(const struct remote **v, u_int max)
{
	const struct remote	*rm;
	u_int			 i, n = 0, pass;

	hosts_resolve();
	if (hosts_one != NULL) {
		v[0] = hosts_one;
		return (1);
	}
	for (pass = 0; pass < 2; pass++) {
		rm = hosts_rs.dflt != NULL ? remotes_find(&hosts_rs,
		    hosts_rs.dflt) : NULL;
		if (rm != NULL && n < max && hosts_slow(rm) == (int)pass)
			v[n++] = rm;
		for (i = 0; i < hosts_rs.n && n < max; i++) {
			rm = &hosts_rs.v[i];
			if ((hosts_rs.dflt == NULL ||
			    strcmp(rm->name, hosts_rs.dflt) != 0) &&
			    hosts_slow(rm) == (int)pass)
				v[n++] = rm;
		}
	}
	return (n);
}

/*
 * Every configured host (--remote NAME's alone), whether or not a daemon
 * runs here: for what speaks of them all (version).  None without a
 * remotes file.
 */
u_int
hosts_configured(const struct remote **v, u_int max)
{
	char	*path;
	u_int	 i, n = 0;
	int	 have;

	hosts_resolve();
	if (hosts_one != NULL) {
		v[0] = hosts_one;
		return (1);
	}
	path = remotes_path();
	have = access(path, F_OK) == 0;
	free(path);
	if (!have)
		return (0);
	if (hosts_rs.path == NULL)
		hosts_load();
	for (i = 0; i < hosts_rs.n && n < max; i++)
		v[n++] = &hosts_rs.v[i];
	return (n);
}

/* Is the command bound to one host (--remote NAME)? */
int
hosts_fixed(void)
{
	hosts_resolve();
	return (hosts_one != NULL);
}

/* Makes r a reply with status and a message, as if a host had sent it. */
static void printflike(3, 4)
hosts_reply(struct client_reply *r, long status, const char *fmt, ...)
{
	va_list	 ap;

	memset(r, 0, sizeof *r);
	r->status = status;
	va_start(ap, fmt);
	xvasprintf(&r->error, fmt, ap);
	va_end(ap);
}

/*
 * A host that did not answer (a listing, run's placement): said once, on
 * stderr, with why, and since when it has been slow if it was.
 */
void
hosts_skipped(const struct remote *rm, const struct client_reply *r)
{
	char	*note = hosts_slow_note(rm);

	fprintf(stderr, "gmux: skipping %s: %s%s\n", rm->name,
	    r->error != NULL ? r->error : "no answer", note);
	free(note);
}

/*
 * Asks every candidate host the same request at once.  q gets one request
 * per host (the caller frees their replies with hosts_done).
 */
static u_int
hosts_ask(const char *method, const char *path, json_t *body,
    const struct remote **rv, struct client_req *q, int timeout_ms)
{
	char	*text = body != NULL ? json_dumps(body, JSON_COMPACT) : NULL;
	u_int	 n, i;

	n = hosts_candidates(rv, REMOTES_MAX);
	for (i = 0; i < n; i++) {
		client_req_init(&q[i], &rv[i]->target, method, path);
		hosts_slow_deadlines(rv[i], &q[i]);
		q[i].body = text;
		q[i].len = text != NULL ? strlen(text) : 0;
	}
	client_multi(q, n, timeout_ms);
	free(text);
	return (n);
}

/* After the warnings: who was slow is remembered; the replies go. */
static void
hosts_done(const struct remote **rv, struct client_req *q, u_int n)
{
	u_int	 i;

	for (i = 0; i < n; i++) {
		hosts_slow_heard(rv[i], &q[i]);
		client_reply_clear(&q[i].reply);
	}
}

/* Adds o's rows (each with "host") to the merged usage report m. */
static void
hosts_merge_usage(json_t *m, json_t *o, const char *host)
{
	static const char *const sums[] = { "jobs", "seat_ms",
	    "share_seconds", "card_hours", "mem_gib_hours" };
	json_t		*rows, *row, *mt, *ot, *a, *b;
	size_t		 i;

	rows = json_object_get(m, "rows");
	json_array_foreach(json_object_get(o, "rows"), i, row) {
		row = json_deep_copy(row);
		json_object_set_new(row, "host", json_string(host));
		json_array_append_new(rows, row);
	}
	mt = json_object_get(m, "total");
	ot = json_object_get(o, "total");
	for (i = 0; i < nitems(sums); i++) {
		a = json_object_get(mt, sums[i]);
		b = json_object_get(ot, sums[i]);
		if (json_is_integer(a) && json_is_integer(b))
			json_integer_set(a, json_integer_value(a) +
			    json_integer_value(b));
		else if (json_is_number(a) && json_is_number(b))
			json_object_set_new(mt, sums[i], json_real(
			    json_number_value(a) + json_number_value(b)));
	}
}

/* Adds one host's answer to the merged one. */
static void
hosts_merge_one(json_t **m, json_t *o, const char *host)
{
	json_t	*e;
	size_t	 i;

	if (json_is_array(o)) {
		if (*m == NULL)
			*m = json_array();
		json_array_foreach(o, i, e) {
			e = json_deep_copy(e);
			if (json_is_object(e))
				json_object_set_new(e, "host",
				    json_string(host));
			json_array_append_new(*m, e);
		}
	} else if (json_is_object(o) && json_is_array(json_object_get(o,
	    "rows"))) {
		if (*m == NULL) {
			*m = json_deep_copy(o);
			json_array_clear(json_object_get(*m, "rows"));
			json_object_set_new(*m, "total", json_pack("{s:i, "
			    "s:i, s:f, s:f, s:f}", "jobs", 0, "seat_ms", 0,
			    "share_seconds", 0.0, "card_hours", 0.0,
			    "mem_gib_hours", 0.0));
		}
		hosts_merge_usage(*m, o, host);
	}
}

/* A listing from every host, merged; hosts that fail are skipped. */
static int
hosts_merge(const char *method, const char *path, json_t *body,
    struct client_reply *r)
{
	const struct remote	*rv[REMOTES_MAX];
	struct client_req	 q[REMOTES_MAX];
	json_t			*m = NULL;
	u_int			 n, i, bad = 0;

	n = hosts_ask(method, path, body, rv, q, HOSTS_ASK_MS);
	for (i = 0; i < n; i++) {
		if (q[i].reply.error != NULL || q[i].reply.status != 200) {
			hosts_skipped(rv[i], &q[i].reply);
			bad++;
			continue;
		}
		hosts_merge_one(&m, q[i].reply.body, rv[i]->name);
	}
	memset(r, 0, sizeof *r);
	if (bad == n && n > 0) {
		r->status = q[0].reply.status;
		r->error = xstrdup("no host answered");
		hosts_done(rv, q, n);
		return (r->status != 0 ? 0 : -1);
	}
	hosts_done(rv, q, n);
	r->status = 200;
	r->body = m != NULL ? m : json_array();
	return (0);
}

/* Asks every host for job id; the one that has it, or NULL with *r set. */
static const struct remote *
hosts_find_job(const char *id, struct client_reply *r)
{
	const struct remote	*rv[REMOTES_MAX], *found = NULL;
	struct client_req	 q[REMOTES_MAX];
	char			*path, *names = NULL, *s;
	u_int			 n, i, nfound = 0;

	xasprintf(&path, "/v1/jobs/%s", id);
	n = hosts_ask("GET", path, NULL, rv, q, HOSTS_ASK_MS);
	free(path);
	for (i = 0; i < n; i++) {
		if (q[i].reply.status == 200 && q[i].reply.error == NULL) {
			found = rv[i];
			nfound++;
			xasprintf(&s, "%s%s%s:%s", names ? names : "", names ?
			    " or " : "", rv[i]->name, id);
			free(names);
			names = s;
		} else if (q[i].reply.status != 404)
			hosts_skipped(rv[i], &q[i].reply);
	}
	hosts_done(rv, q, n);
	if (nfound == 0)
		hosts_reply(r, 404, "no job %s on any host", id);
	else if (nfound > 1)
		hosts_reply(r, 409, "%s is on more than one host: say which "
		    "(%s)", id, names);
	free(names);
	return (nfound == 1 ? found : NULL);
}

/*
 * Where a request about job ref (jN, or NAME:jN) goes; *id gets the job's
 * own id (allocated).  NULL with *r set if there is no such host or job.
 */
static const struct remote *
hosts_job(const char *ref, char **id, struct client_reply *r)
{
	const struct remote	*rm;
	const char		*colon = strchr(ref, ':');
	char			*name;

	if (colon == NULL) {
		*id = xstrdup(ref);
		if (hosts_one != NULL)
			return (hosts_one);
		if (hosts_rs.n == 1)
			return (&hosts_rs.v[0]);
		if ((rm = hosts_find_job(ref, r)) == NULL) {
			free(*id);
			*id = NULL;
		}
		return (rm);
	}
	name = xstrndup(ref, (size_t)(colon - ref));
	rm = remotes_find(&hosts_rs, name);
	if (rm == NULL)
		hosts_reply(r, 404, "no remote %s (see gmux remote ls)", name);
	else if (hosts_one != NULL && rm != hosts_one) {
		hosts_reply(r, 400, "%s names remote %s, not %s", ref, name,
		    hosts_one->name);
		rm = NULL;
	}
	free(name);
	*id = rm != NULL ? xstrdup(colon + 1) : NULL;
	return (rm);
}

/*
 * Which host a request goes to, and its path there (allocated): for
 * /v1/jobs/REF..., the job's host; else --remote's or the default.  NULL
 * with *r set if none.
 */
static const struct remote *
hosts_route(const char *path, char **to, struct client_reply *r)
{
	const struct remote	*rm, *rv[1];
	const char		*ref, *rest;
	char			*jref, *id;

	*to = NULL;
	if (strncmp(path, "/v1/jobs/", 9) == 0) {
		ref = path + 9;
		rest = ref + strcspn(ref, "/?");
		jref = xstrndup(ref, (size_t)(rest - ref));
		rm = hosts_job(jref, &id, r);
		free(jref);
		if (rm == NULL)
			return (NULL);
		xasprintf(to, "/v1/jobs/%s%s", id, rest);
		free(id);
		return (rm);
	}
	if (hosts_candidates(rv, 1) == 0) {
		hosts_reply(r, 0, "no remote is configured");
		return (NULL);
	}
	*to = xstrdup(path);
	return (rv[0]);
}

/* Is this a listing that every host answers in part? */
static int
hosts_is_listing(const char *method, const char *path)
{
	size_t	 n = strcspn(path, "?");

	return (strcmp(method, "GET") == 0 && ((n == 8 &&
	    strncmp(path, "/v1/jobs", 8) == 0) || (n == 9 &&
	    strncmp(path, "/v1/cards", 9) == 0) || (n == 9 &&
	    strncmp(path, "/v1/usage", 9) == 0)));
}

/* client_call for a command that goes to remote hosts. */
int
hosts_call(const char *method, const char *path, json_t *body,
    struct client_reply *r)
{
	const struct remote	*rm;
	char			*to;
	int			 rc;

	if (hosts_one == NULL && hosts_is_listing(method, path))
		return (hosts_merge(method, path, body, r));
	if ((rm = hosts_route(path, &to, r)) == NULL)
		return (r->status != 0 ? 0 : -1);
	rc = client_call_at(&rm->target, method, to, body, r);
	free(to);
	return (rc);
}

/* client_stream for a command that goes to remote hosts. */
int
hosts_stream(const char *method, const char *path, json_t *body,
    const struct client_stream_cbs *cbs, struct client_reply *r)
{
	const struct remote	*rm;
	char			*to;
	int			 rc;

	if ((rm = hosts_route(path, &to, r)) == NULL)
		return (r->status != 0 ? 0 : -1);
	rc = client_stream_at(&rm->target, method, to, body, cbs, r);
	free(to);
	return (rc);
}
