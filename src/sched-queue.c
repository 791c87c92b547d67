/*
 * sched-queue.c: the scheduler's queue.  A waiting job is kept twice: in one
 * order (a treap by key, for positions, the head and listings) and in the
 * class of the jobs that ask for exactly the same thing (seats, memory,
 * cards, pin, priority).  Jobs of a class fit or do not fit together, so an
 * admission pass looks at classes, not at jobs: with 10,000 jobs waiting
 * there are usually a few dozen classes.
 *
 * The order never changes while jobs wait: aging adds the same amount to
 * every waiting job's priority per unit of time, so "priority + waited /
 * age" ranks jobs exactly as the constant key "submit - priority x age"
 * does.  Inside a class (one priority) the key order is the arrival order,
 * so insertion is at the tail.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "sched-int.h"

int
sched_queue_cmp(const struct sched_job *a, const struct sched_job *b)
{
	if (a->key != b->key)
		return (a->key < b->key ? -1 : 1);
	if (a->req.submit != b->req.submit)
		return (a->req.submit < b->req.submit ? -1 : 1);
	if (a->req.id != b->req.id)
		return (a->req.id < b->req.id ? -1 : 1);
	return (0);
}

/* A treap's heap weight from the id: deterministic, well spread. */
static uint32_t
queue_weight(u_int id)
{
	uint64_t	 x = id + 0x9e3779b97f4a7c15ULL;

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return ((uint32_t)(x ^ (x >> 31)));
}

static u_int
queue_size(const struct sched_job *t)
{
	return (t == NULL ? 0 : t->size);
}

static void
queue_fix(struct sched_job *t)
{
	t->size = 1 + queue_size(t->left) + queue_size(t->right);
}

static struct sched_job *
queue_merge(struct sched_job *a, struct sched_job *b)
{
	if (a == NULL)
		return (b);
	if (b == NULL)
		return (a);
	if (a->weight >= b->weight) {
		a->right = queue_merge(a->right, b);
		queue_fix(a);
		return (a);
	}
	b->left = queue_merge(a, b->left);
	queue_fix(b);
	return (b);
}

/* Splits t into the jobs before j (*l) and the others (*r). */
static void
queue_split(struct sched_job *t, const struct sched_job *j,
    struct sched_job **l, struct sched_job **r)
{
	if (t == NULL) {
		*l = *r = NULL;
		return;
	}
	if (sched_queue_cmp(t, j) < 0) {
		queue_split(t->right, j, &t->right, r);
		*l = t;
	} else {
		queue_split(t->left, j, l, &t->left);
		*r = t;
	}
	queue_fix(t);
}

static struct sched_job *
queue_unlink(struct sched_job *t, const struct sched_job *j)
{
	int	 c;

	if (t == NULL)
		return (NULL);
	if ((c = sched_queue_cmp(j, t)) == 0)
		return (queue_merge(t->left, t->right));
	if (c < 0)
		t->left = queue_unlink(t->left, j);
	else
		t->right = queue_unlink(t->right, j);
	queue_fix(t);
	return (t);
}

static uint64_t
class_hash(const struct sched_req *r)
{
	uint64_t	 h;

	h = r->seats | (uint64_t)r->ncards << 8 | (uint64_t)(r->pin + 1) << 16 |
	    (uint64_t)r->prio << 28;
	h ^= r->mem * 0x9e3779b97f4a7c15ULL;
	return (h ^ (h >> 29));
}

static int
class_same(const struct sched_req *a, const struct sched_req *b)
{
	return (a->seats == b->seats && a->mem == b->mem &&
	    a->ncards == b->ncards && a->pin == b->pin && a->prio == b->prio);
}

static void
class_rehash(struct sched *s)
{
	struct sched_class	**old = s->chash, *k, *next;
	u_int			  i, oldsize = s->chsize, h;

	s->chsize = oldsize == 0 ? 64 : oldsize * 2;
	s->chash = xcalloc(s->chsize, sizeof *s->chash);
	for (i = 0; i < oldsize; i++) {
		for (k = old[i]; k != NULL; k = next) {
			next = k->hnext;
			h = class_hash(&k->shape) & (s->chsize - 1);
			k->hnext = s->chash[h];
			s->chash[h] = k;
		}
	}
	free(old);
}

/* Returns the class of r's request, making it if there is none yet. */
static struct sched_class *
class_get(struct sched *s, const struct sched_req *r)
{
	struct sched_class	*k;
	struct sched_bucket	*b;
	u_int			 h;

	if (s->chsize == 0 || s->nclasses >= s->chsize)
		class_rehash(s);
	h = class_hash(r) & (s->chsize - 1);
	for (k = s->chash[h]; k != NULL; k = k->hnext) {
		if (class_same(&k->shape, r))
			return (k);
	}
	k = xcalloc(1, sizeof *k);
	k->shape.seats = r->seats;
	k->shape.mem = r->mem;
	k->shape.ncards = r->ncards;
	k->shape.pin = r->pin;
	k->shape.prio = r->prio;
	k->elig = sched_card_eligible(s, r);
	TAILQ_INIT(&k->jobs);
	k->hnext = s->chash[h];
	s->chash[h] = k;
	b = &s->bucket[r->seats];
	if (b->n == b->size) {
		b->size = b->size == 0 ? 16 : b->size * 2;
		b->v = xreallocarray(b->v, b->size, sizeof *b->v);
	}
	k->idx = b->n;
	memset(&b->v[b->n], 0, sizeof b->v[b->n]);
	b->v[b->n].elig = k->elig;
	b->v[b->n].mem = r->mem;
	b->v[b->n].ncards = r->ncards;
	b->v[b->n].prio = r->prio;
	b->v[b->n++].k = k;
	s->nclasses++;
	return (k);
}

