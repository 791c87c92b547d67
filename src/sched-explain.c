/*
 * sched-explain.c: the scheduler's reasons in words: why a request can
 * never run, what a waiting job waits for, and `gmux explain'.  The exact
 * wording is documented in docs/scheduling.md; tests compare it.
 */

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "sched-int.h"

#define BIT(c)		(1ULL << (c))

static u_int
popcount(uint64_t m)
{
	return (__builtin_popcountll(m));
}

/* "card 1" or "cards 0, 2"; allocated. */
static char *
explain_cards(uint64_t m)
{
	char	*s, *t;
	u_int	 c;

	if (popcount(m) == 1) {
		xasprintf(&s, "card %u", (u_int)__builtin_ctzll(m));
		return (s);
	}
	s = xstrdup("cards");
	for (; m != 0; m &= m - 1) {
		c = __builtin_ctzll(m);
		xasprintf(&t, "%s%s %u", s, s[5] == '\0' ? "" : ",", c);
		free(s);
		s = t;
	}
	return (s);
}

static uint64_t
explain_largest(const struct sched *s)
{
	uint64_t	 big = 0;
	u_int		 c;

	for (c = 0; c < s->ncards; c++) {
		if (s->card[c].memory > big)
			big = s->card[c].memory;
	}
	return (big);
}

/*
 * Why no card of this host could ever hold r; NULL if one could.  The
 * result is allocated.
 */
char *
sched_explain_impossible(const struct sched *s, const struct sched_req *r)
{
	char		*why = NULL, *need, *have;
	uint64_t	 elig;
	u_int		 n = s->ncards, c;

	if (n == 0)
		xasprintf(&why, "needs a card; this host has none");
	else if (r->pin >= 0 && (u_int)r->pin >= n)
		xasprintf(&why, "needs card %d; this host has %u card%s",
		    r->pin, n, n == 1 ? "" : "s");
	else if (r->pin >= 0 && r->ncards > 1)
		xasprintf(&why, "asks for %u cards but is pinned to card %d",
		    r->ncards, r->pin);
	else if (r->ncards > n)
		xasprintf(&why, "needs %u cards; this host has %u", r->ncards,
		    n);
	else if (r->seats > SEATS_PER_CARD)
		xasprintf(&why, "needs more than one card's compute");
	if (why != NULL)
		return (why);
	elig = sched_card_eligible(s, r);
	if (popcount(elig) >= r->ncards)
		return (NULL);
	need = format_size(r->mem);
	if (r->pin >= 0) {
		have = format_size(s->card[r->pin].memory);
		xasprintf(&why, "needs %s of memory; card %d has %s", need,
		    r->pin, have);
	} else if (r->ncards == 1) {
		have = format_size(explain_largest(s));
		xasprintf(&why, "needs %s of memory; the largest card has %s",
		    need, have);
	} else {
		have = NULL;
		c = popcount(elig);
		xasprintf(&why, "needs %u cards with %s of memory; this host "
		    "has %u", r->ncards, need, c);
	}
	free(need);
	free(have);
	return (why);
}

/* The memory r needs, in words, for cards m: "40G" or "0.5 of a card's". */
static char *
explain_mem(const struct sched *s, const struct sched_req *r, uint64_t m,
    int *mixed)
{
	uint64_t	 mem = 0;
	u_int		 c;

	*mixed = 0;
	if (r->mem != 0)
		return (format_size(r->mem));
	for (; m != 0; m &= m - 1) {
		c = __builtin_ctzll(m);
		if (mem != 0 && sched_card_need(s, r, c) != mem)
			*mixed = 1;
		mem = sched_card_need(s, r, c);
	}
	return (format_size(mem));
}

/*
 * What r waits for among the cards in avail, in words: "0.5 of a card",
 * "40G of memory on one card", "0.5 of a card with 40G of memory", "2
 * cards with 0.5 free each"...  Allocated.
 */
