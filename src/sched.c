/*
 * sched.c: scheduling policy, pure.  State in, decisions out: no I/O, no
 * SQL, no clock of its own, no state outside the struct sched it is given.
 * docs/scheduling.md is the model in prose; this is how the daemon uses it.
 *
 * The state.  sched_create(memory[], n) makes a scheduler for n cards (at
 * most 64) of the given memory; card i is gmux's card index i.  Each card
 * has 100 seats of compute.  Jobs are described by a struct sched_req: id,
 * seats per card (0..100; 0 means no card at all), memory cap per card (0:
 * seats% of the card's memory), ncards, pin (-1: any card), priority 0..9,
 * flags (JOB_BURST, JOB_PREEMPTIBLE, JOB_REQUEUE, JOB_NOWAIT), submit time
 * and the longest wait allowed (timeout, 0: none).
 *
 * The calls.  Each takes the clock as `now' (ms) and appends decisions to a
 * struct sched_out, which the caller carries out in order and then empties
 * with sched_out_clear():
 *
 *	sched_submit(s, req, now, out)	a new job: ADMIT, QUEUE or REFUSE
 *					(returns -1 if refused)
 *	sched_end(s, id, now, out)	a job is gone: it ended, was stopped,
 *					or (queued) was cancelled; returns 1
 *					if it was a preemption victim with
 *					JOB_REQUEUE and is queued again
 *	sched_resize(s, id, seats, mem, now, out, &cause)
 *					-1 with *cause if growing does not fit
 *	sched_tick(s, now, out)		queued jobs past their timeout: REFUSE
 *	sched_restore(s, req, run, &cause) + sched_pass(s, now, out)
 *					rebuilding after a restart: restore
 *					every job (run NULL: queued), then one
 *					pass, which admits what fits and tells
 *					every running job's ceiling again
 *
 * The decisions (struct sched_decision), in the order to carry them out:
 *
 *	ADMIT	job, card, seats, mem, ceiling: start the job; one decision
 *		per card (cards: all of them), card -1 for a share-0 job
 *	QUEUE	job, pos, reason ("waiting for 0.5 of a card")
 *	REFUSE	job, reason: it will not run ("needs 90G of memory; the
 *		largest card has 80G"); also for --no-wait and --timeout
 *	PREEMPT	job, by, card, reason: stop job (SIGTERM, grace, SIGKILL) so
 *		that `by' can start; call sched_end() when it is gone
 *	CEILING	job, card, seats, ceiling: a running job's compute ceiling
 *		(a --burst job's guarantee plus its part of the card's idle
 *		seats); lowered ones come first in a batch, before the ADMIT
 *		that needs the capacity back
 *	RESIZE	job, card, seats, mem, ceiling: after sched_resize()
 *	REQUEUE	job, pos: a preempted --requeue job waits again
 *
 * The queue is ordered by priority with aging: a job's effective priority
 * is prio + waited / age (age: SCHED_AGE_MS unless sched_set_age()), which
 * orders jobs as the constant key submit - prio x age does, so the order
 * never has to be recomputed.  The first job in the queue holds cards (no
 * later job is placed there) until they have room for it; a job that does
 * not fit may preempt preemptible jobs of lower priority on one card and
 * holds the cards it clears.  After every call, no waiting job fits in the
 * room not held for another job (the property test checks this).
 */

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"

#define BIT(c)		(1ULL << (c))
#define CEIL_UNSET	UINT_MAX

static void	 pass(struct sched *, int64_t, struct sched_out *);

static u_int
free_seats(const struct sched_card *k)
{
	return (SEATS_PER_CARD - k->used);
}

static uint64_t
free_mem(const struct sched_card *k)
{
	return (k->memory - k->mem_used);
}

/* The memory r needs on card c: its cap, or its share of the card's. */
uint64_t
sched_need(const struct sched *s, const struct sched_req *r, u_int c)
{
	if (r->mem != 0)
		return (r->mem);
	return ((uint64_t)r->seats * s->card[c].memory / SEATS_PER_CARD);
}

/* The cards that could ever hold r (empty, and its pin if any). */
uint64_t
sched_eligible(const struct sched *s, const struct sched_req *r)
{
	uint64_t	 m = 0;
	u_int		 c;

	if (r->seats > SEATS_PER_CARD)
		return (0);
	for (c = 0; c < s->ncards; c++) {
		if (r->pin >= 0 && (u_int)r->pin != c)
			continue;
		if (sched_need(s, r, c) <= s->card[c].memory)
			m |= BIT(c);
	}
	return (m);
}

