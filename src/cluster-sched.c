/*
 * cluster-sched.c: the leader's scheduler (docs/cluster.md).  It mirrors
 * the members (m/), the queue (q/) and what is placed (a/, r/), counts
 * what it committed on each member's cards itself, and moves jobs with
 * fenced Txns of up to CLUSTER_BATCH jobs: queued jobs to the member that
 * fits them best (priority with aging, then age), unclaimed and --requeue
 * jobs of a member gone past its lease and a grace back to the queue.
 */

#include <stdlib.h>
#include <string.h>

#include "cluster-int.h"

#define CLUSTER_BATCH	60	/* 2 ops each: etcd allows 128 a Txn */
#define CLUSTER_INFLIGHT 4	/* batches at once (etcd batches their
				   fsyncs) */

struct cs_job {
	struct mirror_entry *me;
	const char	*id;
	struct cluster_shape s;
	u_int		 attempt;	/* a gang's, requeued */
	int64_t		 key;		/* queue order: lower first */
};

/* A gang with parts assigned or running, as one pass sees it. */
struct cs_gang {
	char		 id[CLUSTER_ID_MAX];
	u_int		 attempt;	/* the newest attempt live */
	uint32_t	 live;		/* its ranks live, of that attempt */
	int		 handled;	/* its loss is in this pass's batch */
};

/* A MASTER_PORT a live gang holds on its MASTER_ADDR. */
struct cs_port {
	char		 master[CLUSTER_ADDR_MAX];
	u_int		 port;
};

struct cs_gone {
	char		*name;
	int64_t		 since;		/* mono ms */
};

static struct {
	struct mirror	*m, *q, *a, *r;
	struct cluster_room *members;
	u_int		 nmembers;
	struct hmap	*seen;		/* name -> int64_t * first seen */
	struct hmap	*leases;	/* name -> int64_t * its lease */
	struct cs_gone	*gone;
	u_int		 ngone;
	struct cs_batch	*flying[CLUSTER_INFLIGHT];	/* Txns in flight */
	u_int		 nflying;
	int		 dirty;		/* something changed since a pass */
	struct cs_gang	*gangs;		/* this pass's */
	u_int		 ngangs;
	struct cs_port	*ports;		/* this pass's */
	u_int		 nports;
	uint64_t	 placed;	/* jobs assigned (the bench reads it) */
	uint64_t	 txns;
} cs;

static void
cs_changed(void *arg)
{
	cs.dirty = 1;
}


/*
 * Whether card c of m has room for an overcommitted s now: measured free
 * (its memory less what is measured in use, what the jobs committed there
 * reserve, and what overcommitted jobs placed there asked, which the
 * measure may not show yet) holds s's ask, and a step at least (a card
 * held whole keeps the bytes its share does not round to).  No seats: it
 * holds none.
 */
static int
cs_room_over(const struct cluster_room *m, const struct cluster_shape *s,
    u_int c)
{
	const struct cluster_card	*k = &m->m.cards[c];
	uint64_t			 taken;

	if (k->used == CARD_UNKNOWN)
		return (0);
	taken = k->used + m->mused[c] + m->oused[c];
	if (taken >= k->memory || k->memory - taken < CLUSTER_MEM_STEP)
		return (0);
	return (k->memory - taken >= cluster_ask(s));
}

/* Whether card c of m has room for s now (docs/cluster.md, "Placement"). */
static int
cs_room_card(const struct cluster_room *m, const struct cluster_shape *s,
    u_int c)
{
	const struct cluster_card	*k = &m->m.cards[c];
	uint64_t			 need, taken;

	if (!cluster_card_could(k, s))
		return (0);
	if (s->mode == JOBSPEC_OVERCOMMIT)
		return (cs_room_over(m, s, c));
	/* what overcommitted jobs asked is not free for a promise */
	need = cluster_need(s, k->memory);
	taken = m->mused[c] + m->oused[c];
	if (s->mode == JOBSPEC_EXCLUSIVE && m->over[c] != 0)
		return (0);
	return (m->used[c] + s->seats <= SEATS_PER_CARD &&
	    taken + need <= k->memory && k->memory - taken >= s->vram);
}

/* The cards of m with room for s now, in cards; how many. */
u_int
cluster_room_cards(const struct cluster_room *m,
    const struct cluster_shape *s, u_int *cards)
{
	u_int		 c, n = 0;

	for (c = 0; c < m->m.ncards && c < CLUSTER_CARDS; c++) {
		if (cs_room_card(m, s, c))
			cards[n++] = c;
	}
	return (n);
}

/* The seats s commits on each card: an overcommitted job holds none. */
static u_int
cs_seats(const struct cluster_shape *s)
{
	return (s->mode == JOBSPEC_OVERCOMMIT ? 0 : s->seats);
}

