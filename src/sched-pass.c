/*
 * sched-pass.c: the admission pass.  After anything that frees room or
 * changes the queue, the pass admits every waiting job that fits, in queue
 * order, looking only at classes of equal requests on the cards that
 * gained room; then it makes sure the first job in the queue holds cards
 * (so that later, smaller jobs cannot keep it waiting for ever) or is
 * preempting for some; then it lets other jobs preempt.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"

#define BIT(c)		(1ULL << (c))

static void
cand_add(struct sched *s, struct sched_job *j)
{
	if (s->ncand == s->cand_size) {
		s->cand_size = s->cand_size == 0 ? 64 : s->cand_size * 2;
		s->cand = xreallocarray(s->cand, s->cand_size,
		    sizeof *s->cand);
	}
	s->cand[s->ncand++] = j;
}

/*
 * Finds the classes that may fit now that cards d have more room: a class
 * of one-card jobs needs a look at d only, since nothing fitted before.
 * Jobs holding cards are candidates always (few: one per card at most).
 */
static void
cand_scan(struct sched *s, uint64_t d)
{
	struct sched_class	*k;
	struct sched_job	*h;
	uint64_t		 avail = ~s->held & s->all, m;
	u_int			 i;

	for (i = 0; d != 0 && i < s->nclasses; i++) {
		k = s->classes[i];
		if (k->shape.ncards == 1)
			m = k->elig & avail & d;
		else
			m = (k->elig & d) != 0 ? k->elig & avail : 0;
		if (m != 0 && sched_card_fit(s, &k->shape, m, NULL) >=
		    k->shape.ncards)
			cand_add(s, TAILQ_FIRST(&k->jobs));
	}
	for (m = s->held; m != 0; m &= ~h->cards) {
		h = s->card[__builtin_ctzll(m)].holder;
		cand_add(s, h);
	}
}

/* Returns the first candidate in queue order that fits; drops the rest. */
static struct sched_job *
cand_pick(struct sched *s, uint64_t *fit)
{
	struct sched_job	*j, *best = NULL;
	uint64_t		 f, bestf = 0;
	u_int			 i, n = 0;

	for (i = 0; i < s->ncand; i++) {
		j = s->cand[i];
		if (j->state != SCHED_QUEUED)
			continue;
		if (sched_card_fit(s, &j->req, j->class->elig &
		    sched_card_avail(s, j), &f) < j->req.ncards)
			continue;
		s->cand[n++] = j;
		if (best == NULL || sched_queue_cmp(j, best) < 0) {
			best = j;
			bestf = f;
		}
	}
	s->ncand = n;
	*fit = bestf;
	return (best);
}

/* Starts j on cards: takes it out of the queue, tells the daemon. */
void
sched_pass_admit(struct sched *s, struct sched_job *j, uint64_t cards,
    int64_t now, struct sched_out *out)
{
	struct sched_decision	*d;
	u_int			 i, n = __builtin_popcountll(cards);

	if (j->class != NULL)
		sched_queue_leave(s, j);
	j->cards = cards;
	j->start = now;
	if (cards == 0) {
		j->state = SCHED_RUNNING;
		sched_emit(out, SCHED_ADMIT, j->req.id);
		return;
	}
	sched_card_add(s, j);
	for (i = 0; i < n; i++) {
		d = sched_emit(out, SCHED_ADMIT, j->req.id);
		d->card = j->slots[i].card;
		d->cards = cards;
		d->seats = j->req.seats;
		d->mem = j->slots[i].mem;
		j->slots[i].told = out->n - 1;
	}
	log_debug("%s: j%u on %#llx", __func__, j->req.id,
	    (unsigned long long)cards);
}

/* Admits, in queue order, every waiting job that fits. */
static void
admit_fitting(struct sched *s, int64_t now, struct sched_out *out)
{
	struct sched_job	*j, *next;
	uint64_t		 fit, d, cards;

	s->ncand = 0;
	d = s->dirty;
	s->dirty = 0;
	cand_scan(s, d);
	/* A job just (re)queued was never looked at on the other cards. */
	if (s->pcheck != NULL && s->pcheck->state == SCHED_QUEUED)
		cand_add(s, s->pcheck);
	while ((j = cand_pick(s, &fit)) != NULL) {
		next = TAILQ_NEXT(j, centry);
		cards = sched_card_place(s, &j->req, fit, j->cards);
		sched_pass_admit(s, j, cards, now, out);
		if (next != NULL)
			cand_add(s, next);
		if ((d = s->dirty) != 0) {
			s->dirty = 0;
			cand_scan(s, d);
		}
	}
}

/*
 * Chooses the cards the first job in the queue waits on: those where it
 * fits, then those missing the least.  If claims leave fewer free than it
 * needs, it takes what there is and the rest as the claims end, so that
 * new claims cannot keep it waiting.
 */
