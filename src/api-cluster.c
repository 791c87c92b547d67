/*
 * api-cluster.c: the cluster's routes (docs/api.md, docs/cluster.md):
 * members, leader, queue, jobs and submission.  Each reads etcd
 * asynchronously and replies when the answer comes.
 */

#include <stdlib.h>
#include <string.h>

#include <event2/http.h>

#include "cluster-int.h"
#include "api-cluster-int.h"

/* A stop's reads of the job when the job moves under its CAS each time. */
#define AC_STOP_TRIES	8

static void	ac_stop_cb(struct etcd_reply *, const char *, void *);

/*
 * May req use the cluster through this daemon?  Not where it is no
 * member, nor while its name is another live daemon's: that one is the
 * member (its jobs would be this one's ids, its reads this one's).
 */
static int
ac_member(struct evhttp_request *req)
{
	if (cluster == NULL) {
		api_error(req, 409, "this daemon is not a cluster member "
		    "(CLUSTER_MODE is not member)");
		return (0);
	}
	if (cluster->taken) {
		api_error(req, 503, "%s: this daemon stays out of cluster %s "
		    "until the name is free", cluster->error, cluster->id);
		return (0);
	}
	return (1);
}

static struct ac *
ac_new(struct evhttp_request *req, const struct api_who *who)
{
	struct ac	*a = xcalloc(1, sizeof *a);

	a->req = req;
	a->owner = xstrdup(who->owner);
	a->admin = who->admin;
	a->proxied = who->proxied;
	a->confined = who->confined;
	a->transport = who->transport;
	return (a);
}

void
ac_free(struct ac *a)
{
	json_decref(a->body);
	json_decref(a->out);
	json_decref(a->rest);
	free(a->owner);
	free(a);
}

/* An etcd failure: 503 with the reason, and the request is done. */
int
ac_failed(struct ac *a, const char *err)
{
	if (err == NULL)
		return (0);
	api_error(a->req, 503, "cluster: %s", err);
	ac_free(a);
	return (1);
}

/* The state a job's key says, from its prefix letter. */
static const char *
ac_state(const char *rest, const char **member)
{
	*member = NULL;
	switch (*rest) {
	case 'q':
		return ("queued");
	case 'a':
		return ("assigned");
	case 'r':
		return ("running");
	case 'e':
		return ("ended");
	case 'y':
		return ("array");	/* cluster-array.c */
	}
	return (NULL);
}

/* A job's record as listings show it; NULL if not a job key or corrupt. */
static json_t *
ac_job(const struct etcd_kv *kv)
{
	const char	*rest = kv->key + strlen(cluster->prefix), *member;
	const char	*st, *x;
	json_t		*o;

	if ((st = ac_state(rest, &member)) == NULL || rest[1] != '/')
		return (NULL);
	if ((o = json_loadb(kv->value, kv->vlen, 0, NULL)) == NULL ||
	    !json_is_object(o) || !json_is_string(json_object_get(o, "id"))) {
		log_warnx("cluster: %s: not a job record; skipped", kv->key);
		json_decref(o);
		return (NULL);
	}
	if (*rest == 'e' && (x = json_string_value(json_object_get(o,
	    "state"))) != NULL)
		st = x;
	json_object_set_new(o, "state", json_string(st));
	json_object_set_new(o, "revision", json_integer(kv->mod_rev));
	return (o);
}

/* May the asker see job record o (api_may, on the copy kept in a)? */
static int
ac_owned(const struct ac *a, json_t *o)
{
	const char	*has = json_string_value(json_object_get(o, "owner"));

	return (a->admin || (has != NULL && strcmp(a->owner, has) == 0));
}

/* GET /v1/cluster: this daemon's membership. */
void
api_cluster_get(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	json_t	*o;

	if (cluster == NULL) {
		o = json_pack("{s:s}", "mode", "standalone");
		api_reply(req, 200, o);
		json_decref(o);
		return;
	}
	o = json_pack("{s:s,s:s,s:s,s:b,s:b,s:I,s:s?,s:s?,s:O?}", "mode",
	    "member", "cluster", cluster->id, "name", cluster->name, "member",
	    cluster->registered, "leading", cluster->leading, "writes",
	    (json_int_t)cluster->nwrites, "error", cluster->error, "warning",
	    cluster->warning, "leader", cluster->leader);
	api_reply(req, 200, o);
	json_decref(o);
}