char *
sched_explain_need(const struct sched *s, const struct sched_req *r,
    uint64_t avail)
{
	const struct sched_card	*k;
	uint64_t		 elig = sched_card_eligible(s, r), m;
	char			*out, *share, *mem, where[32];
	u_int			 c, nseat = 0, nmem = 0, n = r->ncards;
	int			 seat_short, mem_short, mixed;

	for (m = elig & avail; m != 0; m &= m - 1) {
		c = __builtin_ctzll(m);
		k = &s->card[c];
		nseat += SEATS_PER_CARD - k->used >= r->seats;
		nmem += k->memory - k->mem_used >= sched_card_need(s, r, c);
	}
	seat_short = nseat < n;
	mem_short = nmem < n;
	share = format_share(r->seats);
	mem = explain_mem(s, r, elig, &mixed);
	if (r->pin >= 0)
		snprintf(where, sizeof where, "card %d", r->pin);
	else
		snprintf(where, sizeof where, "a card");
	/* A default cap follows the share: short of seats says it all. */
	if (r->mem == 0 && seat_short)
		mem_short = 0;
	if (n > 1) {
		if (seat_short && !mem_short)
			xasprintf(&out, "%u cards with %s free each", n, share);
		else if (mixed)
			xasprintf(&out, "%u cards with %s of their memory free "
			    "each", n, share);
		else if (!seat_short)
			xasprintf(&out, "%u cards with %s of memory free each",
			    n, mem);
		else
			xasprintf(&out, "%u cards with %s and %s of memory "
			    "free each", n, share, mem);
	} else if (seat_short && !mem_short)
		xasprintf(&out, "%s of %s", share, where);
	else if (!seat_short && mixed)
		xasprintf(&out, "%s of a card's memory", share);
	else if (!seat_short)
		xasprintf(&out, "%s of memory on %s", mem,
		    r->pin >= 0 ? where : "one card");
	else
		xasprintf(&out, "%s of %s with %s of memory", share, where,
		    mem);
	free(share);
	free(mem);
	return (out);
}

/* "j3 and j4", "j3, j4 and j5", "j3, j4, j5 and 2 more"; allocated. */
static char *
explain_names(const u_int *ids, u_int n)
{
	char	*s = NULL, *t;
	u_int	 i, show = n > 4 ? 3 : n;

	for (i = 0; i < show; i++) {
		if (s == NULL)
			xasprintf(&t, "j%u", ids[i]);
		else if (i == n - 1)
			xasprintf(&t, "%s and j%u", s, ids[i]);
		else
			xasprintf(&t, "%s, j%u", s, ids[i]);
		free(s);
		s = t;
	}
	if (show < n) {
		xasprintf(&t, "%s and %u more", s, n - show);
		free(s);
		s = t;
	}
	return (s);
}

/* The victims still being preempted for claimant j; returns how many. */
static u_int
explain_victims(const struct sched *s, const struct sched_job *j,
    u_int *ids, u_int max, uint64_t *cards)
{
	const struct sched_slot	*sl;
	uint64_t		 m;
	u_int			 n = 0, c;

	*cards = 0;
	for (m = j->cards; m != 0; m &= m - 1) {
		c = __builtin_ctzll(m);
		TAILQ_FOREACH(sl, &s->card[c].slots, entry) {
			if (sl->job->claimant != j ||
			    (u_int)__builtin_ctzll(sl->job->cards) != c)
				continue;
			*cards |= BIT(sl->job->by_card);
			if (n < max)
				ids[n++] = sl->job->req.id;
		}
	}
	return (n);
}

/*
 * What a queued job waits for, one line: "waiting for 0.5 of a card",
 * with what holds it back in brackets.  Allocated.
 */
