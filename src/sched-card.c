/*
 * sched-card.c: the room on each card: what a request needs there, where
 * it fits, which card it goes to, the cards held for queued jobs, running
 * jobs on their cards, and compute ceilings (a --burst job's guarantee plus
 * its part of the card's idle seats).
 */

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "sched-int.h"

#define BIT(c)		(1ULL << (c))
#define CEIL_UNSET	UINT_MAX

u_int
sched_card_free_seats(const struct sched_card *k)
{
	return (SEATS_PER_CARD - k->used);
}

uint64_t
sched_card_free_mem(const struct sched_card *k)
{
	return (k->memory - k->mem_used);
}

/* The memory r needs on card c: its cap, or its share of the card's. */
uint64_t
sched_card_need(const struct sched *s, const struct sched_req *r, u_int c)
{
	if (r->mem != 0)
		return (r->mem);
	return ((uint64_t)r->seats * s->card[c].memory / SEATS_PER_CARD);
}

/* The cards that could ever hold r (empty, and its pin if any). */
uint64_t
sched_card_eligible(const struct sched *s, const struct sched_req *r)
{
	uint64_t	 m = 0;
	u_int		 c;

	if (r->seats > SEATS_PER_CARD)
		return (0);
	for (c = 0; c < s->ncards; c++) {
		if (r->pin >= 0 && (u_int)r->pin != c)
			continue;
		if (sched_card_need(s, r, c) <= s->card[c].memory)
			m |= BIT(c);
	}
	return (m);
}

/*
 * Counts the cards among `cards' (and r's pin) where r fits now; *fit gets
 * them if not NULL.  This is the admission test: seats and memory.
 */
u_int
sched_card_fit(const struct sched *s, const struct sched_req *r, uint64_t cards,
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
		if (sched_card_free_seats(k) >= r->seats &&
		    sched_card_free_mem(k) >= sched_card_need(s, r, c)) {
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

	if (sched_card_free_seats(kc) != sched_card_free_seats(kb))
		return (sched_card_free_seats(kc) < sched_card_free_seats(kb));
	mc = sched_card_free_mem(kc) - sched_card_need(s, r, c);
	mb = sched_card_free_mem(kb) - sched_card_need(s, r, b);
	return (mc < mb);
}

/*
 * Chooses n of the cards in fit for r: those in prefer first (cards held
 * for it), then the fullest (best fit keeps whole cards free for whole-card
 * jobs), then the lowest index.  Returns 0 if fit has fewer than n.
 */
uint64_t
sched_card_place(const struct sched *s, const struct sched_req *r, uint64_t fit,
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
sched_card_avail(const struct sched *s, const struct sched_job *j)
{
	uint64_t	 own = j->hold != SCHED_HOLD_NONE ? j->cards : 0;

	return ((~s->held | own) & s->all);
}

/* Holds cards for a queued job (adding to what it holds already). */
void
sched_card_hold(struct sched *s, struct sched_job *j, uint64_t cards,
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
sched_card_release(struct sched *s, struct sched_job *j)
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

/* Puts a running job on its cards (j->cards), in start order. */
void
sched_card_add(struct sched *s, struct sched_job *j)
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
		sl->mem = sched_card_need(s, &j->req, c);
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

/* Takes a running job off its cards (they gain room). */
void
sched_card_remove(struct sched *s, struct sched_job *j)
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
	u_int			 idle = sched_card_free_seats(k), v;
	u_int			 extra = 0, rest = 0;

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

/*
 * Ends a call that began at out->v[start]: the ceilings of the cards that
 * changed, lowered ones first (before the ADMIT that needs the room).
 */
void
sched_card_ceilings(struct sched *s, struct sched_out *out, u_int start)
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