/* The cards of m that s fits on now, best fit first; 0 if too few. */
u_int
cluster_room_fit(const struct cluster_room *m, const struct cluster_shape *s,
    u_int *cards, u_int *left)
{
	u_int		 n, i, j, t;

	*left = 0;
	if ((n = cluster_room_cards(m, s, cards)) < s->ncards)
		return (0);
	/* the fullest cards first: best fit */
	for (i = 1; i < n; i++) {
		for (j = i; j > 0 && m->used[cards[j]] >
		    m->used[cards[j - 1]]; j--) {
			t = cards[j];
			cards[j] = cards[j - 1];
			cards[j - 1] = t;
		}
	}
	for (i = 0; i < s->ncards; i++)
		*left += SEATS_PER_CARD - m->used[cards[i]] - cs_seats(s);
	return (s->ncards);
}

/* Whether m has the CPUs and RAM s reserves, and is the member it asks. */
int
cluster_room_has(const struct cluster_room *m, const struct cluster_shape *s)
{
	return (cluster_member_could(&m->m, s) &&
	    m->cpus + s->cpus <= m->m.cpus &&
	    m->ram + s->ram <= m->m.ram);
}

/* Commits s on m's cards (sign 1), or takes it back (-1). */
void
cluster_room_charge(struct cluster_room *m, const struct cluster_shape *s,
    const u_int *cards, u_int n, int sign)
{
	u_int	 i;

	m->njobs += sign;
	m->cpus += sign * s->cpus;
	m->ram += sign * s->ram;
	for (i = 0; i < n && i < s->ncards; i++) {
		if (cards[i] >= m->m.ncards || cards[i] >= CLUSTER_CARDS)
			continue;
		if (s->mode == JOBSPEC_OVERCOMMIT) {
			m->oused[cards[i]] += sign * cluster_ask(s);
			m->over[cards[i]] += sign;
			continue;
		}
		m->used[cards[i]] += sign * s->seats;
		m->mused[cards[i]] += sign * cluster_need(s,
		    m->m.cards[cards[i]].memory);
	}
}

/* The member s fits best on now (least room left), or NULL. */
static struct cluster_room *
cs_best(const struct cluster_shape *s, u_int *cards)
{
	struct cluster_room	*best = NULL;
	u_int			 i, k, left, bleft = UINT32_MAX;
	u_int			 tmp[CLUSTER_CARDS];

	for (i = 0; i < cs.nmembers; i++) {
		if (cs.members[i].picked ||
		    !cluster_room_has(&cs.members[i], s))
			continue;
		if (s->ncards == 0 || s->seats == 0) {
			left = cs.members[i].njobs;	/* CPU jobs: spread */
			k = 0;
		} else if ((k = cluster_room_fit(&cs.members[i], s, tmp,
		    &left)) == 0)
			continue;
		if (best == NULL || left < bleft) {
			best = &cs.members[i];
			bleft = left;
			memcpy(cards, tmp, k * sizeof *cards);
		}
	}
	return (best);
}

static void
cs_charge(struct cluster_room *m, const struct cluster_shape *s,
    const u_int *cards, u_int n)
{
	cluster_room_charge(m, s, cards, n, 1);
}

static struct cluster_room *
cs_member_find(const char *name, size_t len)
{
	u_int	 i;

	for (i = 0; i < cs.nmembers; i++) {
		if (strlen(cs.members[i].m.name) == len &&
		    strncmp(cs.members[i].m.name, name, len) == 0)
			return (&cs.members[i]);
	}
	return (NULL);
}

static void
cs_members_clear(void)
{
	free(cs.members);	/* shallow copies of the mirror's cache */
	cs.members = NULL;
	cs.nmembers = 0;
}

/* A job record's request, parsed once per revision (bad: warned once). */
struct cs_parsed {
	int			 ok;
	struct cluster_shape	 s;
	u_int			 cards[CLUSTER_CARDS];
	u_int			 ncards;
	u_int			 attempt;	/* a gang's, requeued */
	int			 gang;		/* a gang's part: */
	char			 gid[CLUSTER_ID_MAX];
	char			 master[CLUSTER_ADDR_MAX];
	u_int			 rank;
	u_int			 port;
};

/* A gang part's place (its record's "gang"), kept in p. */
static void
cs_gang_parse(json_t *g, struct cs_parsed *p)
{
	const char	*gid = json_string_value(json_object_get(g, "id"));
	const char	*master = json_string_value(json_object_get(g,
			    "master"));

	if (gid == NULL || master == NULL || strlen(gid) >= sizeof p->gid ||
	    strlen(master) >= sizeof p->master)
		return;
	p->gang = 1;
	snprintf(p->gid, sizeof p->gid, "%s", gid);
	snprintf(p->master, sizeof p->master, "%s", master);
	p->rank = (u_int)json_integer_value(json_object_get(g, "rank"));
	p->port = (u_int)json_integer_value(json_object_get(g, "port"));
	p->attempt = (u_int)json_integer_value(json_object_get(g,
	    "attempt"));
}