/* Is a member named name among the records in a? */
static int
ac_member_listed(json_t *a, const char *name)
{
	json_t	*m;
	size_t	 i;

	json_array_foreach(a, i, m) {
		if (strcmp(json_string_value(json_object_get(m, "name")),
		    name) == 0)
			return (1);
	}
	return (0);
}

/*
 * ?all=1: the members that left (g/NAME, written by the leader), after
 * the live ones, each "gone" with its last_seen; one back meanwhile is
 * listed live only.
 */
static void
ac_members_gone_cb(struct etcd_reply *r, const char *err, void *arg)
{
	struct ac	*a = arg;
	json_t		*o;
	const char	*name;
	u_int		 i;

	if (ac_failed(a, err))
		return;
	for (i = 0; i < r->nkvs; i++) {
		o = json_loadb(r->kvs[i].value, r->kvs[i].vlen, 0, NULL);
		name = json_string_value(json_object_get(o, "name"));
		if (name == NULL || !json_is_integer(json_object_get(o,
		    "last_seen"))) {
			log_warnx("cluster: %s: not a member that left; "
			    "skipped", r->kvs[i].key);
			json_decref(o);
			continue;
		}
		if (!ac_member_listed(a->out, name)) {
			json_object_set_new(o, "gone", json_true());
			json_object_set_new(o, "leader", json_false());
			json_object_set_new(o, "jobs", json_integer(0));
			json_array_append(a->out, o);
		}
		json_decref(o);
	}
	api_reply(a->req, 200, a->out);
	ac_free(a);
}

static void
ac_members_jobs_cb(struct etcd_reply *r, const char *err, void *arg)
{
	struct ac	*a = arg;
	json_t		*m;
	const char	*rest, *slash;
	size_t		 i, plen = strlen(cluster_key("r/"));
	u_int		 k;
	char		*name;

	if (ac_failed(a, err))
		return;
	for (k = 0; k < r->nkvs; k++) {
		rest = r->kvs[k].key + plen;
		if ((slash = strchr(rest, '/')) == NULL)
			continue;
		name = xstrndup(rest, (size_t)(slash - rest));
		json_array_foreach(a->out, i, m) {
			if (strcmp(json_string_value(json_object_get(m,
			    "name")), name) == 0)
				json_object_set_new(m, "jobs", json_integer(
				    json_integer_value(json_object_get(m,
				    "jobs")) + 1));
		}
		free(name);
	}
	if (a->all) {
		etcd_range(cluster->etcd, cluster_key("g/"), 1,
		    ac_members_gone_cb, a);
		return;
	}
	api_reply(a->req, 200, a->out);
	ac_free(a);
}

/*
 * The members' records in r (a range of m/), as listings show them: the
 * leader marked, no instance, jobs 0 (counted by the caller if it wants).
 * Corrupt records are skipped with a warning.
 */
json_t *
cluster_members_json(const struct etcd_reply *r)
{
	struct cluster_member	 m;
	const char		*leader;
	char			*cause = NULL;
	json_t			*o, *out = json_array();
	u_int			 i;

	leader = json_string_value(json_object_get(cluster->leader, "name"));
	for (i = 0; i < r->nkvs; i++) {
		o = json_loadb(r->kvs[i].value, r->kvs[i].vlen, 0, NULL);
		if (o == NULL || cluster_member_parse(o, &m, &cause) != 0) {
			log_warnx("cluster: %s: %s; skipped", r->kvs[i].key,
			    cause != NULL ? cause : "not JSON");
			free(cause);
			cause = NULL;
			json_decref(o);
			continue;
		}
		json_object_set_new(o, "leader", json_boolean(leader != NULL &&
		    strcmp(leader, m.name) == 0));
		json_object_set_new(o, "jobs", json_integer(0));
		json_object_del(o, "instance");
		json_object_del(o, "origin");
		json_object_del(o, "boot");
		json_object_del(o, "pid");
		json_array_append_new(out, o);
		cluster_member_clear(&m);
	}
	return (out);
}