/*
 * Counts the cards among `cards' (and r's pin) where r fits now; *fit gets
 * them if not NULL.  This is the admission test: seats and memory.
 */
u_int
sched_fit(const struct sched *s, const struct sched_req *r, uint64_t cards,
    uint64_t *fit)
{
	const struct sched_card	*k;
	uint64_t		 m = 0;
	u_int			 c, n = 0;

	if (r->pin >= 0)
		cards &= (u_int)r->pin < s->ncards ? BIT(r->pin) : 0;
	while (cards != 0) {
		c = __builtin_ctzll(cards);
		cards &= cards - 1;
		k = &s->card[c];
		if (free_seats(k) >= r->seats &&
		    free_mem(k) >= sched_need(s, r, c)) {
			m |= BIT(c);
			n++;
		}
	}
	if (fit != NULL)
		*fit = m;
	return (n);
}

/* Whether card c is a better home than card b for r: the fuller one. */
static int
place_better(const struct sched *s, const struct sched_req *r, u_int c,
    u_int b)
{
	const struct sched_card	*kc = &s->card[c], *kb = &s->card[b];
	uint64_t		 mc, mb;

	if (free_seats(kc) != free_seats(kb))
		return (free_seats(kc) < free_seats(kb));
	mc = free_mem(kc) - sched_need(s, r, c);
	mb = free_mem(kb) - sched_need(s, r, b);
	return (mc < mb);
}

/*
 * Chooses n of the cards in fit for r: those in prefer first (cards held
 * for it), then the fullest (best fit keeps whole cards free for whole-card
 * jobs), then the lowest index.  Returns 0 if fit has fewer than n.
 */
uint64_t
sched_place(const struct sched *s, const struct sched_req *r, uint64_t fit,
    uint64_t prefer)
{
	uint64_t	 pick = 0, m;
	u_int		 i, c, best;

	for (i = 0; i < r->ncards; i++) {
		if ((m = fit & prefer & ~pick) == 0)
			m = fit & ~pick;
		if (m == 0)
			return (0);
		best = __builtin_ctzll(m);
		for (m &= m - 1; m != 0; m &= m - 1) {
			c = __builtin_ctzll(m);
			if (place_better(s, r, c, best))
				best = c;
		}
		pick |= BIT(best);
	}
	return (pick);
}

/* The cards j may use: those not held for another job. */
uint64_t
sched_avail(const struct sched *s, const struct sched_job *j)
{
	uint64_t	 own = j->hold != SCHED_HOLD_NONE ? j->cards : 0;

	return ((~s->held | own) & s->all);
}

/* Holds cards for a queued job (adding to what it holds already). */
void
sched_hold(struct sched *s, struct sched_job *j, uint64_t cards,
    enum sched_hold how)
{
	uint64_t	 m;

	j->cards |= cards;
	j->hold = how;
	s->held |= cards;
	for (m = cards; m != 0; m &= m - 1)
		s->card[__builtin_ctzll(m)].holder = j;
	if (how == SCHED_HOLD_DRAIN)
		s->drain = j;
}

/* Lets go of what a queued job holds; its victims keep going. */
void
sched_release(struct sched *s, struct sched_job *j)
{
	struct sched_slot	*sl;
	uint64_t		 m;
	u_int			 c;

	if (j->hold == SCHED_HOLD_NONE)
		return;
	for (m = j->cards; m != 0; m &= m - 1) {
		c = __builtin_ctzll(m);
		s->card[c].holder = NULL;
		if (j->hold != SCHED_HOLD_CLAIM)
			continue;
		TAILQ_FOREACH(sl, &s->card[c].slots, entry) {
			if (sl->job->claimant == j)
				sl->job->claimant = NULL;
		}
	}
	s->held &= ~j->cards;
	s->dirty |= j->cards;
	s->pdirty |= j->cards;
	if (s->drain == j)
		s->drain = NULL;
	j->nvictims = 0;
	j->cards = 0;
	j->hold = SCHED_HOLD_NONE;
}

/*
 * Returns the next decision, zeroed, in out (which owns it until
 * sched_out_clear()).
 */