static const struct cs_parsed *
cs_job_parse(struct mirror_entry *me)
{
	struct cs_parsed	*p = me->cache;
	json_t			*x;
	size_t			 i;
	char			*cause = NULL;

	if (p == NULL) {
		me->cache = p = xcalloc(1, sizeof *p);
		if (cluster_shape_parse(me->val, &p->s, &cause) != 0) {
			log_warnx("cluster: %s (revision %lld): %s; skipped",
			    me->key, (long long)me->mod_rev, cause);
			free(cause);
			return (NULL);
		}
		p->ok = 1;
		json_array_foreach(json_object_get(me->val, "cards"), i, x) {
			if (p->ncards < CLUSTER_CARDS && json_is_integer(x))
				p->cards[p->ncards++] = (u_int)
				    json_integer_value(x);
		}
		p->attempt = (u_int)json_integer_value(json_object_get(
		    me->val, "attempt"));
		cs_gang_parse(json_object_get(me->val, "gang"), p);
	}
	return (p->ok ? p : NULL);
}

/* The live members, from the mirrored records (corrupt ones skipped). */
static void
cs_members_load(int64_t now)
{
	struct mirror_entry		*me;
	const struct cluster_member	*pm;
	struct cluster_room		*m;
	size_t				 it = 0;
	int64_t				*seen, *lease;

	cs.nmembers = 0;
	cs.members = xreallocarray(cs.members, mirror_count(cs.m) + 1,
	    sizeof *cs.members);
	while (mirror_next(cs.m, &it, &me)) {
		if ((pm = cluster_member_cached(me)) == NULL)
			continue;
		m = &cs.members[cs.nmembers++];
		memset(m, 0, sizeof *m);
		m->m = *pm;		/* shallow: the cache owns it */
		if ((seen = hmap_get(cs.seen, m->m.name)) == NULL) {
			seen = xmalloc(sizeof *seen);
			*seen = now;
			hmap_put(cs.seen, xstrdup(m->m.name), seen);
		}
		/* a daemon restarted took its record over: seen anew */
		if ((lease = hmap_get(cs.leases, m->m.name)) == NULL) {
			lease = xmalloc(sizeof *lease);
			*lease = me->lease;
			hmap_put(cs.leases, xstrdup(m->m.name), lease);
		} else if (*lease != me->lease) {
			*lease = me->lease;
			*seen = now;
		}
		m->seen = *seen;
	}
}

static struct cs_gang *
cs_gang_find(const char *gid)
{
	u_int	 i;

	for (i = 0; i < cs.ngangs; i++) {
		if (strcmp(cs.gangs[i].id, gid) == 0)
			return (&cs.gangs[i]);
	}
	return (NULL);
}

static int
cs_port_used(const char *master, u_int port)
{
	u_int	 i;

	for (i = 0; i < cs.nports; i++) {
		if (cs.ports[i].port == port &&
		    strcmp(cs.ports[i].master, master) == 0)
			return (1);
	}
	return (0);
}

static void
cs_port_add(const char *master, u_int port)
{
	struct cs_port	*pt;

	if (cs_port_used(master, port) || strlen(master) >= sizeof pt->master)
		return;
	cs.ports = xreallocarray(cs.ports, cs.nports + 1, sizeof *cs.ports);
	pt = &cs.ports[cs.nports++];
	snprintf(pt->master, sizeof pt->master, "%s", master);
	pt->port = port;
}

/* A gang's part is assigned or running: its gang and port are live. */
static void
cs_gang_live(const struct cs_parsed *p)
{
	struct cs_gang	*g;

	cs_port_add(p->master, p->port);
	if ((g = cs_gang_find(p->gid)) == NULL) {
		cs.gangs = xreallocarray(cs.gangs, cs.ngangs + 1,
		    sizeof *cs.gangs);
		g = &cs.gangs[cs.ngangs++];
		memset(g, 0, sizeof *g);
		snprintf(g->id, sizeof g->id, "%s", p->gid);
		g->attempt = p->attempt;
	}
	if (p->attempt > g->attempt) {
		g->attempt = p->attempt;
		g->live = 0;
	}
	if (p->attempt == g->attempt && p->rank < CLUSTER_GANG_MAX)
		g->live |= 1U << p->rank;
}