static void
class_drop(struct sched *s, struct sched_class *k)
{
	struct sched_class	**kp;
	struct sched_bucket	 *b = &s->bucket[k->shape.seats];
	u_int			  h = class_hash(&k->shape) & (s->chsize - 1);

	for (kp = &s->chash[h]; *kp != k; kp = &(*kp)->hnext)
		;
	*kp = k->hnext;
	b->v[k->idx] = b->v[--b->n];
	b->v[k->idx].k->idx = k->idx;
	s->nclasses--;
	free(k);
}

/* Copies a class's first job into its dense entry, for scans. */
static void
class_first(struct sched *s, struct sched_class *k)
{
	struct sched_cref	*cr = &s->bucket[k->shape.seats].v[k->idx];
	struct sched_job	*j = TAILQ_FIRST(&k->jobs);

	cr->first = j;
	cr->key = j->key;
	cr->submit = j->req.submit;
	cr->id = j->req.id;
}

/* Puts a job in the queue; its key must be set. */
void
sched_queue_insert(struct sched *s, struct sched_job *j)
{
	struct sched_class	*k = class_get(s, &j->req);
	struct sched_job	*p, *l, *r;

	/* Same priority: the key order is the arrival order, mostly. */
	p = TAILQ_LAST(&k->jobs, sched_jobs);
	while (p != NULL && sched_queue_cmp(p, j) > 0)
		p = TAILQ_PREV(p, sched_jobs, centry);
	if (p == NULL)
		TAILQ_INSERT_HEAD(&k->jobs, j, centry);
	else
		TAILQ_INSERT_AFTER(&k->jobs, p, j, centry);
	k->n++;
	j->class = k;
	j->state = SCHED_QUEUED;
	if (TAILQ_FIRST(&k->jobs) == j)
		class_first(s, k);

	j->weight = queue_weight(j->req.id);
	j->left = j->right = NULL;
	j->size = 1;
	queue_split(s->root, j, &l, &r);
	s->root = queue_merge(queue_merge(l, j), r);
}

/* Takes a job out of the queue (and its class; an empty class goes). */
void
sched_queue_remove(struct sched *s, struct sched_job *j)
{
	struct sched_class	*k = j->class;
	int			 first = TAILQ_FIRST(&k->jobs) == j;

	TAILQ_REMOVE(&k->jobs, j, centry);
	if (--k->n == 0)
		class_drop(s, k);
	else if (first)
		class_first(s, k);
	j->class = NULL;
	s->root = queue_unlink(s->root, j);
	j->left = j->right = NULL;
}

/* Returns the first waiting job, NULL if none. */
struct sched_job *
sched_queue_head(const struct sched *s)
{
	struct sched_job	*t = s->root;

	if (t == NULL)
		return (NULL);
	while (t->left != NULL)
		t = t->left;
	return (t);
}

/*
 * Returns j's 1-based place in the queue; for a job not in it (a request
 * being explained), the place it would take.
 */
u_int
sched_queue_position(const struct sched *s, const struct sched_job *j)
{
	const struct sched_job	*t = s->root;
	u_int			 pos = 0;
	int			 c;

	while (t != NULL) {
		if ((c = sched_queue_cmp(j, t)) == 0)
			return (pos + queue_size(t->left) + 1);
		if (c < 0)
			t = t->left;
		else {
			pos += queue_size(t->left) + 1;
			t = t->right;
		}
	}
	return (pos + 1);
}

u_int
sched_queue_count(const struct sched *s)
{
	return (queue_size(s->root));
}

static void
queue_walk(const struct sched_job *t, u_int *ids, u_int max, u_int *n)
{
	if (t == NULL || *n >= max)
		return;
	queue_walk(t->left, ids, max, n);
	if (*n < max)
		ids[(*n)++] = t->req.id;
	queue_walk(t->right, ids, max, n);
}

/* Fills ids with the first max waiting jobs in order; returns how many. */
u_int
sched_queue_list(const struct sched *s, u_int *ids, u_int max)
{
	u_int	 n = 0;

	queue_walk(s->root, ids, max, &n);
	return (n);
}

/* Puts a job (new, requeued or resized) in the queue, as of req.submit. */
void
sched_queue_enter(struct sched *s, struct sched_job *j)
{
	j->key = j->req.submit - (int64_t)j->req.prio * s->age;
	j->cards = 0;
	j->hold = SCHED_HOLD_NONE;
	sched_queue_insert(s, j);
	if (j->req.timeout > 0)
		TAILQ_INSERT_TAIL(&s->timed, j, tentry);
}

/* Takes a job out of the queue, letting go of what it holds. */
void
sched_queue_leave(struct sched *s, struct sched_job *j)
{
	sched_card_release(s, j);
	sched_queue_remove(s, j);
	if (j->req.timeout > 0)
		TAILQ_REMOVE(&s->timed, j, tentry);
}

/* Frees the classes (the jobs are the caller's). */
void
sched_queue_free(struct sched *s)
{
	u_int	 i, n;

	for (n = 0; n <= SEATS_PER_CARD; n++) {
		for (i = 0; i < s->bucket[n].n; i++)
			free(s->bucket[n].v[i].k);
		free(s->bucket[n].v);
	}
	free(s->chash);
}