static void
ac_members_cb(struct etcd_reply *r, const char *err, void *arg)
{
	struct ac	*a = arg;

	if (ac_failed(a, err))
		return;
	a->out = cluster_members_json(r);
	etcd_range(cluster->etcd, cluster_key("r/"), 1, ac_members_jobs_cb,
	    a);
}

/*
 * GET /v1/cluster/members: every live member's record; ?all=1: those
 * that left too.
 */
void
api_cluster_members(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct ac	*a;

	if (!ac_member(req))
		return;
	a = ac_new(req, who);
	a->all = api_query_flag(req, "all");
	etcd_range(cluster->etcd, cluster_key("m/"), 1, ac_members_cb, a);
}

static void
ac_leader_cb(struct etcd_reply *r, const char *err, void *arg)
{
	struct ac	*a = arg;
	json_t		*o;

	if (ac_failed(a, err))
		return;
	if (r->nkvs == 0 || (o = json_loadb(r->kvs[0].value, r->kvs[0].vlen,
	    0, NULL)) == NULL) {
		api_error(a->req, 503, "cluster %s: no leader now",
		    cluster->id);
		ac_free(a);
		return;
	}
	json_object_set_new(o, "etcd_revision", json_integer(r->rev));
	api_reply(a->req, 200, o);
	json_decref(o);
	ac_free(a);
}

/* GET /v1/cluster/leader: who schedules, since when, at what revision. */
void
api_cluster_leader(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	if (!ac_member(req))
		return;
	etcd_range(cluster->etcd, cluster_key("leader"), 0, ac_leader_cb,
	    ac_new(req, who));
}

static int
ac_queue_cmp(const void *x, const void *y)
{
	json_t	*a = *(json_t *const *)x, *b = *(json_t *const *)y;
	int64_t	 ka, kb;

	ka = json_integer_value(json_object_get(a, "key"));
	kb = json_integer_value(json_object_get(b, "key"));
	if (ka != kb)
		return (ka < kb ? -1 : 1);
	return (strcmp(json_string_value(json_object_get(a, "id")),
	    json_string_value(json_object_get(b, "id"))));
}

static json_t *
ac_queue(struct ac *a, struct etcd_reply *r)
{
	struct cluster_shape	 s;
	json_t			**v, *o, *out = json_array();
	u_int			 i, k, n = 0;
	char			*cause = NULL, c;

	v = xcalloc(r->nkvs + 1, sizeof *v);
	for (i = 0; i < r->nkvs; i++) {
		c = r->kvs[i].key[strlen(cluster->prefix)];
		if ((c != 'q' && c != 'y') || (o = ac_job(&r->kvs[i])) == NULL)
			continue;
		/* an array: its elements not queued yet, as one row */
		if ((c == 'y' && cluster_array_queue_row(o, r) == 0) ||
		    cluster_shape_parse(o, &s, &cause) != 0) {
			free(cause);
			cause = NULL;
			json_decref(o);
			continue;
		}
		json_object_set_new(o, "key", json_integer(s.submitted -
		    (int64_t)s.prio * SCHED_AGE_MS));
		v[n++] = o;
	}
	qsort(v, n, sizeof *v, ac_queue_cmp);
	cluster_why(v, n, r);	/* everyone's jobs take room before */
	for (i = k = 0; i < n; i++) {
		if (!ac_owned(a, v[i])) {
			json_decref(v[i]);
			continue;
		}
		json_object_set_new(v[i], "position", json_integer(++k));
		json_object_del(v[i], "key");
		json_array_append_new(out, v[i]);
	}
	free(v);
	return (out);
}

static void
ac_queue_cb(struct etcd_reply *r, const char *err, void *arg)
{
	struct ac	*a = arg;
	json_t		*o;

	if (ac_failed(a, err))
		return;
	o = ac_queue(a, r);
	api_reply(a->req, 200, o);
	json_decref(o);
	ac_free(a);
}

/*
 * GET /v1/cluster/queue: the queued jobs in the leader's order, each with
 * what it waits for (read from the members and what they hold).
 */
