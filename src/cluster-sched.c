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
#define CLUSTER_CARDS	64

struct cs_member {
	struct cluster_member m;
	u_int		 used[CLUSTER_CARDS];	/* seats committed per card */
	uint64_t	 mused[CLUSTER_CARDS];
	u_int		 cpus;		/* CPUs and RAM committed */
	uint64_t	 ram;
	u_int		 njobs;
	int64_t		 seen;		/* mono ms it was first seen */
	int		 picked;	/* a part of this gang is on it */
};

struct cs_job {
	struct mirror_entry *me;
	const char	*id;
	struct cluster_shape s;
	int64_t		 key;		/* queue order: lower first */
};

struct cs_gone {
	char		*name;
	int64_t		 since;		/* mono ms */
};

static struct {
	struct mirror	*m, *q, *a, *r;
	struct cs_member *members;
	u_int		 nmembers;
	struct hmap	*seen;		/* name -> int64_t * first seen */
	struct cs_gone	*gone;
	u_int		 ngone;
	struct cs_batch	*flying[CLUSTER_INFLIGHT];	/* Txns in flight */
	u_int		 nflying;
	int		 dirty;		/* something changed since a pass */
	uint64_t	 placed;	/* jobs assigned (the bench reads it) */
	uint64_t	 txns;
} cs;

static void
cs_changed(void *arg)
{
	cs.dirty = 1;
}

/* Copies a directive's word into a shape's room for it. */
static int
cs_word(char *to, const char *from, const char *what, char **cause)
{
	if (from == NULL)
		return (0);
	if (strlen(from) >= CLUSTER_WORD) {
		xasprintf(cause, "%s: longer than %d characters", what,
		    CLUSTER_WORD - 1);
		return (-1);
	}
	snprintf(to, CLUSTER_WORD, "%s", from);
	return (0);
}

/* The directives that place it (docs/cluster.md, "Placement"). */
static int
cs_spec(const struct jobspec *j, struct cluster_shape *s, char **cause)
{
	s->cpus = j->cpus;
	s->ram = j->ram;
	s->vram = j->vram;
	s->mode = j->mode;
	s->nodes = j->nodes > 0 ? j->nodes : 1;
	if (cs_word(s->type, j->gpu_type, "gpus", cause) != 0 ||
	    cs_word(s->server, j->server, "server", cause) != 0 ||
	    cs_word(s->tag, j->partition, "partition", cause) != 0)
		return (-1);
	return (0);
}

/* Parses the request of a job record into s. */
int
cluster_shape_parse(json_t *rec, struct cluster_shape *s, char **cause)
{
	json_t		*req = json_object_get(rec, "req"), *x;
	struct jobreq	 r;
	int		 rc;

	memset(s, 0, sizeof *s);
	if (!json_is_object(req)) {
		xasprintf(cause, "no req");
		return (-1);
	}
	jobreq_init(&r);
	if ((rc = jobreq_from_json(req, &r, cause)) == 0) {
		s->seats = r.seats;
		s->mem = r.mem;
		s->ncards = r.ncards;
		s->prio = r.priority;
		s->flags = r.flags;
		rc = cs_spec(&r.spec, s, cause);
	}
	jobreq_clear(&r);
	if ((x = json_object_get(rec, "submitted")) != NULL &&
	    json_is_integer(x))
		s->submitted = json_integer_value(x);
	return (rc);
}

/* What one card needs of memory for s (0: share x its memory). */
static uint64_t
cs_need(const struct cluster_shape *s, uint64_t memory)
{
	if (s->mem != 0)
		return (s->mem);
	return (memory / SEATS_PER_CARD * s->seats);
}

/* Whether card c could ever hold a part of s: its type, its memory. */
static int
cs_card_could(const struct cluster_card *c, const struct cluster_shape *s)
{
	if (s->type[0] != '\0' && !jobspec_type_is(c->vendor, c->model,
	    s->type))
		return (0);
	return (cs_need(s, c->memory) <= c->memory && c->memory >= s->vram);
}

/* Whether member m could ever hold s, its cards aside. */
static int
cs_member_could(const struct cluster_member *m, const struct cluster_shape *s)
{
	if (s->server[0] != '\0' && strcmp(m->name, s->server) != 0)
		return (0);
	if (s->tag[0] != '\0' && !jobspec_tagged(m->tags, s->tag))
		return (0);
	if (s->cpus > m->cpus || s->ram > m->ram)
		return (0);
	return (1);
}