/* Charges what is assigned or running (a/NAME/ID, r/NAME/ID) to NAME. */
static void
cs_commit_load(struct mirror *mr, size_t plen)
{
	struct mirror_entry	*me;
	const struct cs_parsed	*p;
	struct cluster_room	*m;
	size_t			 it = 0;
	const char		*name, *slash;

	while (mirror_next(mr, &it, &me)) {
		name = me->key + plen;
		if ((slash = strchr(name, '/')) == NULL ||
		    (p = cs_job_parse(me)) == NULL)
			continue;
		if (p->gang)
			cs_gang_live(p);	/* its member live or not */
		if ((m = cs_member_find(name, (size_t)(slash - name))) != NULL)
			cs_charge(m, &p->s, p->cards, p->ncards);
	}
}

static int
cs_job_cmp(const void *a, const void *b)
{
	const struct cs_job	*x = a, *y = b;

	if (x->key != y->key)
		return (x->key < y->key ? -1 : 1);
	return (strcmp(x->id, y->id));
}

/* The queue in order: priority with aging, then age. */
static struct cs_job *
cs_queue(int64_t nowms, u_int *n)
{
	struct mirror_entry		*me;
	const struct cs_parsed		*p;
	struct cs_job			*v;
	size_t				 it = 0, plen;

	*n = 0;
	plen = strlen(cluster_key("q/"));
	v = xreallocarray(NULL, mirror_count(cs.q) + 1, sizeof *v);
	while (mirror_next(cs.q, &it, &me)) {
		if (me->held || (p = cs_job_parse(me)) == NULL)
			continue;
		v[*n].me = me;
		v[*n].id = me->key + plen;
		v[*n].s = p->s;
		v[*n].attempt = p->attempt;
		v[*n].key = v[*n].s.submitted - (int64_t)v[*n].s.prio *
		    SCHED_AGE_MS;
		(*n)++;
	}
	qsort(v, *n, sizeof *v, cs_job_cmp);
	return (v);
}

/* ------------------------------------------------------------------ */
/* The batch: one fenced Txn. */

struct cs_op {
	char		*from;		/* key it leaves */
	char		*to;		/* key it goes to */
	json_t		*val;
	int64_t		 mod;
	char		*member;	/* an assignment's, or NULL */
	struct cluster_shape s;
	u_int		 cards[CLUSTER_CARDS];
};

struct cs_batch {
	struct cs_op	 op[CLUSTER_BATCH];
	u_int		 n;
	u_int		 nassign;
};

/* A move of me's job to key to; me NULL: a put only (a gang's part). */
static void
cs_batch_add(struct cs_batch *b, struct mirror_entry *me,
    const char *to, json_t *val)
{
	struct cs_op	*op = &b->op[b->n++];

	op->from = me != NULL ? xstrdup(me->key) : NULL;
	op->to = xstrdup(to);
	op->val = val;
	op->mod = me != NULL ? me->mod_rev : 0;
	op->member = NULL;
	if (me != NULL)
		me->held = 1;	/* not again until the Txn has answered */
}

static void
cs_batch_free(struct cs_batch *b)
{
	u_int	 i;

	for (i = 0; i < b->n; i++) {
		free(b->op[i].from);
		free(b->op[i].to);
		free(b->op[i].member);
		json_decref(b->op[i].val);
	}
	free(b);
}

static struct mirror *
cs_mirror_of(const char *key)
{
	size_t	 plen = strlen(cluster->prefix);

	switch (key[plen]) {
	case 'q':
		return (cs.q);
	case 'a':
		return (cs.a);
	case 'r':
		return (cs.r);
	}
	return (NULL);
}

/* Takes b off the Txns in flight; -1 if it was not one (any more). */
static int
cs_landed(struct cs_batch *b)
{
	u_int	 i;

	for (i = 0; i < cs.nflying; i++) {
		if (cs.flying[i] == b) {
			cs.flying[i] = cs.flying[--cs.nflying];
			return (0);
		}
	}
	return (-1);
}

/* What the Txns in flight assign counts as committed already. */
static void
cs_charge_flying(void)
{
	struct cluster_room	*m;
	struct cs_op		*op;
	u_int			 i, k;
	json_t			*g;
	const char		*master;

	for (i = 0; i < cs.nflying; i++) {
		for (k = 0; k < cs.flying[i]->n; k++) {
			op = &cs.flying[i]->op[k];
			if (op->member != NULL && (m = cs_member_find(
			    op->member, strlen(op->member))) != NULL)
				cs_charge(m, &op->s, op->cards, op->s.ncards);
			if ((g = json_object_get(op->val, "gang")) != NULL &&
			    (master = json_string_value(json_object_get(g,
			    "master"))) != NULL)
				cs_port_add(master, (u_int)json_integer_value(
				    json_object_get(g, "port")));
		}
	}
}