void
api_cluster_queue(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	if (!ac_member(req))
		return;
	etcd_range(cluster->etcd, cluster->prefix, 1, ac_queue_cb,
	    ac_new(req, who));
}

static void
ac_jobs_cb(struct etcd_reply *r, const char *err, void *arg)
{
	struct ac	*a = arg;
	json_t		*o, *out;
	u_int		 i;

	if (ac_failed(a, err))
		return;
	out = json_array();
	for (i = 0; i < r->nkvs; i++) {
		if ((o = ac_job(&r->kvs[i])) == NULL)
			continue;
		/* an array: its state as its elements' (GET of one too) */
		if (r->kvs[i].key[strlen(cluster->prefix)] == 'y')
			cluster_array_view(o, r);
		if (ac_owned(a, o))
			json_array_append(out, o);
		json_decref(o);
	}
	api_reply(a->req, 200, out);
	json_decref(out);
	ac_free(a);
}

/* GET /v1/cluster/jobs: every job of the cluster, in every state. */
void
api_cluster_jobs(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	if (!ac_member(req))
		return;
	etcd_range(cluster->etcd, cluster->prefix, 1, ac_jobs_cb,
	    ac_new(req, who));
}

static void
ac_submitted_cb(struct etcd_reply *r, const char *err, void *arg)
{
	struct ac	*a = arg;

	if (ac_failed(a, err))
		return;
	if (!r->succeeded) {
		api_error(a->req, 409, "job %s exists already",
		    json_string_value(json_object_get(a->out, "id")));
		ac_free(a);
		return;
	}
	cluster->nwrites++;
	json_object_set_new(a->out, "state", json_string(json_object_get(
	    a->out, "array") != NULL ? "array" : "queued"));
	api_reply(a->req, 201, a->out);
	ac_free(a);
}

/*
 * A new job id, NAME.T: T the time in ms (base 36), made to grow, so
 * that ids stay unique across this daemon's restarts without a write; the
 * submission's compare catches a clock set back.
 */
static char *
ac_new_id(void)
{
	static int64_t	 last;
	int64_t		 v = clock_ms();
	char		 buf[16], *p = buf + sizeof buf - 1, *id;

	if (v <= last)
		v = last + 1;
	last = v;
	*p = '\0';
	do {
		*--p = "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36];
		v /= 36;
	} while (v > 0 && p > buf);
	xasprintf(&id, "%s.%s", cluster->name, p);
	return (id);
}

/* The members' records came: refuse what none could hold, else queue. */
static void
ac_submit_cb(struct etcd_reply *r, const char *err, void *arg)
{
	struct ac		*a = arg;
	struct cluster_member	*v;
	struct cluster_shape	 s;
	u_int			 i, n = 0;
	char			*why = NULL, *text, *id;
	const char		*p;
	json_t			*o;

	if (ac_failed(a, err))
		return;
	v = xcalloc(r->nkvs + 1, sizeof *v);
	for (i = 0; i < r->nkvs; i++) {
		o = json_loadb(r->kvs[i].value, r->kvs[i].vlen, 0, NULL);
		if (o != NULL && cluster_member_parse(o, &v[n], &why) == 0)
			n++;
		free(why);
		why = NULL;
		json_decref(o);
	}
	id = ac_new_id();
	a->out = json_pack("{s:s,s:s,s:O,s:I,s:s}", "id", id, "owner",
	    a->owner, "req", a->body, "submitted", (json_int_t)clock_ms(),
	    "from", cluster->name);
	if (a->confined)	/* its member jails it (cluster-job.c) */
		json_object_set_new(a->out, "confined", json_true());
	if (json_is_true(json_object_get(a->body, "task_worker")))
		json_object_set_new(a->out, "task_entry",	/* its broker */
		    json_string(cluster->name));
	if (a->confined && json_object_get(a->body, "manifest") != NULL)
		json_object_set_new(a->out, "tree", json_pack("{s:s}", "from",
		    cluster->name));	/* fetched by its member from here */
	free(id);
	if (cluster_shape_parse(a->out, &s, &why) == 0)
		why = cluster_refusal(v, n, &s);
	for (i = 0; i < n; i++)
		cluster_member_clear(&v[i]);
	free(v);
	if (why != NULL) {
		api_error(a->req, 422, "refused: %s", why);
		free(why);
		ac_free(a);
		return;
	}
	json_object_set_new(a->out, "prio", json_integer(s.prio));
	/* an array is one record, y/ID, until its elements start */
	p = cluster_array_prepare(a->out) ? "y" : "q";
	id = xstrdup(json_string_value(json_object_get(a->out, "id")));
	text = json_dumps(a->out, JSON_COMPACT);
	etcd_txn(cluster->etcd, json_pack("[oo]", etcd_cmp(cluster_key("%s/%s",
	    p, id), "CREATE", 0), etcd_cmp(cluster_key("e/%s", id), "CREATE",
	    0)), json_pack("[o]", etcd_op_put(cluster_key("%s/%s", p, id),
	    text, 0)), NULL, ac_submitted_cb, a);
	free(text);
	free(id);
}

