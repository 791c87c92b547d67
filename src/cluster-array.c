/*
 * cluster-array.c: a cluster's arrays (docs/cluster.md, "Arrays"), one
 * record, y/ID, until its elements start.  Each pass, the leader queues
 * an array's next elements, ID_N, as ordinary jobs (q/ID_N, placed like
 * any other) while fewer than its limit (%N) are live and fewer than
 * CA_QUEUED wait in the queue: one fenced Txn that moves y/ID's "next" by
 * compare-and-swap and puts the elements whose keys do not exist yet, so
 * no element is queued twice, whoever leads.
 */

#include <stdlib.h>
#include <string.h>

#include "cluster-int.h"

#define CA_QUEUED	4	/* an array's elements queued at once */
#define CA_MIN(a, b)	((a) < (b) ? (a) : (b))
#define CA_STOP_OPS	120	/* etcd takes 128 operations a Txn */

struct ca_count {
	u_int		 live;		/* queued, assigned or running */
	u_int		 queued;
};

struct ca_txn {
	u_int		 gen;
	char		*ykey;
	json_t		*yval;
	json_t		*els;		/* [[key, record], ...] */
};

static struct {
	struct mirror	*y;
	struct mirror	*q;		/* the scheduler's, this pass */
	u_int		 gen;		/* bumped on each stop */
} ca;

void
cluster_array_start(void)
{
	ca.y = mirror_create(cluster->etcd, cluster_key("y/"), NULL, NULL);
}

void
cluster_array_stop(void)
{
	if (ca.y != NULL)
		mirror_free(ca.y);
	ca.y = ca.q = NULL;
	ca.gen++;		/* their answers find them gone */
}

/* The array a job record is an element of, or NULL. */
static const char *
ca_of(const json_t *rec)
{
	return (json_string_value(json_object_get(json_object_get(rec,
	    "element"), "of")));
}

/* Counts each array's live elements in mr (queued: q/). */
static void
ca_count(struct hmap *h, struct mirror *mr, int queued)
{
	struct mirror_entry	*me;
	struct ca_count		*c;
	const char		*of;
	size_t			 it = 0;

	while (mirror_next(mr, &it, &me)) {
		if ((of = ca_of(me->val)) == NULL)
			continue;
		if ((c = hmap_get(h, of)) == NULL) {
			c = xcalloc(1, sizeof *c);
			hmap_put(h, xstrdup(of), c);
		}
		c->live++;
		c->queued += queued;
	}
}

static void
ca_count_free(struct hmap *h)
{
	const char	*k;
	void		*v;
	size_t		 it = 0;

	while (hmap_next(h, &it, &k, &v)) {
		free((char *)k);
		free(v);
	}
	hmap_free(h);
}

/* Element position pos of array rec (spec s), as its q/ record. */
static json_t *
ca_element(const json_t *rec, const char *id, const struct array_spec *s,
    u_int pos)
{
	json_t	*o = json_deep_copy(rec);
	u_int	 index = array_index(s, pos);
	char	*eid;

	xasprintf(&eid, "%s_%u", id, index);
	json_object_set_new(o, "id", json_string(eid));
	free(eid);
	json_object_del(o, "array");
	json_object_del(json_object_get(o, "req"), "array");
	json_object_set_new(o, "element", json_pack("{s:s,s:i,s:i,s:i,s:i,"
	    "s:i}", "of", id, "index", index, "count", s->count, "min",
	    s->v[0].lo, "max", s->v[s->n - 1].hi, "step", s->n == 1 ?
	    s->v[0].step : 0));
	return (o);
}

static void
ca_txn_free(struct ca_txn *t)
{
	free(t->ykey);
	json_decref(t->yval);
	json_decref(t->els);
	free(t);
}

static void
ca_txn_cb(struct etcd_reply *r, const char *err, void *arg)
{
	struct ca_txn		*t = arg;
	struct mirror_entry	*me;
	json_t			*kv;
	size_t			 i;

	if (t->gen != ca.gen || ca.y == NULL)
		goto out;	/* from before the last stop */
	if ((me = mirror_get(ca.y, t->ykey)) != NULL)
		me->held = 0;
	if (err != NULL || !r->succeeded) {
		log_debug("%s: %s: %s", __func__, t->ykey, err != NULL ? err :
		    "moved meanwhile");
		goto out;	/* the mirror learns what moved */
	}
	cluster->nwrites++;
	/* the counts of the next pass must see them before the watch does */
	mirror_put(ca.y, t->ykey, json_incref(t->yval), r->rev, 0);
	json_array_foreach(t->els, i, kv) {
		log_debug("%s: queued %s", __func__, json_string_value(
		    json_array_get(kv, 0)));
		if (ca.q != NULL)
			mirror_put(ca.q, json_string_value(json_array_get(kv,
			    0)), json_incref(json_array_get(kv, 1)), r->rev, 0);
	}
out:
	ca_txn_free(t);
}

