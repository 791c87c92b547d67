/*
 * cluster-gone.c: the members that left (docs/cluster.md, "Members that
 * left").  A member's record m/NAME lives under its lease, so it goes
 * when the member stops, crashes or is cut off, and with it what the
 * cluster knew of it.  The leader keeps the last record of each member
 * its passes saw live; once a record has gone, it writes it (fenced) to
 * g/NAME with last_seen, the wall-clock time of the last pass that saw it.
 * A member deletes its g/NAME when it registers again.  gmux cluster ls -a
 * lists them.  One write per departure: a live cluster writes nothing.
 */

#include <stdlib.h>
#include <string.h>

#include "cluster-int.h"

struct cg_member {
	char		*name;		/* its key in known */
	json_t		*rec;		/* its last record */
	int64_t		 seen;		/* wall clock, ms */
	u_int		 pass;		/* the last pass that saw it */
	int		 writing;	/* its g/ Txn is in flight */
};

static struct {
	struct hmap	*known;		/* name -> struct cg_member */
	u_int		 pass;
	u_int		 gen;		/* bumped on each stop */
} cg;

struct cg_txn {
	u_int		 gen;
	char		*name;
};

static void
cg_member_free(struct cg_member *g)
{
	json_decref(g->rec);
	free(g->name);
	free(g);
}

void
cluster_gone_start(void)
{
	cg.known = hmap_create();
	cg.gen++;
}

void
cluster_gone_stop(void)
{
	size_t		 it = 0;
	const char	*k;
	void		*v;

	if (cg.known == NULL)
		return;
	while (hmap_next(cg.known, &it, &k, &v))
		cg_member_free(v);
	hmap_free(cg.known);
	cg.known = NULL;
	cg.gen++;		/* their answers find them gone */
}

/* What g/NAME holds: the last record, with when it was last seen. */
static json_t *
cg_record(json_t *rec, int64_t seen)
{
	json_t	*o = json_deep_copy(rec);

	json_object_del(o, "use");	/* measured then, not now */
	json_object_del(o, "ports_held");
	json_object_del(o, "instance");
	json_object_del(o, "origin");
	json_object_del(o, "boot");
	json_object_del(o, "pid");
	json_object_set_new(o, "last_seen", json_integer(seen));
	return (o);
}

static void
cg_txn_free(void *arg)
{
	struct cg_txn	*t = arg;

	free(t->name);
	free(t);
}

/*
 * Written: forgotten.  A compare that failed means the member is back
 * (or this leader is deposed, which its passes learn): written again
 * only once a pass has seen it live and it has gone again.  An etcd
 * that did not answer: the next pass tries again.
 */
static void
cg_written_cb(struct etcd_reply *r, const char *err, void *arg)
{
	struct cg_txn		*t = arg;
	struct cg_member	*g;

	if (t->gen == cg.gen && cg.known != NULL &&
	    (g = hmap_get(cg.known, t->name)) != NULL) {
		if (err == NULL && r->succeeded) {
			cluster->nwrites++;
			hmap_del(cg.known, t->name);
			cg_member_free(g);
		} else if (err != NULL)
			g->writing = 0;
	}
	cg_txn_free(t);
}

/* Member g has gone since the last pass: its record to g/NAME. */
static void
cg_write(struct cg_member *g)
{
	struct cg_txn	*t;
	json_t		*o;
	char		*text;

	log_info("cluster: member %s left (last seen by this leader at %lld)",
	    g->name, (long long)g->seen);
	g->writing = 1;
	t = xmalloc(sizeof *t);
	t->gen = cg.gen;
	t->name = xstrdup(g->name);
	o = cg_record(g->rec, g->seen);
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	/* not if it came back meanwhile: m/NAME must not exist */
	etcd_call_owns(etcd_txn(cluster->etcd, cluster_fence(json_pack("[o]",
	    etcd_cmp(cluster_key("m/%s", g->name), "CREATE", 0))),
	    json_pack("[o]", etcd_op_put(cluster_key("g/%s", g->name), text,
	    0)), NULL, cg_written_cb, t), cg_txn_free);
	free(text);
}

/*
 * Each pass, from the mirror of m/: the members whose key is there now
 * are known with their record (however it parses: a record the leader
 * cannot read is no departure); one known whose key has gone has left.
 */
void
cluster_gone_tick(struct mirror *m)
{
	struct mirror_entry	*me;
	struct cg_member	*g;
	size_t			 it = 0, plen = strlen(cluster_key("m/"));
	const char		*k, *name;
	void			*v;
	int64_t			 now = clock_ms();

	if (cg.known == NULL)
		return;
	cg.pass++;
	while (mirror_next(m, &it, &me)) {
		if (me->val == NULL)	/* a tombstone */
			continue;
		name = me->key + plen;
		if ((g = hmap_get(cg.known, name)) == NULL) {
			g = xcalloc(1, sizeof *g);
			g->name = xstrdup(name);
			hmap_put(cg.known, g->name, g);
		}
		if (g->rec != me->val) {
			json_decref(g->rec);
			g->rec = json_incref(me->val);
		}
		g->seen = now;
		g->pass = cg.pass;
		g->writing = 0;
	}
	it = 0;
	while (hmap_next(cg.known, &it, &k, &v)) {
		g = v;
		if (g->pass != cg.pass && !g->writing)
			cg_write(g);
	}
}