static void
ac_stop_done(struct etcd_reply *r, const char *err, void *arg)
{
	struct ac	*a = arg;
	json_t		*ops;

	if (ac_failed(a, err))
		return;
	if (!r->succeeded) {
		/* placed or ended between the read and the Txn: read again */
		if (++a->tries < AC_STOP_TRIES) {
			json_decref(a->out);
			json_decref(a->rest);
			a->out = a->rest = NULL;
			a->rest_at = 0;
			etcd_range(cluster->etcd, cluster->prefix, 1,
			    ac_stop_cb, a);
			return;
		}
		api_error(a->req, 409, "job %s moved meanwhile; try again",
		    json_string_value(json_object_get(a->out, "id")));
		ac_free(a);
		return;
	}
	cluster->nwrites++;
	if (a->rest != NULL && a->rest_at < json_array_size(a->rest)) {
		/* what did not fit in the Txn before: the next part */
		ops = json_array();
		while (json_array_size(ops) < ETCD_TXN_OPS &&
		    a->rest_at < json_array_size(a->rest))
			json_array_append(ops, json_array_get(a->rest,
			    a->rest_at++));
		etcd_txn(cluster->etcd, json_array(), ops, NULL, ac_stop_done,
		    a);
		return;
	}
	api_reply(a->req, 200, a->out);
	ac_free(a);
}

/*
 * Adds to a Txn's compares and ops the end of queued job o (its key kv):
 * q/ID by CAS to e/ID, stopped.  Returns that end's record (the caller
 * decrefs it).
 */
json_t *
cluster_stop_queued(const struct etcd_kv *kv, json_t *o, json_t *cmp,
    json_t *ops)
{
	json_t	*e = json_deep_copy(o);
	char	*text;

	json_object_set_new(e, "state", json_string("stopped"));
	json_object_set_new(e, "reason", json_string("stopped while queued"));
	json_object_set_new(e, "ended", json_integer(clock_ms()));
	json_object_del(e, "revision");
	json_object_del(e, "stop");
	text = json_dumps(e, JSON_COMPACT);
	json_array_append_new(cmp, etcd_cmp(kv->key, "MOD", kv->mod_rev));
	json_array_append_new(ops, etcd_op_delete(kv->key));
	json_array_append_new(ops, etcd_op_put(cluster_key("e/%s",
	    json_string_value(json_object_get(e, "id"))), text, 0));
	free(text);
	return (e);
}

/* A queued job ends at once; one placed is stopped by its member. */
static void
ac_stop_found(struct ac *a, const struct etcd_kv *kv, json_t *o)
{
	const char	*rest = kv->key + strlen(cluster->prefix);
	const char	*id = json_string_value(json_object_get(o, "id"));
	json_t		*cmp, *ops;
	char		*text;

	if (*rest == 'q') {
		cmp = json_array();
		ops = json_array();
		a->out = cluster_stop_queued(kv, o, cmp, ops);
		etcd_txn(cluster->etcd, cmp, ops, NULL, ac_stop_done, a);
		return;
	}
	json_object_set_new(o, "stop", json_true());
	a->out = json_incref(o);
	text = cluster_stop_value(json_object_get(o, "owner"));
	etcd_txn(cluster->etcd, json_array(), json_pack("[o]", etcd_op_put(
	    cluster_key("s/%s", id), text, 0)), NULL, ac_stop_done, a);
	free(text);
}

