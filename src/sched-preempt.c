/*
 * sched-preempt.c: making room by preemption.  A waiting job that does not
 * fit may push off --preemptible jobs of strictly lower priority on ONE
 * card (a several-card job: when the others fit already), choosing the
 * fewest jobs, and among as few the set that spares the oldest (the least
 * work lost).  Never a job that is not preemptible.  The victims keep their
 * room until the daemon reports them gone; meanwhile the cards are held
 * for the job they make room for, so nobody else takes it.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "sched-int.h"

#define BIT(c)		(1ULL << (c))

/*
 * Adds (add 1) or takes (add 0) a running job to/from the preemptible room
 * of its cards: card->pre_seats[p] counts what preempting every
 * preemptible job below priority p would free.
 */
void
sched_preempt_pool(struct sched *s, struct sched_job *j, int add)
{
	struct sched_card	*k;
	u_int			 i, p, n = __builtin_popcountll(j->cards);

	if (!(j->req.flags & JOB_PREEMPTIBLE) || j->by != 0 || n == 0)
		return;
	for (i = 0; i < n; i++) {
		k = &s->card[j->slots[i].card];
		for (p = j->req.prio + 1; p <= SCHED_PRIOS; p++) {
			if (add) {
				k->pre_seats[p] += j->req.seats;
				k->pre_mem[p] += j->slots[i].mem;
			} else {
				k->pre_seats[p] -= j->req.seats;
				k->pre_mem[p] -= j->slots[i].mem;
			}
		}
	}
	if (add) {
		s->npre[j->req.prio]++;
		s->pdirty |= j->cards;
	} else
		s->npre[j->req.prio]--;
}

/*
 * The cards among only where r could fit if the preemptible jobs below its
 * priority left, provided its other ncards - 1 cards fit as they are.
 */
static uint64_t
preempt_cards(const struct sched *s, const struct sched_req *r,
    uint64_t elig, uint64_t avail, uint64_t only, uint64_t *fitp)
{
	const struct sched_card	*k;
	uint64_t		 fit, m, res = 0;
	u_int			 c, nfit;

	nfit = sched_card_fit(s, r, elig & avail, &fit);
	if (nfit >= r->ncards || nfit + 1 < r->ncards)
		return (0);
	for (m = elig & avail & ~fit & only; m != 0; m &= m - 1) {
		c = __builtin_ctzll(m);
		k = &s->card[c];
		if (SEATS_PER_CARD - k->used + k->pre_seats[r->prio] >=
		    r->seats && k->memory - k->mem_used +
		    k->pre_mem[r->prio] >= sched_card_need(s, r, c))
			res |= BIT(c);
	}
	if (fitp != NULL)
		*fitp = fit;
	return (res);
}

/*
 * The fewest of the n candidates v (oldest first) that free ds seats and
 * dm bytes: f(i, k, t) is the most memory k jobs from v[i..] free while
 * freeing at least t seats (-1: impossible), for k up to kmax.  Returns
 * the table (the caller frees it), NULL if even kmax jobs do not do.
 */
static int64_t *
victims_table(struct sched_job *const *v, const uint64_t *mem, u_int n,
    u_int kmax, u_int ds, uint64_t dm, u_int *kout)
{
	int64_t		*f, best, t;
	u_int		 i, k, x, x2, w = ds + 1, kw = (kmax + 1) * w;

	f = xreallocarray(NULL, (size_t)(n + 1) * kw, sizeof *f);
	for (k = 0; k <= kmax; k++) {
		for (x = 0; x < w; x++)
			f[(size_t)n * kw + k * w + x] =
			    k == 0 && x == 0 ? 0 : -1;
	}
	for (i = n; i-- > 0;) {
		for (k = 0; k <= kmax; k++) {
			for (x = 0; x < w; x++) {
				best = f[(size_t)(i + 1) * kw + k * w + x];
				x2 = x > v[i]->req.seats ?
				    x - v[i]->req.seats : 0;
				if (k > 0 && (t = f[(size_t)(i + 1) * kw +
				    (k - 1) * w + x2]) >= 0 &&
				    t + (int64_t)mem[i] > best)
					best = t + (int64_t)mem[i];
				f[(size_t)i * kw + k * w + x] = best;
			}
		}
	}
	for (k = 1; k <= kmax; k++) {
		if (f[k * w + ds] >= (int64_t)dm) {
			*kout = k;
			return (f);
		}
	}
	free(f);
	return (NULL);
}