struct sched_decision *
sched_emit(struct sched_out *out, enum sched_act act, u_int job)
{
	struct sched_decision	*d;

	if (out->n == out->size) {
		out->size = out->size == 0 ? 16 : out->size * 2;
		out->v = xreallocarray(out->v, out->size, sizeof *out->v);
	}
	d = &out->v[out->n++];
	memset(d, 0, sizeof *d);
	d->act = act;
	d->job = job;
	d->card = -1;
	return (d);
}

/* Empties out for the next call, keeping its buffer. */
void
sched_out_clear(struct sched_out *out)
{
	u_int	 i;

	for (i = 0; i < out->n; i++)
		free(out->v[i].reason);
	out->n = 0;
}

void
sched_out_free(struct sched_out *out)
{
	sched_out_clear(out);
	free(out->v);
	memset(out, 0, sizeof *out);
}

static void
refuse(struct sched_out *out, u_int id, char *why)
{
	sched_emit(out, SCHED_REFUSE, id)->reason = why;
}

struct sched_job *
sched_find(const struct sched *s, u_int id)
{
	struct sched_job	*j;

	for (j = s->jhash[id & (s->jhsize - 1)]; j != NULL; j = j->hnext) {
		if (j->req.id == id)
			return (j);
	}
	return (NULL);
}

static void
sjob_rehash(struct sched *s)
{
	struct sched_job	**old = s->jhash, *j, *next;
	u_int			  i, oldsize = s->jhsize, h;

	s->jhsize *= 2;
	s->jhash = xcalloc(s->jhsize, sizeof *s->jhash);
	for (i = 0; i < oldsize; i++) {
		for (j = old[i]; j != NULL; j = next) {
			next = j->hnext;
			h = j->req.id & (s->jhsize - 1);
			j->hnext = s->jhash[h];
			s->jhash[h] = j;
		}
	}
	free(old);
}

static struct sched_job *
sjob_new(struct sched *s, const struct sched_req *r)
{
	struct sched_job	*j;
	u_int			 h;

	if (s->njobs >= s->jhsize)
		sjob_rehash(s);
	j = xcalloc(1, sizeof *j);
	j->req = *r;
	if (j->req.seats == 0)
		j->req.ncards = 0;
	j->by_card = -1;
	h = r->id & (s->jhsize - 1);
	j->hnext = s->jhash[h];
	s->jhash[h] = j;
	s->njobs++;
	return (j);
}

static void
sjob_free(struct sched *s, struct sched_job *j)
{
	struct sched_job	**jp;

	for (jp = &s->jhash[j->req.id & (s->jhsize - 1)]; *jp != j;
	    jp = &(*jp)->hnext)
		;
	*jp = j->hnext;
	s->njobs--;
	free(j->slots);
	free(j);
}

static void
enqueue(struct sched *s, struct sched_job *j)
{
	j->key = j->req.submit - (int64_t)j->req.prio * s->age;
	j->cards = 0;
	j->hold = SCHED_HOLD_NONE;
	sched_queue_insert(s, j);
	if (j->req.timeout > 0)
		TAILQ_INSERT_TAIL(&s->timed, j, tentry);
}

static void
dequeue(struct sched *s, struct sched_job *j)
{
	sched_release(s, j);
	sched_queue_remove(s, j);
	if (j->req.timeout > 0)
		TAILQ_REMOVE(&s->timed, j, tentry);
}

/* Puts a running job on its cards (j->cards), in start order. */
static void
slots_add(struct sched *s, struct sched_job *j)
{
	struct sched_card	*k;
	struct sched_slot	*sl, *p;
	uint64_t		 m;
	u_int			 i = 0, c;

	j->slots = xcalloc(__builtin_popcountll(j->cards), sizeof *j->slots);
	for (m = j->cards; m != 0; m &= m - 1) {
		c = __builtin_ctzll(m);
		k = &s->card[c];
		sl = &j->slots[i++];
		sl->job = j;
		sl->card = c;
		sl->mem = sched_need(s, &j->req, c);
		sl->ceiling = CEIL_UNSET;
		sl->told = -1;
		p = TAILQ_LAST(&k->slots, sched_slots);
		while (p != NULL && (p->job->start > j->start ||
		    (p->job->start == j->start && p->job->req.id > j->req.id)))
			p = TAILQ_PREV(p, sched_slots, entry);
		if (p == NULL)
			TAILQ_INSERT_HEAD(&k->slots, sl, entry);
		else
			TAILQ_INSERT_AFTER(&k->slots, p, sl, entry);
		k->used += j->req.seats;
		k->mem_used += sl->mem;
		if (j->req.flags & JOB_BURST)
			k->nburst++;
	}
	j->state = SCHED_RUNNING;
	sched_preempt_pool(s, j, 1);
	s->touched |= j->cards;
}