/* Whether part o ended before the first failure f so far. */
static int
ac_gang_first(json_t *o, json_t *f)
{
	const char	*st = json_string_value(json_object_get(o, "state"));
	json_int_t	 code = json_integer_value(json_object_get(o,
			     "exit_code"));

	if (st == NULL || (strcmp(st, "exited") == 0 && code == 0) ||
	    json_object_get(o, "ended") == NULL)
		return (0);	/* not ended, or not a failure */
	return (f == NULL || json_integer_value(json_object_get(o, "ended")) <
	    json_integer_value(json_object_get(f, "ended")));
}

/* The parts of gang want in r that the request may see, as listed. */
static json_t *
ac_gang_parts(struct ac *a, struct etcd_reply *r, const char *want)
{
	json_t		*o, *g, *parts = json_array(), *out;
	const char	*gid;
	json_int_t	 attempt = 0;
	u_int		 i;
	size_t		 k;

	for (i = 0; i < r->nkvs; i++) {
		if ((o = ac_job(&r->kvs[i])) == NULL)
			continue;
		g = json_object_get(o, "gang");
		gid = json_string_value(json_object_get(g, "id"));
		if (gid == NULL || strcmp(gid, want) != 0 || !ac_owned(a, o)) {
			json_decref(o);
			continue;
		}
		if (json_integer_value(json_object_get(g, "attempt")) > attempt)
			attempt = json_integer_value(json_object_get(g,
			    "attempt"));
		json_array_append_new(parts, o);
	}
	/* a requeued gang is its last attempt */
	out = json_array();
	json_array_foreach(parts, k, o) {
		if (json_integer_value(json_object_get(json_object_get(o,
		    "gang"), "attempt")) == attempt)
			json_array_append(out, o);
	}
	json_decref(parts);
	return (out);
}

/* Gang record g's part of rank 0 (g holds it), or NULL. */
json_t *
ac_rank0(json_t *g)
{
	json_t	*p;
	size_t	 i;

	json_array_foreach(json_object_get(g, "parts"), i, p) {
		if (json_integer_value(json_object_get(json_object_get(p,
		    "gang"), "rank")) == 0)
			return (p);
	}
	return (NULL);
}

/*
 * A gang's record, made of its parts' (gang.id = want): ended when all
 * are, with the first failure's state, exit code and reason; NULL if none.
 */
static json_t *
ac_gang(struct ac *a, struct etcd_reply *r, const char *want)
{
	json_t		*o, *g, *parts, *first = NULL;
	size_t		 i, ended = 0;

	parts = ac_gang_parts(a, r, want);
	if ((o = json_array_get(parts, 0)) == NULL) {
		json_decref(parts);
		return (NULL);
	}
	g = json_pack("{s:s,s:O,s:O}", "id", want, "owner", json_object_get(o,
	    "owner"), "req", json_object_get(o, "req"));
	json_array_foreach(parts, i, o) {
		ended += json_object_get(o, "ended") != NULL;
		if (ac_gang_first(o, first))
			first = o;
	}
	json_object_set_new(g, "state", json_string(ended <
	    json_array_size(parts) ? "running" : first != NULL ?
	    json_string_value(json_object_get(first, "state")) : "exited"));
	if (ended == json_array_size(parts))
		json_object_set_new(g, "exit_code", json_integer(first != NULL ?
		    json_integer_value(json_object_get(first, "exit_code")) :
		    0));
	if (first != NULL && json_object_get(first, "reason") != NULL)
		json_object_set(g, "reason", json_object_get(first, "reason"));
	json_object_set_new(g, "parts", parts);
	if ((o = ac_rank0(g)) != NULL)	/* whose output gmux run follows */
		json_object_set(g, "rank0", json_object_get(o, "id"));
	return (g);
}

/*
 * The record of job want in a range of the whole prefix, if the request
 * may see it (the caller decrefs it), its key in *kvp (NULL for a gang,
 * made of its parts' records); NULL with a 404 sent if none.
 */