/* Queues n elements of array me from position next, in one fenced Txn. */
static void
ca_send(struct mirror_entry *me, const char *id, const struct array_spec *s,
    u_int next, u_int n)
{
	struct ca_txn	*t = xcalloc(1, sizeof *t);
	json_t		*cmp = json_array(), *ok = json_array(), *el;
	char		*text;
	const char	*eid;
	u_int		 k;

	t->gen = ca.gen;
	t->ykey = xstrdup(me->key);
	t->els = json_array();
	json_array_append_new(cmp, etcd_cmp(me->key, "MOD", me->mod_rev));
	for (k = 0; k < n; k++) {
		el = ca_element(me->val, id, s, next + k);
		eid = json_string_value(json_object_get(el, "id"));
		json_array_append_new(cmp, etcd_cmp(cluster_key("q/%s", eid),
		    "CREATE", 0));
		json_array_append_new(cmp, etcd_cmp(cluster_key("e/%s", eid),
		    "CREATE", 0));
		text = json_dumps(el, JSON_COMPACT);
		json_array_append_new(ok, etcd_op_put(cluster_key("q/%s", eid),
		    text, 0));
		free(text);
		json_array_append_new(t->els, json_pack("[so]", cluster_key(
		    "q/%s", eid), el));
	}
	t->yval = json_deep_copy(me->val);
	json_object_set_new(json_object_get(t->yval, "array"), "next",
	    json_integer(next + n));
	text = json_dumps(t->yval, JSON_COMPACT);
	json_array_append_new(ok, etcd_op_put(me->key, text, 0));
	free(text);
	me->held = 1;		/* not again until the Txn has answered */
	etcd_txn(cluster->etcd, cluster_fence(cmp), ok, NULL, ca_txn_cb, t);
}

/* How many of array me's elements to queue now (c: its live ones). */
static void
ca_feed(struct mirror_entry *me, const struct ca_count *c)
{
	struct array_spec	 s;
	json_t			*prog = json_object_get(me->val, "array");
	const char		*id, *spec;
	char			*cause = NULL;
	u_int			 next, n, live = c ? c->live : 0;
	u_int			 queued = c ? c->queued : 0;

	id = json_string_value(json_object_get(me->val, "id"));
	spec = json_string_value(json_object_get(json_object_get(me->val,
	    "req"), "array"));
	if (id == NULL || spec == NULL || !json_is_object(prog) ||
	    json_is_true(json_object_get(prog, "stopped")))
		return;
	memset(&s, 0, sizeof s);
	if (array_parse(spec, &s, &cause) != 0) {
		log_warnx("cluster: %s: %s; skipped", me->key, cause);
		free(cause);
		return;
	}
	next = (u_int)json_integer_value(json_object_get(prog, "next"));
	n = next < s.count ? s.count - next : 0;
	if (s.limit != 0 && n > 0)
		n = live < s.limit ? CA_MIN(n, s.limit - live) : 0;
	n = queued < CA_QUEUED ? CA_MIN(n, CA_QUEUED - queued) : 0;
	if (n > 0)
		ca_send(me, id, &s, next, n);
	array_clear(&s);
}

/*
 * The leader's pass over its arrays, with the scheduler's mirrors of the
 * queue and of what is assigned and running (to count each array's live
 * elements).
 */
void
cluster_array_tick(struct mirror *q, struct mirror *a, struct mirror *r)
{
	struct mirror_entry	*me;
	struct hmap		*h;
	const char		*id;
	size_t			 it = 0;

	if (ca.y == NULL)
		return;
	mirror_restart(ca.y);
	if (!mirror_ready(ca.y))
		return;
	ca.q = q;
	h = hmap_create();
	ca_count(h, q, 1);
	ca_count(h, a, 0);
	ca_count(h, r, 0);
	while (mirror_next(ca.y, &it, &me)) {
		if (me->held || (id = json_string_value(json_object_get(
		    me->val, "id"))) == NULL)
			continue;
		ca_feed(me, hmap_get(h, id));
	}
	ca_count_free(h);
}