static void
cs_batch_cb(struct etcd_reply *r, const char *err, void *arg)
{
	struct cs_batch		*b = arg;
	const struct etcd_kv	*kv;
	struct mirror		*mr;
	struct mirror_entry	*me;
	u_int			 i;

	if (cs_landed(b) != 0)
		goto out;	/* from before the last stop */
	for (i = 0; i < b->n; i++) {
		if (b->op[i].from != NULL && (me = mirror_get(cs_mirror_of(
		    b->op[i].from), b->op[i].from)) != NULL)
			me->held = 0;
	}
	if (err != NULL || cluster == NULL || !cluster->leading) {
		log_debug("%s: %s", __func__, err != NULL ? err : "deposed");
		goto out;
	}
	if (!r->succeeded) {
		kv = etcd_reply_find(r, cluster->lkey.key);
		if (kv == NULL || kv->create_rev != cluster->lkey.create_rev) {
			cluster_deposed();
			goto out;
		}
		/* a job moved under us: the mirror learns it, next pass */
		for (i = 0; i < b->n; i++) {
			if (b->op[i].from == NULL)
				continue;
			mr = cs_mirror_of(b->op[i].from);
			if ((kv = etcd_reply_find(r, b->op[i].from)) == NULL)
				mirror_delete(mr, b->op[i].from, r->rev);
			else
				mirror_put(mr, kv->key, json_loadb(kv->value,
				    kv->vlen, 0, NULL), kv->mod_rev, kv->lease);
		}
		cs.dirty = 1;
		goto out;
	}
	cs.txns++;
	cluster->nwrites++;
	cs.placed += b->nassign;
	for (i = 0; i < b->n; i++) {
		if (b->op[i].from != NULL)
			mirror_delete(cs_mirror_of(b->op[i].from),
			    b->op[i].from, r->rev);
		if ((mr = cs_mirror_of(b->op[i].to)) != NULL)
			mirror_put(mr, b->op[i].to, json_incref(b->op[i].val),
			    r->rev, 0);
	}
	cs.dirty = 1;
out:
	cs_batch_free(b);
}

static void
cs_batch_send(struct cs_batch *b)
{
	json_t	*cmp = json_array(), *ok = json_array(), *fail = json_array();
	char	*text;
	u_int	 i;

	json_array_append_new(fail, etcd_op_range(cluster->lkey.key, 0));
	for (i = 0; i < b->n; i++) {
		text = json_dumps(b->op[i].val, JSON_COMPACT);
		json_array_append_new(ok, etcd_op_put(b->op[i].to, text, 0));
		free(text);
		if (b->op[i].from == NULL)
			continue;	/* a gang's part: its first moves */
		json_array_append_new(cmp, etcd_cmp(b->op[i].from, "MOD",
		    b->op[i].mod));
		json_array_append_new(ok, etcd_op_delete(b->op[i].from));
		json_array_append_new(fail, etcd_op_range(b->op[i].from, 0));
	}
	cs.flying[cs.nflying++] = b;
	etcd_txn(cluster->etcd, cluster_fence(cmp), ok, fail, cs_batch_cb, b);
}

/* ------------------------------------------------------------------ */
/* A pass. */

static json_t *
cs_assigned(const struct mirror_entry *me, const struct cluster_room *m,
    const u_int *cards, u_int n)
{
	json_t	*o = json_deep_copy(me->val), *c = json_array();
	u_int	 i;

	for (i = 0; i < n; i++)
		json_array_append_new(c, json_integer(cards[i]));
	json_object_set_new(o, "member", json_string(m->m.name));
	json_object_set_new(o, "cards", c);
	json_object_set_new(o, "assigned", json_integer(clock_ms()));
	json_object_set_new(o, "leader", json_integer(
	    cluster->lkey.create_rev));
	return (o);
}

/*
 * Adds the assignment of j (or of its gang's part id) to m to the batch,
 * charged; move: it is the one that takes j off the queue.
 */
static void
cs_assign(struct cs_batch *b, const struct cs_job *j, struct cluster_room *m,
    const u_int *cards, json_t *o, const char *id, int move)
{
	struct cs_op	*op;

	cs_charge(m, &j->s, cards, j->s.ncards);
	cs_batch_add(b, move ? j->me : NULL, cluster_key("a/%s/%s",
	    m->m.name, id), o);
	op = &b->op[b->n - 1];
	op->member = xstrdup(m->m.name);
	op->s = j->s;
	memcpy(op->cards, cards, j->s.ncards * sizeof *cards);
}

/*
 * MASTER_ADDR of a gang whose rank 0 is on m: the host of the address it
 * serves, else its name (a host name, by default).
 */