char *
sched_explain_reason(const struct sched *s, const struct sched_job *j)
{
	const struct sched_req	*r = &j->req;
	char			*out, *need, *cards, *who;
	uint64_t		 fit, vcards, elig = j->class->elig;
	u_int			 ids[SEATS_PER_CARD], n;

	if (j->hold == SCHED_HOLD_CLAIM &&
	    (n = explain_victims(s, j, ids, nitems(ids), &vcards)) != 0) {
		who = explain_names(ids, n);
		cards = explain_cards(vcards);
		xasprintf(&out, "waiting for %s to leave %s (preempted for it)",
		    who, cards);
		free(who);
		free(cards);
		return (out);
	}
	need = sched_explain_need(s, r, sched_card_avail(s, j));
	if (j->hold == SCHED_HOLD_DRAIN) {
		cards = explain_cards(j->cards);
		xasprintf(&out, "waiting for %s (first in the queue; %s kept "
		    "for it)", need, cards);
		free(cards);
	} else if (sched_card_fit(s, r, elig & s->held, &fit) > 0 &&
	    sched_card_fit(s, r, elig & s->all, NULL) >= r->ncards) {
		n = __builtin_ctzll(fit);
		xasprintf(&out, "waiting for %s (card %u is held for j%u)",
		    need, n, s->card[n].holder->req.id);
	} else
		xasprintf(&out, "waiting for %s", need);
	free(need);
	return (out);
}

/* One line per card: what it has free, and what that means for r. */
static void
explain_card_lines(const struct sched *s, const struct sched_job *j,
    const struct sched_req *r, char **text)
{
	const struct sched_card	*k;
	uint64_t		 elig = sched_card_eligible(s, r);
	char			*t, *share, *mem, *total, *why;
	u_int			 c;

	for (c = 0; c < s->ncards; c++) {
		k = &s->card[c];
		share = format_share(SEATS_PER_CARD - k->used);
		mem = format_size(k->memory - k->mem_used);
		total = format_size(k->memory);
		if (r->pin >= 0 && (u_int)r->pin != c)
			why = xstrdup("not its pinned card");
		else if (!(elig & BIT(c)))
			why = xstrdup("too small for it");
		else if (k->holder != NULL && j != NULL && k->holder == j)
			why = xstrdup(j->hold == SCHED_HOLD_DRAIN ?
			    "kept for it" : "being cleared for it");
		else if (k->holder != NULL)
			xasprintf(&why, "held for j%u", k->holder->req.id);
		else if (sched_card_fit(s, r, BIT(c), NULL) == 1)
			why = xstrdup("it fits");
		else
			why = xstrdup("it does not fit");
		xasprintf(&t, "%s  card %u: %s free, %s of %s memory free; "
		    "%s\n", *text, c, share, mem, total, why);
		free(*text);
		*text = t;
		free(share);
		free(mem);
		free(total);
		free(why);
	}
}

/* "0.5 of 2 cards, 40G each, priority 3, burst, preemptible"; allocated. */
static char *
explain_asks(const struct sched_req *r)
{
	char	*t, *share, *mem;

	share = format_share(r->seats);
	mem = r->mem != 0 ? format_size(r->mem) : xstrdup("its share of");
	xasprintf(&t, "%s of %u card%s%s, %s memory%s, priority %u%s%s%s",
	    share, r->ncards, r->ncards == 1 ? "" : "s", r->pin >= 0 ?
	    " (pinned)" : "", mem, r->ncards > 1 ? " on each" : "", r->prio,
	    r->flags & JOB_BURST ? ", burst" : "",
	    r->flags & JOB_PREEMPTIBLE ? ", preemptible" : "",
	    r->flags & JOB_REQUEUE ? ", requeue" : "");
	free(share);
	free(mem);
	return (t);
}

static char *
explain_running(const struct sched *s, const struct sched_job *j,
    int64_t now)
{
	const struct sched_slot	*sl;
	char			*text, *t, *age, *cards, *a, *b, *c;
	u_int			 i, n = popcount(j->cards);

	age = format_age(now - j->start);
	cards = j->cards != 0 ? explain_cards(j->cards) : xstrdup("no card");
	xasprintf(&text, "j%u is running on %s (for %s)\n", j->req.id, cards,
	    age);
	free(age);
	free(cards);
	for (i = 0; i < n; i++) {
		sl = &j->slots[i];
		a = format_share(j->req.seats);
		b = format_share(sl->ceiling == UINT_MAX ? j->req.seats :
		    sl->ceiling);
		c = format_size(sl->mem);
		xasprintf(&t, "%s  card %u: %s guaranteed, up to %s, %s of "
		    "memory\n", text, sl->card, a, b, c);
		free(text);
		text = t;
		free(a);
		free(b);
		free(c);
	}
	if (j->by != 0) {
		xasprintf(&t, "%s  being preempted for j%u\n", text, j->by);
		free(text);
		text = t;
	}
	return (text);
}