static void
slots_remove(struct sched *s, struct sched_job *j)
{
	struct sched_card	*k;
	u_int			 i, n = __builtin_popcountll(j->cards);

	sched_preempt_pool(s, j, 0);
	for (i = 0; i < n; i++) {
		k = &s->card[j->slots[i].card];
		TAILQ_REMOVE(&k->slots, &j->slots[i], entry);
		k->used -= j->req.seats;
		k->mem_used -= j->slots[i].mem;
		if (j->req.flags & JOB_BURST)
			k->nburst--;
	}
	free(j->slots);
	j->slots = NULL;
	s->touched |= j->cards;
	s->dirty |= j->cards;
	s->pdirty |= j->cards;
	j->cards = 0;
}

/* Starts j on cards: takes it out of the queue, tells the daemon. */
static void
admit(struct sched *s, struct sched_job *j, uint64_t cards, int64_t now,
    struct sched_out *out)
{
	struct sched_decision	*d;
	u_int			 i, n = __builtin_popcountll(cards);

	if (j->class != NULL)
		dequeue(s, j);
	j->cards = cards;
	j->start = now;
	if (cards == 0) {
		j->state = SCHED_RUNNING;
		sched_emit(out, SCHED_ADMIT, j->req.id);
		return;
	}
	slots_add(s, j);
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
 * Works out card c's ceilings: a burst job gets its guarantee plus an equal
 * part of the idle seats (the oldest get the remainder), others their
 * guarantee.  New values patch this call's ADMIT or RESIZE; changes to
 * lower go to low (they are carried out first), the rest to out.
 */
static void
card_ceilings(struct sched *s, u_int c, struct sched_out *out,
    struct sched_out *low)
{
	struct sched_card	*k = &s->card[c];
	struct sched_slot	*sl;
	struct sched_decision	*d;
	u_int			 idle = free_seats(k), extra = 0, rest = 0, v;