static char *
cs_master(const struct cluster_room *m)
{
	const char	*a = m->m.addr, *colon;

	if (a == NULL || *a == '\0' || *a == ':' || strncmp(a, "0.0.0.0:",
	    8) == 0 || (colon = strrchr(a, ':')) == NULL)
		return (xstrdup(m->m.name));
	if (*a == '[' && colon > a + 1 && colon[-1] == ']')
		return (xstrndup(a + 1, (size_t)(colon - a - 2)));
	return (xstrndup(a, (size_t)(colon - a)));
}

/*
 * A free MASTER_PORT on master for gang gid, from a hash of its id on:
 * no live gang's there, and none a program holds on m0, its rank 0's
 * member, as m0's record says (cluster-ports.c).
 */
static u_int
cs_port_pick(const char *gid, const char *master,
    const struct cluster_member *m0)
{
	uint32_t	 h = 2166136261u;
	const char	*p;
	u_int		 i, port;

	for (p = gid; *p != '\0'; p++)
		h = (h ^ (u_char)*p) * 16777619u;
	for (i = 0; i < CLUSTER_GANG_PORTS; i++) {
		port = CLUSTER_GANG_PORT + (h + i) % CLUSTER_GANG_PORTS;
		if (!cs_port_used(master, port) &&
		    !cluster_ports_has(m0->held, port))
			return (port);
	}
	return (0);
}

/* A gang's part k on m: the job's record, its part's id and its ranks. */
static json_t *
cs_part(const struct cs_job *j, struct cluster_room *m, const u_int *cards,
    u_int k, const char *master, u_int port, char **id)
{
	json_t		*o = cs_assigned(j->me, m, cards, j->s.ncards);

	*id = cluster_part_id(j->id, k, j->attempt);
	json_object_set_new(o, "id", json_string(*id));
	json_object_set_new(o, "gang", json_pack("{s:s,s:i,s:i,s:s,s:i,s:i}",
	    "id", j->id, "rank", k, "size", j->s.nodes, "master", master,
	    "port", port, "attempt", j->attempt));
	return (o);
}

/*
 * Places a gang whole or not at all: its parts on as many members, best
 * fit each, all in this batch (one Txn).  0 if it waits.
 */
static int
cs_place_gang(struct cs_batch *b, const struct cs_job *j)
{
	struct cluster_room	*m[CLUSTER_GANG_MAX];
	u_int			 cards[CLUSTER_GANG_MAX][CLUSTER_CARDS];
	u_int			 k, n = j->s.nodes, port = 0;
	char			*master, *id;
	json_t			*o;

	if (n > CLUSTER_GANG_MAX || b->n + n > CLUSTER_BATCH ||
	    cs_gang_find(j->id) != NULL)
		return (0);	/* or its last attempt's parts are stopping */
	for (k = 0; k < n; k++) {
		if ((m[k] = cs_best(&j->s, cards[k])) == NULL)
			break;
		m[k]->picked = 1;
		cs_charge(m[k], &j->s, cards[k], j->s.ncards);
	}
	master = k == n ? cs_master(m[0]) : NULL;
	if (master != NULL && (port = cs_port_pick(j->id, master,
	    &m[0]->m)) != 0)
		cs_port_add(master, port);
	while (k > 0) {		/* taken back: charged again as assigned */
		k--;
		m[k]->picked = 0;
		cluster_room_charge(m[k], &j->s, cards[k], j->s.ncards, -1);
	}
	if (port == 0) {	/* too few members, or no port on master */
		free(master);
		return (0);
	}
	for (k = 0; k < n; k++) {
		o = cs_part(j, m[k], cards[k], k, master, port, &id);
		cs_assign(b, j, m[k], cards[k], o, id, k == 0);
		free(id);
	}
	free(master);
	b->nassign++;
	return (1);
}

/* Places what fits, in queue order (a job that does not fit is passed). */
static void
cs_place(struct cs_batch *b, int64_t nowms)
{
	struct cs_job		*v;
	struct cluster_room	*m;
	u_int			 n, i, cards[CLUSTER_CARDS];

	v = cs_queue(nowms, &n);
	for (i = 0; i < n && b->n < CLUSTER_BATCH; i++) {
		if (v[i].s.nodes > 1) {
			cs_place_gang(b, &v[i]);
			continue;
		}
		if ((m = cs_best(&v[i].s, cards)) != NULL) {
			cs_assign(b, &v[i], m, cards, cs_assigned(v[i].me, m,
			    cards, v[i].s.ncards), v[i].id, 1);
			b->nassign++;
			continue;
		}
		/*
		 * It waits for room, even if the members that could hold it
		 * have gone: they may come back (only a submission is refused).
		 */
	}
	free(v);
}