/*
 * An array's record o (y/ID) as a row of the queue (GET /v1/cluster/queue),
 * from a range of the whole prefix r: 0 if none of its elements is left
 * to queue (or it is stopped), else 1 with "waiting" (its elements not
 * queued yet) and, when they wait for the array itself, "waits_for" (its
 * %N limit, or its queued elements, which go first); otherwise they wait
 * for what its queued elements would (cluster-why.c).
 */
int
cluster_array_queue_row(json_t *o, const struct etcd_reply *r)
{
	json_t		*prog = json_object_get(o, "array"), *el;
	json_int_t	 count, next, limit, live, queued;
	char		*why;

	count = json_integer_value(json_object_get(prog, "count"));
	next = json_integer_value(json_object_get(prog, "next"));
	limit = json_integer_value(json_object_get(prog, "limit"));
	if (json_is_true(json_object_get(prog, "stopped")) || next >= count)
		return (0);
	cluster_array_view(o, r);
	el = json_object_get(o, "elements");
	queued = json_integer_value(json_object_get(el, "queued"));
	live = queued + json_integer_value(json_object_get(el, "assigned")) +
	    json_integer_value(json_object_get(el, "running"));
	json_object_set_new(o, "waiting", json_integer(count - next));
	why = NULL;
	if (limit != 0 && live >= limit)
		xasprintf(&why, "its limit: %lld of its elements live (%%%lld)",
		    (long long)live, (long long)limit);
	else if (queued >= CA_QUEUED)
		xasprintf(&why, "its %lld queued elements, first",
		    (long long)queued);
	if (why != NULL)
		json_object_set_new(o, "waits_for", json_string(why));
	free(why);
	return (1);
}

/*
 * A submission's record rec: if its request is an array, its progress
 * ("array": {"count", "limit", "next": 0}) is added and 1 returned (its
 * key is then y/ID), else 0.
 */
int
cluster_array_prepare(json_t *rec)
{
	struct array_spec	 s;
	const char		*spec;
	char			*cause = NULL;

	spec = json_string_value(json_object_get(json_object_get(rec, "req"),
	    "array"));
	memset(&s, 0, sizeof s);
	if (spec == NULL)
		return (0);
	if (array_parse(spec, &s, &cause) != 0) {	/* jobreq checked it */
		free(cause);
		return (0);
	}
	json_object_set_new(rec, "array", json_pack("{s:i,s:i,s:i}", "count",
	    s.count, "limit", s.limit, "next", 0));
	array_clear(&s);
	return (1);
}

/* An element's variables, as a local array's (job-array.c). */
void
cluster_array_env(json_t *el, char ***env)
{
	const char	*of = json_string_value(json_object_get(el, "of"));
	json_int_t	 index, count, step;

	if (of == NULL)
		return;
	index = json_integer_value(json_object_get(el, "index"));
	count = json_integer_value(json_object_get(el, "count"));
	step = json_integer_value(json_object_get(el, "step"));
	job_env_set(env, "GMUX_ARRAY_JOB_ID=%s", of);
	job_env_set(env, "GMUX_ARRAY_INDEX=%lld", (long long)index);
	job_env_set(env, "GMUX_ARRAY_COUNT=%lld", (long long)count);
	job_env_set(env, "SLURM_ARRAY_JOB_ID=%s", of);
	job_env_set(env, "SLURM_ARRAY_TASK_ID=%lld", (long long)index);
	job_env_set(env, "SLURM_ARRAY_TASK_COUNT=%lld", (long long)count);
	job_env_set(env, "SLURM_ARRAY_TASK_MIN=%lld", (long long)
	    json_integer_value(json_object_get(el, "min")));
	job_env_set(env, "SLURM_ARRAY_TASK_MAX=%lld", (long long)
	    json_integer_value(json_object_get(el, "max")));
	if (step != 0)
		job_env_set(env, "SLURM_ARRAY_TASK_STEP=%lld",
		    (long long)step);
}

/* Did ended job o exit 0? */
static int
ca_exited_0(json_t *o)
{
	const char	*st = json_string_value(json_object_get(o, "state"));

	return (st != NULL && strcmp(st, "exited") == 0 &&
	    json_integer_value(json_object_get(o, "exit_code")) == 0);
}