/* Aging in words: its effective priority and when it passes new work. */
static char *
explain_aging(const struct sched *s, const struct sched_job *j, int64_t now)
{
	char	*t, *a, *b;
	int64_t	 waited = now - j->req.submit, left;

	if (waited < 0)
		waited = 0;
	left = (int64_t)(SCHED_PRIOS - 1 - j->req.prio) * s->age - waited;
	a = format_age(waited);
	if (left > 0) {
		b = format_age(left);
		xasprintf(&t, "  priority %u, effective %.1f after %s of "
		    "waiting; ahead of all new work in %s\n", j->req.prio,
		    j->req.prio + (double)waited / s->age, a, b);
		free(b);
	} else
		xasprintf(&t, "  priority %u, effective %.1f after %s of "
		    "waiting; no new work can pass it\n", j->req.prio,
		    j->req.prio + (double)waited / s->age, a);
	free(a);
	return (t);
}

static char *
explain_queued(const struct sched *s, const struct sched_job *j, int64_t now)
{
	char	*text, *t, *reason, *asks, *aging, *who;
	u_int	 ids[5], n, pos = sched_queue_position(s, j);

	reason = sched_explain_reason(s, j);
	asks = explain_asks(&j->req);
	aging = explain_aging(s, j, now);
	xasprintf(&text, "j%u is queued at position %u of %u, %s\n  asks for "
	    "%s\n%s", j->req.id, pos, sched_queue_count(s), reason, asks,
	    aging);
	free(reason);
	free(asks);
	free(aging);
	explain_card_lines(s, j, &j->req, &text);
	if (pos > 1) {
		n = sched_queue_list(s, ids, pos - 1 < 5 ? pos - 1 : 5);
		who = explain_names(ids, n);
		xasprintf(&t, "%s  ahead of it: %s%s\n", text, who,
		    pos - 1 > n ? " and more" : "");
		free(who);
		free(text);
		text = t;
	}
	return (text);
}

/*
 * `gmux explain': for job id, where it runs, or why it waits (what it
 * asks, its place, each card's room, who is ahead).  Allocated; NULL if
 * the scheduler does not know id.
 */
char *
sched_explain(const struct sched *s, u_int id, int64_t now)
{
	const struct sched_job	*j;

	if ((j = sched_find(s, id)) == NULL)
		return (NULL);
	if (j->state == SCHED_RUNNING)
		return (explain_running(s, j, now));
	return (explain_queued(s, j, now));
}

/*
 * What would happen to request r if it came now: refused (why), started
 * (where) or queued (at which place, waiting for what).  Allocated.
 */
char *
sched_explain_req(const struct sched *s, const struct sched_req *r,
    int64_t now)
{
	struct sched_job	 probe;
	char			*text, *why, *t;
	uint64_t		 fit, avail = ~s->held & s->all;

	if (r->seats == 0)
		return (xstrdup("would start now (no card)\n"));
	if ((why = sched_explain_impossible(s, r)) != NULL) {
		xasprintf(&text, "would be refused: %s\n", why);
		free(why);
		return (text);
	}
	if (sched_card_fit(s, r, sched_card_eligible(s, r) & avail, &fit) >=
	    r->ncards) {
		t = explain_cards(sched_card_place(s, r, fit, 0));
		xasprintf(&text, "would start now on %s\n", t);
		free(t);
		return (text);
	}
	why = sched_explain_need(s, r, avail);
	if (r->flags & JOB_NOWAIT) {
		xasprintf(&text, "would be refused: no room now for %s "
		    "(--no-wait)\n", why);
		free(why);
		return (text);
	}
	memset(&probe, 0, sizeof probe);
	probe.req = *r;
	probe.req.submit = now;
	probe.req.id = UINT_MAX;
	probe.key = now - (int64_t)r->prio * s->age;
	xasprintf(&text, "would wait at position %u, waiting for %s\n",
	    sched_queue_position(s, &probe), why);
	free(why);
	explain_card_lines(s, NULL, r, &text);
	return (text);
}