/* The members of v that could hold s's member-wide asks (cpus, ram...). */
static char *
cs_refuse_member(const struct cluster_member *v, u_int n,
    const struct cluster_shape *s)
{
	struct cluster_shape	 t;
	char			*why, *size;
	u_int			 i;

	memset(&t, 0, sizeof t);
	snprintf(t.server, sizeof t.server, "%s", s->server);
	for (i = 0; i < n && !cs_member_could(&v[i], &t); i++)
		;
	if (i == n) {
		xasprintf(&why, "no member is named %s", s->server);
		return (why);
	}
	snprintf(t.tag, sizeof t.tag, "%s", s->tag);
	for (i = 0; i < n && !cs_member_could(&v[i], &t); i++)
		;
	if (i == n) {
		xasprintf(&why, "no member%s%s has the tag %s", *s->server ?
		    " named " : "", s->server, s->tag);
		return (why);
	}
	t.cpus = s->cpus;
	for (i = 0; i < n && !cs_member_could(&v[i], &t); i++)
		;
	if (i == n) {
		xasprintf(&why, "no member has %u CPUs", s->cpus);
		return (why);
	}
	size = format_size(s->ram);
	xasprintf(&why, "no member has %s of RAM", size);
	free(size);
	return (why);
}

/*
 * Why no member of v could ever hold s, or NULL if one could (the caller
 * frees the reason).
 */
char *
cluster_refusal(const struct cluster_member *v, u_int n,
    const struct cluster_shape *s)
{
	u_int		 i, c, fit, typed, most = 0, mtyped = 0, could = 0;
	u_int		 hold = 0;
	char		*why;

	if (n == 0)
		return (xstrdup("no member is live"));
	if (s->mode == JOBSPEC_OVERCOMMIT)
		return (xstrdup("mode: overcommit is not taken yet (each "
		    "member reserves what it admits); use shared"));
	if (s->nodes > CLUSTER_GANG_MAX) {
		xasprintf(&why, "nodes: at most %u members in a gang",
		    CLUSTER_GANG_MAX);
		return (why);
	}
	for (i = 0; i < n; i++) {
		if (!cs_member_could(&v[i], s))
			continue;
		could++;
		for (c = fit = typed = 0; c < v[i].ncards; c++) {
			typed += s->type[0] == '\0' || jobspec_type_is(
			    v[i].cards[c].vendor, v[i].cards[c].model, s->type);
			fit += cs_card_could(&v[i].cards[c], s);
		}
		if (s->ncards == 0 || s->seats == 0 || fit >= s->ncards) {
			if (++hold >= s->nodes)
				return (NULL);
			continue;
		}
		most = v[i].ncards > most ? v[i].ncards : most;
		mtyped = typed > mtyped ? typed : mtyped;
	}
	if (hold > 0) {
		xasprintf(&why, "nodes: a gang of %u needs %u members that "
		    "could hold a part; %u could", s->nodes, s->nodes, hold);
		return (why);
	}
	if (could == 0)
		return (cs_refuse_member(v, n, s));
	if (most == 0)
		return (xstrdup("no member has a GPU"));
	if (s->type[0] != '\0' && mtyped == 0)
		xasprintf(&why, "no member has a GPU of type %s", s->type);
	else if (mtyped < s->ncards)
		xasprintf(&why, "no member has %u GPUs%s%s", s->ncards,
		    *s->type ? " of type " : "", s->type);
	else
		why = xstrdup("no member has a card with that much memory");
	return (why);
}

/* The cards of m that s fits on now, best fit first; 0 if too few. */
static u_int
cs_fit(const struct cs_member *m, const struct cluster_shape *s,
    u_int *cards, u_int *left)
{
	u_int		 c, n = 0, i, j, t;
	uint64_t	 need;

	*left = 0;
	for (c = 0; c < m->m.ncards && c < CLUSTER_CARDS; c++) {
		need = cs_need(s, m->m.cards[c].memory);
		if (m->used[c] + s->seats > SEATS_PER_CARD ||
		    m->mused[c] + need > m->m.cards[c].memory ||
		    m->m.cards[c].memory - m->mused[c] < s->vram ||
		    !cs_card_could(&m->m.cards[c], s))
			continue;
		cards[n++] = c;
	}
	if (n < s->ncards)
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
		*left += SEATS_PER_CARD - m->used[cards[i]] - s->seats;
	return (s->ncards);
}