/* Counts, in a range of the whole prefix r, the elements of array id. */
static void
ca_tally(const struct etcd_reply *r, const char *id, json_int_t *n,
    json_int_t *failed)
{
	size_t		 plen = strlen(cluster->prefix);
	const char	*st, *letters = "qare";
	json_t		*o;
	u_int		 i;

	for (i = 0; i < r->nkvs; i++) {
		if ((st = strchr(letters, r->kvs[i].key[plen])) == NULL ||
		    *st == '\0' || r->kvs[i].key[plen + 1] != '/')
			continue;
		o = json_loadb(r->kvs[i].value, r->kvs[i].vlen, 0, NULL);
		if (o != NULL && ca_of(o) != NULL &&
		    strcmp(ca_of(o), id) == 0) {
			n[st - letters]++;
			if (*st == 'e' && !ca_exited_0(o))
				(*failed)++;
		}
		json_decref(o);
	}
}

/*
 * An array's record o (y/ID) as GET /v1/cluster/jobs/ID shows it, from a
 * range of the whole prefix r: its elements by state, and its own state:
 * queued until one is placed, running until every element has ended, then
 * exited (all exited 0), failed, or stopped.
 */
void
cluster_array_view(json_t *o, const struct etcd_reply *r)
{
	json_t		*prog = json_object_get(o, "array");
	json_int_t	 n[4] = { 0, 0, 0, 0 }, failed = 0, count;
	const char	*st;

	ca_tally(r, json_string_value(json_object_get(o, "id")), n, &failed);
	count = json_integer_value(json_object_get(prog, "count"));
	if (json_is_true(json_object_get(prog, "stopped")))
		st = n[0] + n[1] + n[2] == 0 ? "stopped" : "running";
	else if (n[3] == count)
		st = failed != 0 ? "failed" : "exited";
	else
		st = n[1] + n[2] + n[3] == 0 ? "queued" : "running";
	json_object_set_new(o, "state", json_string(st));
	json_object_set_new(o, "elements", json_pack("{s:I,s:I,s:I,s:I,s:I,"
	    "s:I}", "count", count, "queued", n[0], "assigned", n[1],
	    "running", n[2], "ended", n[3], "failed", failed));
}

/*
 * The Txn that stops array ykv (its record o): no element is queued any
 * more (y/ID "stopped", by CAS) and queued elements end at once (q -> e,
 * by CAS), in cmp and ops; placed ones get their stop (s/ID_N) for their
 * members, in rest, which the caller writes once that Txn has held (in
 * Txns of its own: etcd takes 128 operations a Txn, and nothing queues
 * an element of the array once it is stopped).  Past CA_STOP_OPS queued
 * elements (never: CA_QUEUED are), the rest are left for the next stop
 * (*more set).
 */
void
cluster_array_stop_txn(json_t *o, const struct etcd_kv *ykv,
    const struct etcd_reply *r, json_t *cmp, json_t *ops, json_t *rest,
    int *more)
{
	size_t		 plen = strlen(cluster->prefix);
	const char	*id = json_string_value(json_object_get(o, "id"));
	const char	*eid;
	char		*text, *stop;
	json_t		*e, *y;
	u_int		 i;

	y = json_loadb(ykv->value, ykv->vlen, 0, NULL);
	json_object_set_new(json_object_get(y, "array"), "stopped",
	    json_true());
	text = json_dumps(y, JSON_COMPACT);
	json_array_append_new(cmp, etcd_cmp(ykv->key, "MOD", ykv->mod_rev));
	json_array_append_new(ops, etcd_op_put(ykv->key, text, 0));
	free(text);
	stop = cluster_stop_value(json_object_get(y, "owner"));
	*more = 0;
	for (i = 0; i < r->nkvs; i++) {
		if (strchr("qar", r->kvs[i].key[plen]) == NULL ||
		    r->kvs[i].key[plen] == '\0' ||
		    (e = json_loadb(r->kvs[i].value, r->kvs[i].vlen, 0,
		    NULL)) == NULL)
			continue;
		eid = json_string_value(json_object_get(e, "id"));
		if (ca_of(e) == NULL || strcmp(ca_of(e), id) != 0 ||
		    eid == NULL) {
			json_decref(e);
			continue;
		}
		if (r->kvs[i].key[plen] != 'q')
			json_array_append_new(rest, etcd_op_put(cluster_key(
			    "s/%s", eid), stop, 0));
		else if (json_array_size(ops) + 2 > CA_STOP_OPS)
			*more = 1;
		else
			json_decref(cluster_stop_queued(&r->kvs[i], e, cmp,
			    ops));
		json_decref(e);
	}
	free(stop);
	json_decref(y);
}