json_t *
ac_find(struct ac *a, struct etcd_reply *r, const char *want,
    const struct etcd_kv **kvp, int gang)
{
	const char	*id;
	json_t		*o;
	u_int		 i;

	*kvp = NULL;	/* a gang's record is made of its parts' */
	for (i = 0; i < r->nkvs; i++) {
		if ((o = ac_job(&r->kvs[i])) == NULL)
			continue;
		id = json_string_value(json_object_get(o, "id"));
		if (strcmp(id, want) == 0 && ac_owned(a, o)) {
			*kvp = &r->kvs[i];
			return (o);
		}
		json_decref(o);
	}
	if (gang && (o = ac_gang(a, r, want)) != NULL)
		return (o);
	api_error(a->req, 404, "no cluster job %s", want);
	return (NULL);
}

/* A placed gang stops whole: a stop for each of its parts not ended. */
static void
ac_stop_gang(struct ac *a, json_t *g)
{
	json_t		*ops = json_array(), *p;
	size_t		 i;
	char		*text;
	const char	*id;

	if (strcmp(json_string_value(json_object_get(g, "state")),
	    "running") != 0) {
		api_error(a->req, 409, "job %s has ended",
		    json_string_value(json_object_get(g, "id")));
		json_decref(g);
		json_decref(ops);
		ac_free(a);
		return;
	}
	text = cluster_stop_value(json_object_get(g, "owner"));
	json_array_foreach(json_object_get(g, "parts"), i, p) {
		id = json_string_value(json_object_get(p, "id"));
		if (json_object_get(p, "ended") == NULL)
			json_array_append_new(ops, etcd_op_put(cluster_key(
			    "s/%s", id), text, 0));
	}
	free(text);
	json_object_set_new(g, "stop", json_true());
	a->out = g;
	etcd_txn(cluster->etcd, json_array(), ops, NULL, ac_stop_done, a);
}

/* An array stops whole: no more elements, and its live ones stopped. */
static void
ac_stop_array(struct ac *a, const struct etcd_kv *kv, struct etcd_reply *r,
    json_t *o)
{
	json_t	*cmp = json_array(), *ops = json_array();
	int	 more;

	cluster_array_view(o, r);
	if (strcmp(json_string_value(json_object_get(o, "state")), "exited")
	    == 0 || strcmp(json_string_value(json_object_get(o, "state")),
	    "failed") == 0) {
		api_error(a->req, 409, "job %s has ended",
		    json_string_value(json_object_get(o, "id")));
		json_decref(o);
		json_decref(cmp);
		json_decref(ops);
		ac_free(a);
		return;
	}
	a->rest = json_array();
	cluster_array_stop_txn(o, kv, r, cmp, ops, a->rest, &more);
	json_object_set_new(o, "stop", json_true());
	if (more)	/* too many queued (never): the next stop ends them */
		json_object_set_new(o, "more", json_true());
	a->out = o;
	etcd_txn(cluster->etcd, cmp, ops, NULL, ac_stop_done, a);
}

static void
ac_stop_cb(struct etcd_reply *r, const char *err, void *arg)
{
	struct ac		*a = arg;
	const char		*want = json_string_value(a->body);
	const struct etcd_kv	*kv = NULL;
	json_t			*o;

	if (ac_failed(a, err))
		return;
	if ((o = ac_find(a, r, want, &kv, 1)) == NULL) {
		ac_free(a);
		return;
	}
	if (kv == NULL) {		/* a placed gang: its parts */
		ac_stop_gang(a, o);
		return;
	}
	if (kv->key[strlen(cluster->prefix)] == 'e') {
		api_error(a->req, 409, "job %s has ended", want);
		json_decref(o);
		ac_free(a);
		return;
	}
	if (kv->key[strlen(cluster->prefix)] == 'y') {
		ac_stop_array(a, kv, r, o);
		return;
	}
	ac_stop_found(a, kv, o);
	json_decref(o);
}