/* Whether m has the CPUs and RAM s reserves, and is the member it asks. */
static int
cs_member_room(const struct cs_member *m, const struct cluster_shape *s)
{
	return (cs_member_could(&m->m, s) && m->cpus + s->cpus <= m->m.cpus &&
	    m->ram + s->ram <= m->m.ram);
}

/* The member s fits best on now (least room left), or NULL. */
static struct cs_member *
cs_best(const struct cluster_shape *s, u_int *cards)
{
	struct cs_member	*best = NULL;
	u_int			 i, k, left, bleft = UINT32_MAX;
	u_int			 tmp[CLUSTER_CARDS];

	for (i = 0; i < cs.nmembers; i++) {
		if (cs.members[i].picked || !cs_member_room(&cs.members[i], s))
			continue;
		if (s->ncards == 0 || s->seats == 0) {
			left = cs.members[i].njobs;	/* CPU jobs: spread */
			k = 0;
		} else if ((k = cs_fit(&cs.members[i], s, tmp, &left)) == 0)
			continue;
		if (best == NULL || left < bleft) {
			best = &cs.members[i];
			bleft = left;
			memcpy(cards, tmp, k * sizeof *cards);
		}
	}
	return (best);
}

/* Commits s on m's cards (sign 1), or takes it back (-1). */
static void
cs_charge_by(struct cs_member *m, const struct cluster_shape *s,
    const u_int *cards, u_int n, int sign)
{
	u_int	 i;

	m->njobs += sign;
	m->cpus += sign * s->cpus;
	m->ram += sign * s->ram;
	for (i = 0; i < n && i < s->ncards; i++) {
		if (cards[i] >= m->m.ncards || cards[i] >= CLUSTER_CARDS)
			continue;
		m->used[cards[i]] += sign * s->seats;
		m->mused[cards[i]] += sign * cs_need(s,
		    m->m.cards[cards[i]].memory);
	}
}

static void
cs_charge(struct cs_member *m, const struct cluster_shape *s,
    const u_int *cards, u_int n)
{
	cs_charge_by(m, s, cards, n, 1);
}

static struct cs_member *
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
};

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
	}
	return (p->ok ? p : NULL);
}

/* The live members, from the mirrored records (corrupt ones skipped). */
static void
cs_members_load(int64_t now)
{
	struct mirror_entry		*me;
	const struct cluster_member	*pm;
	struct cs_member		*m;
	size_t				 it = 0;
	int64_t				*seen;

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
		m->seen = *seen;
	}
}

