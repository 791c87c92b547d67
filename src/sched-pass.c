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
#include "sched-int.h"

#define BIT(c)		(1ULL << (c))

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

/*
 * Candidates are a flat array of what the pass needs to know about them
 * (copied from the classes' dense entries): choosing one reads no job.
 */
static struct sched_cand *
cand_new(struct sched *s)
{
	if (s->ncand == s->cand_size) {
		s->cand_size = s->cand_size == 0 ? 64 : s->cand_size * 2;
		s->cand = xreallocarray(s->cand, s->cand_size,
		    sizeof *s->cand);
	}
	return (&s->cand[s->ncand++]);
}

static void
cand_job(struct sched *s, struct sched_job *j)
{
	struct sched_cand	*c = cand_new(s);

	c->key = j->key;
	c->submit = j->req.submit;
	c->id = j->req.id;
	c->elig = j->class->elig;
	c->mem = j->req.mem;
	c->seats = j->req.seats;
	c->ncards = j->req.ncards;
	c->own = j->hold != SCHED_HOLD_NONE ? j->cards : 0;
	c->job = j;
}

static void
cand_class(struct sched *s, const struct sched_cref *cr, u_int seats)
{
	struct sched_cand	*c = cand_new(s);

	c->key = cr->key;
	c->submit = cr->submit;
	c->id = cr->id;
	c->elig = cr->elig;
	c->mem = cr->mem;
	c->seats = seats;
	c->ncards = cr->ncards;
	c->own = 0;
	c->job = cr->first;
}

/* Whether candidate c fits, on n of the cards in m (and c's own). */
static int
cand_fits(const struct sched *s, const struct sched_cand *c, uint64_t m,
    u_int n)
{
	const struct sched_card	*k;
	uint64_t		 need;
	u_int			 i;

	for (; m != 0; m &= m - 1) {
		i = __builtin_ctzll(m);
		k = &s->card[i];
		need = c->mem != 0 ? c->mem :
		    (uint64_t)c->seats * k->memory / SEATS_PER_CARD;
		if (SEATS_PER_CARD - k->used >= c->seats &&
		    k->memory - k->mem_used >= need && --n == 0)
			return (1);
	}
	return (0);
}

static int
cand_before(const struct sched_cand *a, const struct sched_cand *b)
{
	if (a->key != b->key)
		return (a->key < b->key);
	if (a->submit != b->submit)
		return (a->submit < b->submit);
	return (a->id < b->id);
}

/*
 * Finds the classes that may fit now that cards d have more room.  Nothing
 * fitted before, so a class of one-card jobs needs a look at d only, and
 * none asking more seats than d has free.  Jobs holding cards are
 * candidates always (few: one per card at most).
 */
static void
cand_scan(struct sched *s, uint64_t d)
{
	const struct sched_cref	*cr;
	struct sched_cand	 c;
	struct sched_job	*h;
	uint64_t		 avail = ~s->held & s->all, m;
	u_int			 seats, i, most = 0;

	for (m = d & avail; m != 0; m &= m - 1) {
		i = sched_card_free_seats(&s->card[__builtin_ctzll(m)]);
		if (i > most)
			most = i;
	}
	for (seats = 1; seats <= most; seats++) {
		cr = s->bucket[seats].v;
		for (i = 0; i < s->bucket[seats].n; i++, cr++) {
			if ((m = cr->elig & avail & d) == 0)
				continue;
			c.seats = seats;
			c.mem = cr->mem;
			if (cr->ncards == 1 ? cand_fits(s, &c, m, 1) :
			    cand_fits(s, &c, cr->elig & avail, cr->ncards))
				cand_class(s, cr, seats);
		}
	}
	for (m = s->held; m != 0; m &= ~h->cards) {
		h = s->card[__builtin_ctzll(m)].holder;
		cand_job(s, h);
	}
}

/*
 * Drops the candidates that no longer fit (room only shrinks as jobs are
 * admitted) and returns the first of the others in queue order, -1 if
 * none is left.
 */
static int
cand_pick(struct sched *s)
{
	struct sched_cand	*c;
	uint64_t		 avail = ~s->held & s->all;
	u_int			 i, n = 0;
	int			 best = -1;

	for (i = 0; i < s->ncand; i++) {
		c = &s->cand[i];
		if (!cand_fits(s, c, c->elig & (avail | c->own), c->ncards))
			continue;
		if (n != i)
			s->cand[n] = *c;
		if (best == -1 || cand_before(&s->cand[n], &s->cand[best]))
			best = n;
		n++;
	}
	s->ncand = n;
	return (best);
}

/* Admits, in queue order, every waiting job that fits. */
static void
admit_fitting(struct sched *s, int64_t now, struct sched_out *out)
{
	struct sched_job	*j, *next;
	uint64_t		 fit, d, cards;
	int			 i;

	s->ncand = 0;
	d = s->dirty;
	s->dirty = 0;
	cand_scan(s, d);
	/* A job just (re)queued was never looked at on the other cards. */
	if (s->pcheck != NULL && s->pcheck->state == SCHED_QUEUED)
		cand_job(s, s->pcheck);
	while ((i = cand_pick(s)) != -1) {
		j = s->cand[i].job;
		s->cand[i] = s->cand[--s->ncand];
		if (j->state != SCHED_QUEUED ||
		    sched_card_fit(s, &j->req, j->class->elig &
		    sched_card_avail(s, j), &fit) < j->req.ncards)
			continue;
		next = TAILQ_NEXT(j, centry);
		cards = sched_card_place(s, &j->req, fit, j->cards);
		sched_pass_admit(s, j, cards, now, out);
		if (next != NULL)
			cand_job(s, next);
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