/* A gang's part's end: failed, its member name having left. */
static json_t *
cs_lost(const struct mirror_entry *me, const char *name)
{
	json_t	*o = json_deep_copy(me->val);
	char	*why;

	xasprintf(&why, "member %s left", name);
	json_object_set_new(o, "state", json_string("failed"));
	json_object_set_new(o, "exit_code", json_integer(-1));
	json_object_set_new(o, "reason", json_string(why));
	json_object_set_new(o, "ended", json_integer(clock_ms()));
	free(why);
	return (o);
}

/* A gang's record again, from one of its parts': its next attempt. */
static json_t *
cs_gang_again(const struct mirror_entry *me, const struct cs_parsed *p)
{
	static const char *const drop[] = { "member", "cards", "assigned",
	    "leader", "claimed", "gang", "state", "exit_code", "reason",
	    "ended" };
	json_t	*o = json_deep_copy(me->val);
	u_int	 i;

	for (i = 0; i < nitems(drop); i++)
		json_object_del(o, drop[i]);
	json_object_set_new(o, "id", json_string(p->gid));
	json_object_set_new(o, "attempt", json_integer(p->attempt + 1));
	json_object_set_new(o, "requeued", json_integer(clock_ms()));
	return (o);
}

/*
 * A gang's part whose member left (gone past its lease and the grace):
 * the part ends failed, and in the same Txn go the stops of every part of
 * its attempt (their members stop them; the one that left, when it is
 * back) and, for a --requeue gang, its next attempt on the queue, which
 * is placed only once no part of this one is assigned or running.
 */
static void
cs_gang_lost(struct cs_batch *b, struct mirror_entry *me,
    const struct cs_parsed *p, const char *name)
{
	struct cs_gang	*g = cs_gang_find(p->gid);
	char		*owner, *id;
	u_int		 k;

	if (b->n + CLUSTER_GANG_MAX + 2 > CLUSTER_BATCH)
		return;		/* the next pass */
	id = cluster_part_id(p->gid, p->rank, p->attempt);
	log_info("cluster: gang %s: member %s of part %s left", p->gid, name,
	    id);
	cs_batch_add(b, me, cluster_key("e/%s", id), cs_lost(me, name));
	free(id);
	if (g == NULL || g->handled || p->attempt < g->attempt)
		return;		/* done in this pass, or an old attempt's */
	g->handled = 1;
	owner = cluster_stop_value(json_object_get(me->val, "owner"));
	for (k = 0; k < CLUSTER_GANG_MAX; k++) {
		if (!(g->live & (1U << k)))
			continue;
		id = cluster_part_id(p->gid, k, p->attempt);
		cs_batch_add(b, NULL, cluster_key("s/%s", id), json_loads(owner,
		    0, NULL));
		free(id);
	}
	free(owner);
	if ((p->s.flags & JOB_REQUEUE) && mirror_get(cs.q, cluster_key("q/%s",
	    p->gid)) == NULL)
		cs_batch_add(b, NULL, cluster_key("q/%s", p->gid),
		    cs_gang_again(me, p));
}

/* The gone members' jobs, back to the queue past the lease and grace. */
static void
cs_reap(struct cs_batch *b, struct mirror *mr, size_t plen, int64_t now,
    int requeue_only)
{
	struct mirror_entry		*me;
	const struct cs_parsed		*p;
	size_t				 it = 0;
	const char			*name, *slash;
	char				*nm;
	int64_t				*gone;
	json_t				*o;

	while (mirror_next(mr, &it, &me) && b->n < CLUSTER_BATCH) {
		if (me->held)
			continue;
		name = me->key + plen;
		if ((slash = strchr(name, '/')) == NULL ||
		    cs_member_find(name, (size_t)(slash - name)) != NULL)
			continue;
		nm = xstrndup(name, (size_t)(slash - name));
		if ((gone = hmap_get(cs.seen, nm)) == NULL ||
		    *gone >= 0) {
			/* first seen gone now: negative marks "gone since" */
			if (gone == NULL) {
				gone = xmalloc(sizeof *gone);
				hmap_put(cs.seen, xstrdup(nm), gone);
			}
			*gone = -now;
		}
		if (now + *gone < (int64_t)cluster->ttl * 1000 +
		    CLUSTER_GRACE_MS || (p = cs_job_parse(me)) == NULL) {
			free(nm);
			continue;
		}
		if (p->gang)
			cs_gang_lost(b, me, p, nm);
		free(nm);
		if (p->gang || (requeue_only && !(p->s.flags & JOB_REQUEUE)))
			continue;
		o = json_deep_copy(me->val);
		json_object_del(o, "member");
		json_object_del(o, "cards");
		json_object_set_new(o, "requeued", json_integer(clock_ms()));
		cs_batch_add(b, me, cluster_key("q/%s", slash + 1), o);
	}
}