static void
drain_pick(struct sched *s, struct sched_job *h)
{
	const struct sched_req	*r = &h->req;
	const struct sched_card	*k;
	uint64_t		 cand = h->class->elig & ~s->held & s->all;
	uint64_t		 pick = 0, m, need;
	double			 score[SCHED_CARDS_MAX], ds, dm;
	u_int			 i, c, best, want;

	want = r->ncards - __builtin_popcountll(h->cards);
	if ((u_int)__builtin_popcountll(cand) < want)
		want = __builtin_popcountll(cand);
	if (want == 0)
		return;
	for (m = cand; m != 0; m &= m - 1) {
		c = __builtin_ctzll(m);
		k = &s->card[c];
		need = sched_card_need(s, r, c);
		ds = dm = 0;
		if (r->seats > sched_card_free_seats(k))
			ds = (double)(r->seats - sched_card_free_seats(k)) /
			    SEATS_PER_CARD;
		if (need > sched_card_free_mem(k))
			dm = (double)(need - sched_card_free_mem(k)) /
			    k->memory;
		score[c] = ds > dm ? ds : dm;
	}
	for (i = 0; i < want; i++) {
		m = cand & ~pick;
		best = __builtin_ctzll(m);
		for (m &= m - 1; m != 0; m &= m - 1) {
			c = __builtin_ctzll(m);
			if (score[c] < score[best])
				best = c;
		}
		pick |= BIT(best);
	}
	sched_card_hold(s, h, pick, SCHED_HOLD_DRAIN);
}

/*
 * Makes sure the first job in the queue holds cards or is preempting for
 * some.  Returns 1 if room changed hands (another admission round).
 */
static int
settle_head(struct sched *s, struct sched_out *out)
{
	struct sched_job	*h = sched_queue_head(s);
	int			 changed = 0;

	if (s->drain != NULL && s->drain != h) {
		sched_card_release(s, s->drain);
		changed = 1;
	}
	if (h == NULL || h->hold == SCHED_HOLD_CLAIM)
		return (changed);
	if (sched_preempt_for(s, h, out))
		return (1);
	if ((u_int)__builtin_popcountll(h->cards) < h->req.ncards)
		drain_pick(s, h);
	return (changed);
}

/* Claims whose victims are all gone but that still do not fit. */
static int
drop_idle_claims(struct sched *s)
{
	struct sched_job	*h;
	uint64_t		 m;
	int			 changed = 0;

	for (m = s->held; m != 0; m &= ~h->cards) {
		h = s->card[__builtin_ctzll(m)].holder;
		if (h->hold == SCHED_HOLD_CLAIM && h->nvictims == 0) {
			m &= ~h->cards;
			sched_card_release(s, h);
			changed = 1;
		}
	}
	return (changed);
}

/* After a restore: victims being preempted name the job they clear for. */
static void
rebuild_claims(struct sched *s)
{
	struct sched_slot	*sl;
	struct sched_job	*v, *h;
	u_int			 c;

	s->restored = 0;
	for (c = 0; c < s->ncards; c++) {
		TAILQ_FOREACH(sl, &s->card[c].slots, entry) {
			v = sl->job;
			if (v->by == 0 || v->claimant != NULL ||
			    (u_int)__builtin_ctzll(v->cards) != c)
				continue;
			h = sched_find(s, v->by);
			if (h == NULL || h->state != SCHED_QUEUED ||
			    h->hold == SCHED_HOLD_DRAIN)
				continue;
			v->claimant = h;
			h->nvictims++;
			if (v->by_card >= 0 && (v->cards & BIT(v->by_card)) &&
			    s->card[v->by_card].holder == NULL)
				sched_card_hold(s, h, BIT(v->by_card),
				    SCHED_HOLD_CLAIM);
		}
	}
}

/*
 * Admits what fits (in queue order), settles what the first job holds,
 * lets jobs preempt.  The call's ceilings are left to the caller.
 */
void
sched_pass_run(struct sched *s, int64_t now, struct sched_out *out)
{
	if (s->restored) {
		/* The first job takes its cards back before anyone else. */
		rebuild_claims(s);
		settle_head(s, out);
	}
	do
		admit_fitting(s, now, out);
	while (drop_idle_claims(s) || settle_head(s, out));
	sched_preempt_round(s, out);
	s->pdirty = 0;
	s->pcheck = NULL;
}

/* A pass on its own: after restoring, admits what fits and tells all. */
void
sched_pass(struct sched *s, int64_t now, struct sched_out *out)
{
	u_int	 start = out->n;

	sched_pass_run(s, now, out);
	sched_card_ceilings(s, out, start);
}