	if (k->nburst != 0) {
		extra = idle / k->nburst;
		rest = idle % k->nburst;
	}
	TAILQ_FOREACH(sl, &k->slots, entry) {
		v = sl->job->req.seats;
		if (sl->job->req.flags & JOB_BURST) {
			v += extra;
			if (rest != 0) {
				v++;
				rest--;
			}
		}
		if (sl->told != -1) {
			out->v[sl->told].ceiling = v;
			sl->told = -1;
		} else if (v != sl->ceiling) {
			d = sched_emit(v < sl->ceiling &&
			    sl->ceiling != CEIL_UNSET ? low : out,
			    SCHED_CEILING, sl->job->req.id);
			d->card = c;
			d->seats = sl->job->req.seats;
			d->mem = sl->mem;
			d->ceiling = v;
		}
		sl->ceiling = v;
	}
}

/* Ends a call: ceilings of the cards that changed, lowered ones first. */
static void
finish(struct sched *s, struct sched_out *out, u_int start)
{
	struct sched_out	 low;
	uint64_t		 m = s->touched & s->all;
	u_int			 i;

	memset(&low, 0, sizeof low);
	s->touched = 0;
	for (; m != 0; m &= m - 1)
		card_ceilings(s, __builtin_ctzll(m), out, &low);
	if (low.n == 0)
		return;
	for (i = 0; i < low.n; i++)
		sched_emit(out, SCHED_CEILING, 0);
	memmove(&out->v[start + low.n], &out->v[start],
	    (out->n - low.n - start) * sizeof *out->v);
	memcpy(&out->v[start], low.v, low.n * sizeof *low.v);
	free(low.v);
}

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
		if (m != 0 && sched_fit(s, &k->shape, m, NULL) >=
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
		if (j->state != SCHED_QUEUED || sched_fit(s, &j->req,
		    j->class->elig & sched_avail(s, j), &f) < j->req.ncards)
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

/* Admits, in queue order, every waiting job that fits. */
static void
admit_fitting(struct sched *s, int64_t now, struct sched_out *out)
{
	struct sched_job	*j, *next;
	uint64_t		 fit, d;

	s->ncand = 0;
	d = s->dirty;
	s->dirty = 0;
	cand_scan(s, d);
	/* A job just (re)queued was never looked at on the other cards. */
	if (s->pcheck != NULL && s->pcheck->state == SCHED_QUEUED)
		cand_add(s, s->pcheck);
	while ((j = cand_pick(s, &fit)) != NULL) {
		next = TAILQ_NEXT(j, centry);
		admit(s, j, sched_place(s, &j->req, fit, j->cards), now, out);
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
		need = sched_need(s, r, c);
		ds = r->seats > free_seats(k) ?
		    (double)(r->seats - free_seats(k)) / SEATS_PER_CARD : 0;
		dm = need > free_mem(k) ?
		    (double)(need - free_mem(k)) / k->memory : 0;
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
	sched_hold(s, h, pick, SCHED_HOLD_DRAIN);
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
		sched_release(s, s->drain);
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
			sched_release(s, h);
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
				sched_hold(s, h, BIT(v->by_card),
				    SCHED_HOLD_CLAIM);
		}
	}
}

static void
pass(struct sched *s, int64_t now, struct sched_out *out)
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

/*
 * Makes a scheduler for n cards of the given memory (card i is index i).
 * Returns NULL with *cause if there are too many; sched_free() frees it.
 */
struct sched *
sched_create(const uint64_t *memory, u_int n, char **cause)
{
	struct sched	*s;
	u_int		 c;

	if (n > SCHED_CARDS_MAX) {
		xasprintf(cause, "%u cards; gmux schedules at most %u per host",
		    n, SCHED_CARDS_MAX);
		return (NULL);
	}
	s = xcalloc(1, sizeof *s);
	s->ncards = n;
	s->all = n == 64 ? ~0ULL : BIT(n) - 1;
	for (c = 0; c < n; c++) {
		s->card[c].memory = memory[c];
		TAILQ_INIT(&s->card[c].slots);
	}
	s->age = SCHED_AGE_MS;
	s->jhsize = 64;
	s->jhash = xcalloc(s->jhsize, sizeof *s->jhash);
	TAILQ_INIT(&s->timed);
	return (s);
}

void
sched_free(struct sched *s)
{
	struct sched_job	*j, *next;
	u_int			 i;

	if (s == NULL)
		return;
	for (i = 0; i < s->jhsize; i++) {
		for (j = s->jhash[i]; j != NULL; j = next) {
			next = j->hnext;
			free(j->slots);
			free(j);
		}
	}
	free(s->jhash);
	sched_queue_free(s);
	free(s->cand);
	free(s);
}

/* Sets the aging step (ms of waiting worth one priority level). */
void
sched_set_age(struct sched *s, int64_t age)
{
	struct sched_job	*j, **v;
	u_int			 i, n = 0;

	v = xreallocarray(NULL, s->njobs + 1, sizeof *v);
	for (i = 0; i < s->jhsize; i++) {
		for (j = s->jhash[i]; j != NULL; j = j->hnext) {
			if (j->state == SCHED_QUEUED) {
				sched_queue_remove(s, j);
				v[n++] = j;
			}
		}
	}
	s->age = age > 0 ? age : 1;
	for (i = 0; i < n; i++) {
		v[i]->key = v[i]->req.submit - (int64_t)v[i]->req.prio * s->age;
		sched_queue_insert(s, v[i]);
	}
	free(v);
	s->dirty = s->pdirty = s->all;
}

/* Checks what no daemon should ever pass; NULL if r is well formed. */
static char *
req_check(const struct sched *s, const struct sched_req *r)
{
	char	*why = NULL;

	if (r->id == 0)
		xasprintf(&why, "job id 0 is not valid");
	else if (sched_find(s, r->id) != NULL)
		xasprintf(&why, "j%u is already scheduled", r->id);
	else if (r->seats > SEATS_PER_CARD)
		xasprintf(&why, "share above 1 (%u seats)", r->seats);
	else if (r->prio >= SCHED_PRIOS)
		xasprintf(&why, "priority %u: must be from 0 to 9", r->prio);
	else if (r->seats != 0 && r->ncards == 0)
		xasprintf(&why, "a job with a share needs at least one card");
	else if (r->seats == 0 && r->mem != 0)
		xasprintf(&why, "a job with share 0 has no card and no memory");
	return (why);
}

/*
 * A new job: admitted if it fits now in room nobody holds, else queued (or
 * refused with --no-wait), or refused if no card could ever hold it.
 * Returns 0, or -1 if it was refused.
 */
int
sched_submit(struct sched *s, const struct sched_req *r, int64_t now,
    struct sched_out *out)
{
	struct sched_job	*j;
	struct sched_decision	*d;
	char			*why, *need;
	uint64_t		 fit, elig;
	u_int			 start = out->n;

