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
 * Questions, which change nothing: sched_walk() (every job as a restore
 * needs it: what to persist), sched_info() (state, cards, place, holds),
 * sched_queue_list() (the queue in order, for `gmux ps'),
 * sched_explain_reason() (the one-line reason), sched_explain() (`gmux
 * explain'), sched_explain_req() (where a request would go),
 * sched_holder(), sched_ceiling().
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
#include "sched-int.h"

#define BIT(c)		(1ULL << (c))

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

/*
 * Queues j (new, or resized while waiting), then a pass: it may start at
 * once if room changed hands; else tells where it waits and why.
 */
static void
queue_wait(struct sched *s, struct sched_job *j, int64_t now,
    struct sched_out *out)
{
	struct sched_decision	*d;

	sched_queue_enter(s, j);
	s->pcheck = j;
	sched_pass_run(s, now, out);
	if (j->state == SCHED_QUEUED) {
		d = sched_emit(out, SCHED_QUEUE, j->req.id);
		d->pos = sched_queue_position(s, j);
		d->reason = sched_explain_reason(s, j);
	}
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
 * Why r would be refused if it came now: malformed, no card could ever
 * hold it, or no room now with --no-wait.  NULL if it would run or wait.
 * Pure: what sched_submit would refuse, asked ahead (allocated).
 */
char *
sched_refusal(const struct sched *s, const struct sched_req *r)
{
	char		*why, *need;
	uint64_t	 fit;

	if ((why = req_check(s, r)) != NULL || r->seats == 0 ||
	    (why = sched_explain_impossible(s, r)) != NULL)
		return (why);
	if ((r->flags & JOB_NOWAIT) && sched_card_fit(s, r,
	    sched_card_eligible(s, r) & ~s->held & s->all, &fit) < r->ncards) {
		need = sched_explain_need(s, r, ~s->held & s->all);
		xasprintf(&why, "no room now for %s (--no-wait)", need);
		free(need);
	}
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
	char			*why;
	uint64_t		 fit, elig;
	u_int			 start = out->n;

	if ((why = sched_refusal(s, r)) != NULL) {
		refuse(out, r->id, why);
		return (-1);
	}
	elig = sched_card_eligible(s, r);
	if (r->seats != 0 && sched_card_fit(s, r, elig & ~s->held & s->all,
	    &fit) < r->ncards) {
		queue_wait(s, sjob_new(s, r), now, out);
	} else {
		j = sjob_new(s, r);
		sched_pass_admit(s, j, r->seats == 0 ? 0 :
		    sched_card_place(s, r, fit, 0), now, out);
		sched_pass_run(s, now, out);
	}
	sched_card_ceilings(s, out, start);
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
		sched_queue_leave(s, j);
		sjob_free(s, j);
	} else {
		if (j->cards != 0)
			sched_card_remove(s, j);
		if (j->claimant != NULL) {
			j->claimant->nvictims--;
			j->claimant = NULL;
		}
		if (j->by != 0 && (j->req.flags & JOB_REQUEUE)) {
			j->by = 0;
			j->by_card = -1;
			j->req.submit = now;
			sched_queue_enter(s, j);
			s->pcheck = j;
			d = sched_emit(out, SCHED_REQUEUE, id);
			d->pos = sched_queue_position(s, j);
			requeued = 1;
		} else
			sjob_free(s, j);
	}
	sched_pass_run(s, now, out);
	sched_card_ceilings(s, out, start);
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
	else if (seats > j->req.seats &&
	    seats - j->req.seats > sched_card_free_seats(k)) {
		a = format_share(seats);
		b = format_share(sched_card_free_seats(k));
		c = format_share(seats - j->req.seats);
		xasprintf(&why, "cannot grow to %s: card %u has %s free, "
		    "%s more is needed", a, sl->card, b, c);
	} else if (mem > sl->mem && mem - sl->mem > sched_card_free_mem(k)) {
		a = format_size(mem);
		b = format_size(sched_card_free_mem(k));
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
	char			*why;

	r.seats = seats;
	if (mem != 0)
		r.mem = mem;
	if ((why = sched_explain_impossible(s, &r)) != NULL) {
		*cause = why;
		return (-1);
	}
	sched_queue_leave(s, j);
	j->req = r;
	queue_wait(s, j, now, out);
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
		sched_card_ceilings(s, out, start);
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
		    sched_card_need(s, &r, sl->card))) != NULL)
			return (-1);
	}
	sched_preempt_pool(s, j, 0);
	for (i = 0; i < n; i++) {
		sl = &j->slots[i];
		s->card[sl->card].used += seats;
		s->card[sl->card].used -= j->req.seats;
		s->card[sl->card].mem_used -= sl->mem;
		sl->mem = sched_card_need(s, &r, sl->card);
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
	sched_pass_run(s, now, out);
	sched_card_ceilings(s, out, start);
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
		t = format_duration(j->req.timeout);
		xasprintf(&why, "did not start within %s (--timeout)", t);
		free(t);
		refuse(out, j->req.id, why);
		sched_queue_leave(s, j);
		sjob_free(s, j);
		any = 1;
	}
	if (any)
		sched_pass_run(s, now, out);
	sched_card_ceilings(s, out, start);
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
			sched_queue_enter(s, j);
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
		if (sched_card_fit(s, r, BIT(c), NULL) == 0) {
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
	sched_card_add(s, j);
	s->dirty = s->pdirty = s->touched = s->all;
	s->restored = 1;
	return (0);
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

/*
 * Withholds n bytes of card c's memory from what the scheduler may
 * promise (sign 1: a job it does not hold uses them, an overcommitted
 * one's ask), or gives them back (-1), room for the queue again.
 */
void
sched_withhold(struct sched *s, u_int c, uint64_t n, int sign)
{
	if (c >= s->ncards)
		return;
	if (sign > 0) {
		s->card[c].mem_used += n;
		return;
	}
	s->card[c].mem_used -= n < s->card[c].mem_used ? n :
	    s->card[c].mem_used;
	s->dirty |= BIT(c);
	s->pdirty |= BIT(c);
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
