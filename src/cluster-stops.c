/*
 * cluster-stops.c: the leader's sweep of stops nobody will take.  A stop,
 * s/ID, is deleted by the end of its job (cluster-job.c); but a stop of a
 * job whose member left for good (a gang's part the leader ended, a
 * running job of a member that never returns), or one a failed part put
 * for a part that had already ended, has no job left to end it.  A stop
 * whose job is in none of q/, a/ and r/ for CLUSTER_STOP_KEEP_MS (long
 * enough for a member cut off to come back and stop its copy) is deleted
 * by the leader, by compare-and-swap on its revision.
 */

#include <stdlib.h>
#include <string.h>

#include "cluster-int.h"

#define CLUSTER_STOP_KEEP_MS	300000	/* a stop with no live job, kept */
#define CLUSTER_STOP_SWEEP_MS	2000	/* between sweeps */

struct cst_orphan {			/* a stop with no live job */
	char		*id;		/* its key in orphans */
	int64_t		 since;
	u_int		 sweep;		/* the last sweep that saw it */
};

static struct {
	struct mirror	*s;
	struct hmap	*orphans;	/* id -> struct cst_orphan */
	int64_t		 last;
	u_int		 sweep;
	u_int		 gen;		/* bumped on each stop */
} cst;

static int64_t
cst_keep_ms(void)
{
	const char	*e = getenv("GMUX_TEST_STOP_KEEP_MS");
	long		 v;

	if (e != NULL && (v = strtol(e, NULL, 10)) > 0)
		return (v);
	return (CLUSTER_STOP_KEEP_MS);
}

static void
cst_orphan_free(struct cst_orphan *d)
{
	free(d->id);
	free(d);
}

static void
cst_orphan_clear(void)
{
	const char	*k;
	void		*v;
	size_t		 it = 0;

	while (cst.orphans != NULL && hmap_next(cst.orphans, &it, &k, &v))
		cst_orphan_free(v);
	hmap_free(cst.orphans);
	cst.orphans = NULL;
}

/* Forgets the stops this sweep did not see (gone, or live again). */
static void
cst_orphan_prune(void)
{
	struct cst_orphan	**gone, *d;
	const char	 *k;
	void		 *v;
	size_t		  it = 0, n = 0, i;

	gone = xreallocarray(NULL, hmap_count(cst.orphans) + 1, sizeof *gone);
	while (hmap_next(cst.orphans, &it, &k, &v)) {
		if ((d = v)->sweep != cst.sweep)
			gone[n++] = d;
	}
	for (i = 0; i < n; i++) {
		hmap_del(cst.orphans, gone[i]->id);
		cst_orphan_free(gone[i]);
	}
	free(gone);
}

void
cluster_stops_start(void)
{
	cst.s = mirror_create(cluster->etcd, cluster_key("s/"), NULL, NULL);
	cst.orphans = hmap_create();
	cst.last = 0;
}

void
cluster_stops_stop(void)
{
	if (cst.s != NULL)
		mirror_free(cst.s);
	cst.s = NULL;
	cst_orphan_clear();
	cst.gen++;		/* their answers find them gone */
}

/* The ids of the jobs in a (a/NAME/ID or r/NAME/ID), into live. */
static void
cst_live(struct hmap *live, struct mirror *mr)
{
	struct mirror_entry	*me;
	const char		*id;
	size_t			 it = 0, plen = strlen(cluster->prefix) + 2;

	while (mirror_next(mr, &it, &me)) {
		if ((id = strchr(me->key + plen, '/')) != NULL)
			hmap_put(live, id + 1, me);
	}
}

struct cst_txn {
	u_int		 gen;
	char		*key;
};

static void
cst_txn_free(void *arg)
{
	struct cst_txn	*t = arg;

	free(t->key);
	free(t);
}

static void
cst_deleted_cb(struct etcd_reply *r, const char *err, void *arg)
{
	struct cst_txn		*t = arg;
	struct mirror_entry	*me;

	if (t->gen == cst.gen && cst.s != NULL) {
		if (err == NULL && r->succeeded)
			cluster->nwrites++;
		else if ((me = mirror_get(cst.s, t->key)) != NULL)
			me->held = 0;	/* moved meanwhile: seen again */
	}
	cst_txn_free(t);
}

/* Stop me of id has had no live job since *since: deleted past the keep. */
static void
cst_orphan(struct mirror_entry *me, const char *id, int64_t now)
{
	struct cst_orphan	*d;
	struct cst_txn	*t;

	if ((d = hmap_get(cst.orphans, id)) == NULL) {
		d = xcalloc(1, sizeof *d);
		d->id = xstrdup(id);
		d->since = now;
		hmap_put(cst.orphans, d->id, d);
	}
	d->sweep = cst.sweep;
	if (me->held || now - d->since < cst_keep_ms())
		return;
	log_info("cluster: stop of %s: no job left to take it; deleted", id);
	me->held = 1;
	t = xmalloc(sizeof *t);
	t->gen = cst.gen;
	t->key = xstrdup(me->key);
	etcd_call_owns(etcd_txn(cluster->etcd, cluster_fence(json_pack("[o]",
	    etcd_cmp(me->key, "MOD", me->mod_rev))), json_pack("[o]",
	    etcd_op_delete(me->key)), NULL, cst_deleted_cb, t), cst_txn_free);
}

/*
 * One sweep, every CLUSTER_STOP_SWEEP_MS, from the pass's mirrors of the
 * queue and what is placed: one walk of each.
 */
void
cluster_stops_tick(struct mirror *q, struct mirror *a, struct mirror *r,
    int64_t now)
{
	struct mirror_entry	*me;
	struct hmap		*live;
	const char		*id;
	size_t			 it = 0, plen;

	if (cst.s == NULL || now - cst.last < CLUSTER_STOP_SWEEP_MS)
		return;
	mirror_restart(cst.s);
	if (!mirror_ready(cst.s))
		return;
	cst.last = now;
	cst.sweep++;
	live = hmap_create();
	cst_live(live, a);
	cst_live(live, r);
	plen = strlen(cluster_key("s/"));
	while (mirror_next(cst.s, &it, &me)) {
		id = me->key + plen;
		if (hmap_get(live, id) == NULL &&
		    mirror_get(q, cluster_key("q/%s", id)) == NULL)
			cst_orphan(me, id, now);
	}
	hmap_free(live);
	cst_orphan_prune();
}