/*
 * Chooses the victims on card c for a job of priority prio short of ds
 * seats and dm bytes there: the fewest, then sparing the oldest.  Writes
 * them to out (oldest first); returns how many, 0 if it cannot be done.
 */
static u_int
preempt_victims(const struct sched *s, u_int c, u_int prio, u_int ds,
    uint64_t dm, struct sched_job **out)
{
	struct sched_job	*v[SEATS_PER_CARD];
	uint64_t		 mem[SEATS_PER_CARD];
	const struct sched_slot	*sl;
	int64_t			*f, rem;
	u_int			 n = 0, nv, i, k = 0, kmax, x, w, kw;

	TAILQ_FOREACH(sl, &s->card[c].slots, entry) {
		if ((sl->job->req.flags & JOB_PREEMPTIBLE) &&
		    sl->job->by == 0 && sl->job->req.prio < prio) {
			mem[n] = sl->mem;
			v[n++] = sl->job;
		}
	}
	f = NULL;
	for (kmax = 1; n != 0; kmax *= 2) {
		if (kmax > n)
			kmax = n;
		if ((f = victims_table(v, mem, n, kmax, ds, dm, &k)) != NULL ||
		    kmax == n)
			break;
	}
	if (f == NULL)
		return (0);
	/* Walk oldest first; leave a job out whenever the rest can do. */
	w = ds + 1;
	kw = (kmax + 1) * w;
	x = ds;
	rem = (int64_t)dm;
	nv = 0;
	for (i = 0; k > 0; i++) {
		if (f[(size_t)(i + 1) * kw + k * w + x] >= rem)
			continue;
		out[nv++] = v[i];
		k--;
		x = x > v[i]->req.seats ? x - v[i]->req.seats : 0;
		rem = rem > (int64_t)mem[i] ? rem - (int64_t)mem[i] : 0;
	}
	free(f);
	return (nv);
}

/* Whether (start, id) makes a older than b. */
static int
preempt_older(const struct sched_job *a, const struct sched_job *b)
{
	if (a->start != b->start)
		return (a->start < b->start);
	return (a->req.id < b->req.id);
}

/*
 * Whether victim set a (n jobs, oldest first) spares older work than b:
 * its oldest job is younger, or the same and so on.
 */
static int
preempt_spares(struct sched_job *const *a, struct sched_job *const *b,
    u_int n)
{
	u_int	 i;

	for (i = 0; i < n; i++) {
		if (a[i] != b[i])
			return (preempt_older(b[i], a[i]));
	}
	return (0);
}

/* Marks v as preempted for j (clearing card c) and tells the daemon. */
static void
preempt_mark(struct sched *s, struct sched_job *v, struct sched_job *j,
    u_int c, struct sched_out *out)
{
	struct sched_decision	*d;

	sched_preempt_pool(s, v, 0);
	v->by = j->req.id;
	v->by_card = c;
	v->claimant = j;
	j->nvictims++;
	d = sched_emit(out, SCHED_PREEMPT, v->req.id);
	d->card = c;
	d->by = j->req.id;
	d->seats = v->req.seats;
	xasprintf(&d->reason, "preempted for j%u (priority %u) on card %u",
	    j->req.id, j->req.prio, c);
	log_debug("%s: j%u for j%u on card %u", __func__, v->req.id,
	    j->req.id, c);
}

/*
 * Tries to make room for queued job j (which does not fit) by preemption
 * on one card it may use.  Returns 1 if victims were chosen: j then holds
 * that card and the others it needs, and waits for the victims to go.
 */