/* Members seen live again lose their "gone since" mark. */
static void
cs_seen_refresh(int64_t now)
{
	u_int	 i;
	int64_t	*seen;

	for (i = 0; i < cs.nmembers; i++) {
		seen = hmap_get(cs.seen, cs.members[i].m.name);
		if (seen != NULL && *seen < 0) {
			*seen = now;
			cs.members[i].seen = now;
		}
	}
}

/*
 * Whether a member live for CLUSTER_POLITE_MS (seen by the passes) is
 * more capable than self (the polite check); -1 before the mirror is.
 * One walk of the mirror, its records as parsed there: the members a
 * pass loaded point into its entries, which a new range of it (etcd's
 * member lost, a watch restarted) has freed if no pass ran since.
 */
int
cluster_sched_better(const struct cluster_member *self)
{
	struct mirror_entry		*me;
	const struct cluster_member	*pm;
	int64_t				 now = clock_mono_ms(), *seen;
	size_t				 it = 0;

	if (cs.m == NULL || !mirror_ready(cs.m))
		return (-1);
	while (mirror_next(cs.m, &it, &me)) {
		if ((pm = cluster_member_cached(me)) == NULL ||
		    (seen = hmap_get(cs.seen, pm->name)) == NULL ||
		    *seen < 0 || now - *seen < CLUSTER_POLITE_MS)
			continue;
		if (cluster_member_cmp(pm, self) < 0)
			return (1);
	}
	return (0);
}

void
cluster_sched_tick(int64_t now)
{
	struct cs_batch	*b;
	struct mirror	*all[] = { cs.m, cs.q, cs.a, cs.r };
	u_int		 i;

	if (cs.m == NULL || cs.nflying == CLUSTER_INFLIGHT)
		return;
	for (i = 0; i < nitems(all); i++) {
		mirror_restart(all[i]);
		if (!mirror_ready(all[i]))
			return;
	}
	cs_members_load(now);
	cs_seen_refresh(now);
	cluster_gone_tick(cs.m);
	cs.ngangs = cs.nports = 0;
	cs_commit_load(cs.a, strlen(cluster_key("a/")));
	cs_commit_load(cs.r, strlen(cluster_key("r/")));
	cs_charge_flying();
	b = xcalloc(1, sizeof *b);
	cs_reap(b, cs.a, strlen(cluster_key("a/")), now, 0);
	cs_reap(b, cs.r, strlen(cluster_key("r/")), now, 1);
	cs_place(b, clock_ms());
	cluster_array_tick(cs.q, cs.a, cs.r);
	cluster_stops_tick(cs.q, cs.a, cs.r, now);
	cs.dirty = 0;
	if (b->n == 0) {
		cs_batch_free(b);
		return;
	}
	cs_batch_send(b);
}

/* Leading: mirrors what it schedules from. */
void
cluster_sched_start(void)
{
	cs.seen = hmap_create();
	cs.leases = hmap_create();
	cs.m = mirror_create(cluster->etcd, cluster_key("m/"), cs_changed,
	    NULL);
	mirror_cache_free(cs.m, cluster_member_cache_free);
	cs.q = mirror_create(cluster->etcd, cluster_key("q/"), cs_changed,
	    NULL);
	cs.a = mirror_create(cluster->etcd, cluster_key("a/"), cs_changed,
	    NULL);
	cs.r = mirror_create(cluster->etcd, cluster_key("r/"), cs_changed,
	    NULL);
	cluster_array_start();
	cluster_stops_start();
	cluster_gone_start();
}

void
cluster_sched_stop(void)
{
	size_t		 it = 0;
	const char	*k;
	void		*v;

	if (cs.m == NULL)
		return;
	mirror_free(cs.m);
	mirror_free(cs.q);
	mirror_free(cs.a);
	mirror_free(cs.r);
	cs.m = cs.q = cs.a = cs.r = NULL;
	cluster_array_stop();
	cluster_stops_stop();
	cluster_gone_stop();
	cs_members_clear();
	free(cs.gangs);
	free(cs.ports);
	cs.gangs = NULL;
	cs.ports = NULL;
	cs.ngangs = cs.nports = 0;
	while (hmap_next(cs.seen, &it, &k, &v)) {
		free((char *)k);
		free(v);
	}
	hmap_free(cs.seen);
	cs.seen = NULL;
	it = 0;
	while (hmap_next(cs.leases, &it, &k, &v)) {
		free((char *)k);
		free(v);
	}
	hmap_free(cs.leases);
	cs.leases = NULL;
	cs.nflying = 0;		/* their answers find them gone */
}

/* Jobs placed and Txns written since this daemon started (the bench). */
void
cluster_sched_counts(uint64_t *placed, uint64_t *txns)
{
	*placed = cs.placed;
	*txns = cs.txns;
}