static void
ac_get_cb(struct etcd_reply *r, const char *err, void *arg)
{
	struct ac		*a = arg;
	const struct etcd_kv	*kv;
	const char		*member;
	struct job		*j;
	json_t			*o;

	if (ac_failed(a, err))
		return;
	if ((o = ac_find(a, r, json_string_value(a->body), &kv, 1)) != NULL) {
		if (kv != NULL && kv->key[strlen(cluster->prefix)] == 'y')
			cluster_array_view(o, r);
		/* the member that runs it knows its local job */
		member = json_string_value(json_object_get(o, "member"));
		if (member != NULL && strcmp(member, cluster->name) == 0 &&
		    (j = cluster_job_local(json_string_value(a->body))) != NULL)
			json_object_set_new(o, "local", json_string(j->name));
		api_reply(a->req, 200, o);
		json_decref(o);
	}
	ac_free(a);
}

/* A request about one job: its id, kept in a->body; NULL if sent 400. */
struct ac *
ac_job_request(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct ac	*a;

	if (!ac_member(req))
		return (NULL);
	a = ac_new(req, who);
	if ((a->body = json_string(id)) == NULL) {
		api_error(req, 400, "id: not UTF-8");
		ac_free(a);
		return (NULL);
	}
	return (a);
}

/* GET /v1/cluster/jobs/ID: one cluster job's record, wherever it is. */
void
api_cluster_job(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct ac	*a;

	if ((a = ac_job_request(req, id, who)) != NULL)
		etcd_range(cluster->etcd, cluster->prefix, 1, ac_get_cb, a);
}

/*
 * POST /v1/cluster/jobs/ID/stop: stops a cluster job wherever it is: a
 * queued one ends at once, a placed one is stopped by its member.
 */
void
api_cluster_stop(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct ac	*a;

	if ((a = ac_job_request(req, id, who)) != NULL)
		etcd_range(cluster->etcd, cluster->prefix, 1, ac_stop_cb, a);
}

/*
 * A job from another machine (over TCP) runs jailed on its member, as a
 * remote job does, in the tree it synced to this member (its member
 * fetches it from here: cluster-tree.c) or in an empty directory: a
 * directory of a host means nothing on another.  Returns 0, or the
 * status (400, 412 with *reply: what to sync again) with *cause.
 */
static int
ac_confined_refusal(const struct jobreq *r, json_t **reply, char **cause)
{
	int	 code;

	*reply = NULL;
	if (r->cwd != NULL) {
		xasprintf(cause, "cwd: a cluster job from another machine "
		    "runs in the tree it synced (manifest) or in an empty "
		    "directory on its member, not in a directory of a host");
		return (400);
	}
	if (r->spec.output != NULL || r->spec.error != NULL) {
		/* as one host refuses it (jobspec-host.c), but at once */
		xasprintf(cause, "%s: a remote job's output streams back; it "
		    "writes no file on the host (gmux logs ID reads it)",
		    r->spec.output != NULL ? "output" : "error");
		return (400);
	}
	if (r->manifest != NULL &&
	    (code = api_remote_have_tree(r->manifest, reply, cause)) != 0)
		return (code);
	return (0);
}

/*
 * POST /v1/cluster/jobs: a job for the cluster (the body as POST
 * /v1/jobs), queued for the leader to place; 422 if no member could ever
 * hold it.
 */
void
api_cluster_submit(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct jobreq	 r;
	struct ac	*a;
	json_t		*body, *reply = NULL;
	char		*cause = NULL;
	int		 code = 400;

	if (!ac_member(req))
		return;
	jobreq_init(&r);
	if ((body = api_body(req, &cause)) == NULL ||
	    jobreq_from_json(body, &r, &cause) != 0 || (who->confined &&
	    (code = ac_confined_refusal(&r, &reply, &cause)) != 0)) {
		if (reply != NULL) {	/* 412: what is missing */
			api_reply(req, code, reply);
			json_decref(reply);
		} else
			api_error(req, code, "%s", cause);
		free(cause);
		json_decref(body);
		jobreq_clear(&r);
		return;
	}
	jobreq_clear(&r);
	a = ac_new(req, who);
	a->body = body;
	etcd_range(cluster->etcd, cluster_key("m/"), 1, ac_submit_cb, a);
}