	if ((why = req_check(s, r)) != NULL || (r->seats != 0 &&
	    (why = sched_explain_impossible(s, r)) != NULL)) {
		refuse(out, r->id, why);
		return (-1);
	}
	elig = sched_eligible(s, r);
	if (r->seats != 0 && sched_fit(s, r, elig & ~s->held & s->all,
	    &fit) < r->ncards) {
		if (r->flags & JOB_NOWAIT) {
			need = sched_explain_need(s, r, ~s->held & s->all);
			xasprintf(&why, "no room now for %s (--no-wait)", need);
			free(need);
			refuse(out, r->id, why);
			return (-1);
		}
		j = sjob_new(s, r);
		enqueue(s, j);
		s->pcheck = j;
		pass(s, now, out);
		if (j->state == SCHED_QUEUED) {
			d = sched_emit(out, SCHED_QUEUE, j->req.id);
			d->pos = sched_queue_position(s, j);
			d->reason = sched_explain_reason(s, j);
		}
	} else {
		j = sjob_new(s, r);
		admit(s, j, r->seats == 0 ? 0 : sched_place(s, r, fit, 0),
		    now, out);
		pass(s, now, out);
	}
	finish(s, out, start);
	return (0);
}

/*
 * A job is gone: it ended or was stopped (running), or was cancelled
 * (queued).  A preemption victim that asked for --requeue waits again
 * (returns 1).  Returns -1 for an unknown id.
 */
int
sched_end(struct sched *s, u_int id, int64_t now, struct sched_out *out)
{
	struct sched_job	*j;
	struct sched_decision	*d;
	u_int			 start = out->n;
	int			 requeued = 0;

	if ((j = sched_find(s, id)) == NULL)
		return (-1);
	if (j->state == SCHED_QUEUED) {
		dequeue(s, j);
		sjob_free(s, j);
	} else {
		if (j->cards != 0)
			slots_remove(s, j);
		if (j->claimant != NULL) {
			j->claimant->nvictims--;
			j->claimant = NULL;
		}
		if (j->by != 0 && (j->req.flags & JOB_REQUEUE)) {
			j->by = 0;
			j->by_card = -1;
			j->req.submit = now;
			enqueue(s, j);
			s->pcheck = j;
			d = sched_emit(out, SCHED_REQUEUE, id);
			d->pos = sched_queue_position(s, j);
			requeued = 1;
		} else
			sjob_free(s, j);
	}
	pass(s, now, out);
	finish(s, out, start);
	return (requeued);
}

/* Says why card c cannot give j what growing to seats/mem takes. */
static char *
grow_check(const struct sched *s, const struct sched_job *j,
    const struct sched_slot *sl, u_int seats, uint64_t mem)
{
	const struct sched_card	*k = &s->card[sl->card];
	char			*why = NULL, *a = NULL, *b = NULL, *c = NULL;

	if (seats <= j->req.seats && mem <= sl->mem)
		return (NULL);
	if (mem > k->memory) {
		a = format_size(mem);
		b = format_size(k->memory);
		xasprintf(&why, "cannot grow to %s of memory: card %u has %s",
		    a, sl->card, b);
	} else if (j->by != 0)
		xasprintf(&why, "cannot grow j%u: it is being preempted",
		    j->req.id);
	else if (k->holder != NULL)
		xasprintf(&why, "cannot grow on card %u: it is held for j%u, "
		    "%s", sl->card, k->holder->req.id,
		    k->holder->hold == SCHED_HOLD_DRAIN ?
		    "first in the queue" : "which preempted jobs there");
	else if (seats > j->req.seats && seats - j->req.seats > free_seats(k)) {
		a = format_share(seats);
		b = format_share(free_seats(k));
		c = format_share(seats - j->req.seats);
		xasprintf(&why, "cannot grow to %s: card %u has %s free, "
		    "%s more is needed", a, sl->card, b, c);
	} else if (mem > sl->mem && mem - sl->mem > free_mem(k)) {
		a = format_size(mem);
		b = format_size(free_mem(k));
		c = format_size(mem - sl->mem);
		xasprintf(&why, "cannot grow to %s of memory: card %u has %s "
		    "free, %s more is needed", a, sl->card, b, c);
	}
	free(a);
	free(b);
	free(c);
	return (why);
}

/* Resizing a waiting job changes what it waits for, not its place. */
static int
resize_queued(struct sched *s, struct sched_job *j, u_int seats,
    uint64_t mem, int64_t now, struct sched_out *out, char **cause)
{
	struct sched_req	 r = j->req;
	struct sched_decision	*d;
	char			*why;

	r.seats = seats;
	if (mem != 0)
		r.mem = mem;
	if ((why = sched_explain_impossible(s, &r)) != NULL) {
		*cause = why;
		return (-1);
	}
	dequeue(s, j);
	j->req = r;
	enqueue(s, j);
	s->pcheck = j;
	pass(s, now, out);
	if (j->state == SCHED_QUEUED) {
		d = sched_emit(out, SCHED_QUEUE, j->req.id);
		d->pos = sched_queue_position(s, j);
		d->reason = sched_explain_reason(s, j);
	}
	return (0);
}

/*
 * Changes a job's share (seats per card) and, if mem is not 0, its memory
 * cap (else a default cap follows the share and an explicit one stays).
 * Growing must fit now; shrinking always works.  Returns -1 with *cause if
 * refused (nothing changed).
 */
int
sched_resize(struct sched *s, u_int id, u_int seats, uint64_t mem,
    int64_t now, struct sched_out *out, char **cause)
{
	struct sched_job	*j;
	struct sched_req	 r;
	struct sched_slot	*sl;
	struct sched_decision	*d;
	u_int			 i, n, start = out->n;
	int			 rc = 0;

	if ((j = sched_find(s, id)) == NULL) {
		xasprintf(cause, "j%u is not scheduled", id);
		return (-1);
	}
	if (j->req.seats == 0 || seats == 0 || seats > SEATS_PER_CARD) {
		xasprintf(cause, j->req.seats == 0 ? "j%u has no card to "
		    "resize on" : "share: must be from 0.01 to 1", id);
		return (-1);
	}
	if (j->state == SCHED_QUEUED) {
		rc = resize_queued(s, j, seats, mem, now, out, cause);
		finish(s, out, start);
		return (rc);
	}
	r = j->req;
	r.seats = seats;
	if (mem != 0)
		r.mem = mem;
	n = __builtin_popcountll(j->cards);
	for (i = 0; i < n; i++) {
		sl = &j->slots[i];
		if ((*cause = grow_check(s, j, sl, seats,
		    sched_need(s, &r, sl->card))) != NULL)
			return (-1);
	}
	sched_preempt_pool(s, j, 0);
	for (i = 0; i < n; i++) {
		sl = &j->slots[i];
		s->card[sl->card].used += seats;
		s->card[sl->card].used -= j->req.seats;
		s->card[sl->card].mem_used -= sl->mem;
		sl->mem = sched_need(s, &r, sl->card);
		s->card[sl->card].mem_used += sl->mem;
		d = sched_emit(out, SCHED_RESIZE, id);
		d->card = sl->card;
		d->seats = seats;
		d->mem = sl->mem;
		sl->told = out->n - 1;
	}
	j->req = r;
	sched_preempt_pool(s, j, 1);
	s->touched |= j->cards;
	s->dirty |= j->cards;
	s->pdirty |= j->cards;
	pass(s, now, out);
	finish(s, out, start);
	return (0);
}

/* Refuses the queued jobs that have waited longer than they allowed. */
void
sched_tick(struct sched *s, int64_t now, struct sched_out *out)
{
	struct sched_job	*j, *next;
	char			*why, *t;
	u_int			 start = out->n;
	int			 any = 0;

	for (j = TAILQ_FIRST(&s->timed); j != NULL; j = next) {
		next = TAILQ_NEXT(j, tentry);
		if (now - j->req.submit < j->req.timeout)
			continue;
		t = format_age(j->req.timeout);
		xasprintf(&why, "did not start within %s (--timeout)", t);
		free(t);
		refuse(out, j->req.id, why);
		dequeue(s, j);
		sjob_free(s, j);
		any = 1;
	}
	if (any)
		pass(s, now, out);
	finish(s, out, start);
}

/*
 * Puts back a job after a restart: queued (run NULL, keeping its submit
 * time and so its place) or running where run says.  Returns -1 with
 * *cause if it cannot be (its cards are gone or would be overfilled).
 * Call sched_pass() once all are back.
 */
int
sched_restore(struct sched *s, const struct sched_req *r,
    const struct sched_run *run, char **cause)
{
	struct sched_job	*j;
	uint64_t		 m;
	u_int			 c;

	if ((*cause = req_check(s, r)) != NULL)
		return (-1);
	if (run == NULL || r->seats == 0) {
		if (r->seats != 0 &&
		    (*cause = sched_explain_impossible(s, r)) != NULL)
			return (-1);
		j = sjob_new(s, r);
		if (run == NULL)
			enqueue(s, j);
		else {
			j->state = SCHED_RUNNING;
			j->start = run->start;
		}
		return (0);
	}
	if ((run->cards & ~s->all) != 0 ||
	    (u_int)__builtin_popcountll(run->cards) != r->ncards ||
	    (r->pin >= 0 && run->cards != BIT(r->pin))) {
		xasprintf(cause, "j%u: its cards do not match its request",
		    r->id);
		return (-1);
	}
	for (m = run->cards; m != 0; m &= m - 1) {
		c = __builtin_ctzll(m);
		if (free_seats(&s->card[c]) < r->seats ||
		    free_mem(&s->card[c]) < sched_need(s, r, c)) {
			xasprintf(cause, "j%u would overfill card %u", r->id,
			    c);
			return (-1);
		}
	}
	j = sjob_new(s, r);
	j->cards = run->cards;
	j->start = run->start;
	if (run->by != 0) {
		j->by = run->by;
		j->by_card = run->by_card;
	}
	slots_add(s, j);
	s->dirty = s->pdirty = s->touched = s->all;
	s->restored = 1;
	return (0);
}

/* A pass on its own: after restoring, admits what fits and tells all. */
void
sched_pass(struct sched *s, int64_t now, struct sched_out *out)
{
	u_int	 start = out->n;

	pass(s, now, out);
	finish(s, out, start);
}

/* Calls cb for every job, with what a restore needs to put it back. */
void
sched_walk(const struct sched *s, sched_walk_cb cb, void *arg)
{
	const struct sched_job	*j;
	struct sched_run	 run;
	u_int			 i;

	for (i = 0; i < s->jhsize; i++) {
		for (j = s->jhash[i]; j != NULL; j = j->hnext) {
			if (j->state == SCHED_QUEUED) {
				cb(&j->req, NULL, arg);
				continue;
			}
			run.cards = j->cards;
			run.start = j->start;
			run.by = j->by;
			run.by_card = j->by_card;
			cb(&j->req, &run, arg);
		}
	}
}

/* Fills *info for job id; returns -1 if the scheduler does not know it. */
int
sched_info(const struct sched *s, u_int id, struct sched_info *info)
{
	const struct sched_job	*j;

	if ((j = sched_find(s, id)) == NULL)
		return (-1);
	memset(info, 0, sizeof *info);
	info->state = j->state;
	info->cards = j->cards;
	info->hold = j->hold;
	info->by = j->by;
	info->seats = j->req.seats;
	info->start = j->start;
	if (j->state == SCHED_QUEUED)
		info->pos = sched_queue_position(s, j);
	return (0);
}

/* The id of the queued job card c is held for, 0 if none. */
u_int
sched_holder(const struct sched *s, u_int c)
{
	if (c >= s->ncards || s->card[c].holder == NULL)
		return (0);
	return (s->card[c].holder->req.id);
}

/* A running job's ceiling on card c, in seats; 0 if not there. */
u_int
sched_ceiling(const struct sched *s, u_int id, u_int c)
{
	const struct sched_job	*j = sched_find(s, id);
	u_int			 i, n;

	if (j == NULL || j->state != SCHED_RUNNING)
		return (0);
	n = __builtin_popcountll(j->cards);
	for (i = 0; i < n; i++) {
		if (j->slots[i].card == c)
			return (j->slots[i].ceiling);
	}
	return (0);
}