int
sched_preempt_for(struct sched *s, struct sched_job *j, struct sched_out *out)
{
	const struct sched_req	*r = &j->req;
	struct sched_job	*v[SEATS_PER_CARD], *best[SEATS_PER_CARD];
	struct sched_req	 rest;
	const struct sched_card	*k;
	uint64_t		 cards, fit, need, claim;
	u_int			 c, n, nbest = 0, bestc = 0, ds, i;

	if (r->seats == 0 || r->prio == 0 || j->hold == SCHED_HOLD_CLAIM)
		return (0);
	cards = preempt_cards(s, r, j->class->elig, sched_card_avail(s, j),
	    ~0ULL, &fit);
	for (; cards != 0; cards &= cards - 1) {
		c = __builtin_ctzll(cards);
		k = &s->card[c];
		need = sched_card_need(s, r, c);
		ds = r->seats > SEATS_PER_CARD - k->used ?
		    r->seats - (SEATS_PER_CARD - k->used) : 0;
		n = preempt_victims(s, c, r->prio, ds, need >
		    k->memory - k->mem_used ? need - (k->memory - k->mem_used) :
		    0, v);
		if (n == 0)
			continue;
		if (nbest == 0 || n < nbest ||
		    (n == nbest && preempt_spares(v, best, n))) {
			memcpy(best, v, n * sizeof *v);
			nbest = n;
			bestc = c;
		}
	}
	if (nbest == 0)
		return (0);
	rest = *r;
	rest.ncards = r->ncards - 1;
	claim = BIT(bestc) | sched_card_place(s, &rest, fit & ~BIT(bestc),
	    j->cards);
	sched_card_release(s, j);
	sched_card_hold(s, j, claim, SCHED_HOLD_CLAIM);
	for (i = 0; i < nbest; i++)
		preempt_mark(s, best[i], j, bestc, out);
	return (1);
}

/* The first queued job of class k that holds nothing (to try for). */
static struct sched_job *
preempt_candidate(const struct sched_class *k)
{
	struct sched_job	*j;

	TAILQ_FOREACH(j, &k->jobs, centry) {
		if (j->hold == SCHED_HOLD_NONE)
			return (j);
	}
	return (NULL);
}

/* The lowest priority with preemptible running jobs; SCHED_PRIOS if none. */
static u_int
preempt_floor(const struct sched *s)
{
	u_int	 p;

	for (p = 0; p < SCHED_PRIOS && s->npre[p] == 0; p++)
		;
	return (p);
}

/*
 * Lets the waiting jobs that can preempt do so, first in queue order first.
 * Only what changed is looked at: cards with more preemptible room or more
 * free room (s->pdirty), and a job just queued (s->pcheck).
 */
void
sched_preempt_round(struct sched *s, struct sched_out *out)
{
	const struct sched_cref	*cr;
	struct sched_job	*j, *best;
	uint64_t		 d = s->pdirty, only, avail;
	u_int			 seats, i, floor;

	for (;;) {
		if ((floor = preempt_floor(s)) == SCHED_PRIOS)
			return;
		best = NULL;
		avail = ~s->held & s->all;
		for (seats = 1; d != 0 && seats <= SEATS_PER_CARD; seats++) {
			cr = s->bucket[seats].v;
			for (i = 0; i < s->bucket[seats].n; i++, cr++) {
				if (cr->prio <= floor)
					continue;
				only = cr->ncards == 1 ? d :
				    (cr->elig & d) != 0 ? ~0ULL : 0;
				if (only == 0 || preempt_cards(s, &cr->k->shape,
				    cr->elig, avail, only, NULL) == 0)
					continue;
				j = preempt_candidate(cr->k);
				if (j != NULL && (best == NULL ||
				    sched_queue_cmp(j, best) < 0))
					best = j;
			}
		}
		j = s->pcheck;
		if (j != NULL && j->state == SCHED_QUEUED &&
		    j->hold == SCHED_HOLD_NONE && j->req.prio > floor &&
		    (best == NULL || sched_queue_cmp(j, best) < 0) &&
		    preempt_cards(s, &j->req, j->class->elig, avail, ~0ULL,
		    NULL) != 0)
			best = j;
		if (best == NULL || !sched_preempt_for(s, best, out))
			return;
		/* A claim changes what everybody else may use. */
		d = s->all;
	}
}