/* Charges what is assigned or running (a/NAME/ID, r/NAME/ID) to NAME. */
static void
cs_commit_load(struct mirror *mr, size_t plen)
{
	struct mirror_entry	*me;
	const struct cs_parsed	*p;
	struct cs_member	*m;
	size_t			 it = 0;
	const char		*name, *slash;

	while (mirror_next(mr, &it, &me)) {
		name = me->key + plen;
		if ((slash = strchr(name, '/')) == NULL ||
		    (m = cs_member_find(name, (size_t)(slash - name))) == NULL)
			continue;
		if ((p = cs_job_parse(me)) != NULL)
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
	struct cs_member	*m;
	struct cs_op		*op;
	u_int			 i, k;

	for (i = 0; i < cs.nflying; i++) {
		for (k = 0; k < cs.flying[i]->n; k++) {
			op = &cs.flying[i]->op[k];
			if (op->member != NULL && (m = cs_member_find(
			    op->member, strlen(op->member))) != NULL)
				cs_charge(m, &op->s, op->cards, op->s.ncards);
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
cs_assigned(const struct mirror_entry *me, const struct cs_member *m,
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
cs_assign(struct cs_batch *b, const struct cs_job *j, struct cs_member *m,
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
cs_master(const struct cs_member *m)
{
	const char	*a = m->m.addr, *colon;

	if (a == NULL || *a == '\0' || *a == ':' || strncmp(a, "0.0.0.0:",
	    8) == 0 || (colon = strrchr(a, ':')) == NULL)
		return (xstrdup(m->m.name));
	if (*a == '[' && colon > a + 1 && colon[-1] == ']')
		return (xstrndup(a + 1, (size_t)(colon - a - 2)));
	return (xstrndup(a, (size_t)(colon - a)));
}

/* A gang's part k on m: the job's record, its part's id and its ranks. */
static json_t *
cs_part(const struct cs_job *j, struct cs_member *m, const u_int *cards,
    u_int k, const char *master, char **id)
{
	json_t		*o = cs_assigned(j->me, m, cards, j->s.ncards);
	uint32_t	 h = 2166136261u;
	const char	*p;

	for (p = j->id; *p != '\0'; p++)
		h = (h ^ (u_char)*p) * 16777619u;
	xasprintf(id, "%s-%u", j->id, k);
	json_object_set_new(o, "id", json_string(*id));
	json_object_set_new(o, "gang", json_pack("{s:s,s:i,s:i,s:s,s:i}",
	    "id", j->id, "rank", k, "size", j->s.nodes, "master", master,
	    "port", CLUSTER_GANG_PORT + h % CLUSTER_GANG_PORTS));
	return (o);
}

/*
 * Places a gang whole or not at all: its parts on as many members, best
 * fit each, all in this batch (one Txn).  0 if it waits.
 */
static int
cs_place_gang(struct cs_batch *b, const struct cs_job *j)
{
	struct cs_member	*m[CLUSTER_GANG_MAX];
	u_int			 cards[CLUSTER_GANG_MAX][CLUSTER_CARDS];
	u_int			 k, n = j->s.nodes;
	char			*master, *id;
	json_t			*o;

	if (n > CLUSTER_GANG_MAX || b->n + n > CLUSTER_BATCH)
		return (0);
	for (k = 0; k < n; k++) {
		if ((m[k] = cs_best(&j->s, cards[k])) == NULL)
			break;
		m[k]->picked = 1;
		cs_charge(m[k], &j->s, cards[k], j->s.ncards);
	}
	for (; k > 0 && k < n; k--) {	/* too few: taken back */
		m[k - 1]->picked = 0;
		cs_charge_by(m[k - 1], &j->s, cards[k - 1], j->s.ncards, -1);
	}
	if (k == 0)
		return (0);
	master = cs_master(m[0]);
	for (k = 0; k < n; k++) {
		m[k]->picked = 0;
		cs_charge_by(m[k], &j->s, cards[k], j->s.ncards, -1);
		o = cs_part(j, m[k], cards[k], k, master, &id);
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
	struct cs_member	*m;
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
		free(nm);
		if (now + *gone < (int64_t)cluster->ttl * 1000 +
		    CLUSTER_GRACE_MS)
			continue;
		if ((p = cs_job_parse(me)) == NULL)
			continue;
		if (requeue_only && !(p->s.flags & JOB_REQUEUE))
			continue;
		if (json_object_get(me->val, "gang") != NULL)
			continue;	/* a part waits for its member */
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

/* The live members as the leader sees them (for the polite check). */
int
cluster_sched_members(struct cluster_member **v, u_int *n)
{
	static struct cluster_member	*out;
	int64_t				 now = clock_mono_ms();
	u_int				 i;

	*n = 0;
	if (cs.m == NULL || !mirror_ready(cs.m))
		return (-1);
	out = xreallocarray(out, cs.nmembers + 1, sizeof *out);
	for (i = 0; i < cs.nmembers; i++) {
		if (now - cs.members[i].seen >= CLUSTER_POLITE_MS)
			out[(*n)++] = cs.members[i].m;
	}
	*v = out;
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
	cs_commit_load(cs.a, strlen(cluster_key("a/")));
	cs_commit_load(cs.r, strlen(cluster_key("r/")));
	cs_charge_flying();
	b = xcalloc(1, sizeof *b);
	cs_reap(b, cs.a, strlen(cluster_key("a/")), now, 0);
	cs_reap(b, cs.r, strlen(cluster_key("r/")), now, 1);
	cs_place(b, clock_ms());
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
	cs.m = mirror_create(cluster->etcd, cluster_key("m/"), cs_changed,
	    NULL);
	mirror_cache_free(cs.m, cluster_member_cache_free);
	cs.q = mirror_create(cluster->etcd, cluster_key("q/"), cs_changed,
	    NULL);
	cs.a = mirror_create(cluster->etcd, cluster_key("a/"), cs_changed,
	    NULL);
	cs.r = mirror_create(cluster->etcd, cluster_key("r/"), cs_changed,
	    NULL);
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
	cs_members_clear();
	while (hmap_next(cs.seen, &it, &k, &v)) {
		free((char *)k);
		free(v);
	}
	hmap_free(cs.seen);
	cs.seen = NULL;
	cs.nflying = 0;		/* their answers find them gone */
}

/* Jobs placed and Txns written since this daemon started (the bench). */
void
cluster_sched_counts(uint64_t *placed, uint64_t *txns)
{
	*placed = cs.placed;
	*txns = cs.txns;
}
