/* test-sched.c: each kind of scheduling decision, with exact expectations. */

#include "gmux.h"
#include "sched-int.h"
#include "unit.h"

#define G (1ULL << 30)

static struct sched_out	 out;

static struct sched *
mk(u_int n, uint64_t mem)
{
	uint64_t	 m[SCHED_CARDS_MAX];
	u_int		 i;

	for (i = 0; i < n; i++)
		m[i] = mem;
	sched_out_clear(&out);
	return (sched_create(m, n, NULL));
}

static struct sched_req
rq(u_int id, u_int seats, uint64_t mem, u_int prio, int flags)
{
	struct sched_req	 r;

	memset(&r, 0, sizeof r);
	r.id = id;
	r.seats = seats;
	r.mem = mem;
	r.ncards = 1;
	r.pin = -1;
	r.prio = prio;
	r.flags = flags;
	return (r);
}

/* Submits at time now, starting with an empty out. */
static int
sub(struct sched *s, struct sched_req r, int64_t now)
{
	sched_out_clear(&out);
	r.submit = now;
	return (sched_submit(s, &r, now, &out));
}

static int
end(struct sched *s, u_int id, int64_t now)
{
	sched_out_clear(&out);
	return (sched_end(s, id, now, &out));
}

/* The i-th decision of kind act, NULL if there is none. */
static struct sched_decision *
dec(enum sched_act act, u_int nth)
{
	u_int	 i;

	for (i = 0; i < out.n; i++) {
		if (out.v[i].act == act && nth-- == 0)
			return (&out.v[i]);
	}
	return (NULL);
}

static u_int
count(enum sched_act act)
{
	u_int	 i, n = 0;

	for (i = 0; i < out.n; i++)
		n += out.v[i].act == act;
	return (n);
}

static void
test_admit(void)
{
	struct sched		*s = mk(2, 80 * G);
	struct sched_decision	*d = NULL;

	CHECK(sub(s, rq(1, 50, 0, 5, 0), 0) == 0);
	CHECK(out.n == 1 && (d = dec(SCHED_ADMIT, 0)) != NULL);
	CHECK(d->job == 1 && d->card == 0 && d->seats == 50 &&
	    d->mem == 40 * G && d->ceiling == 50 && d->cards == 1);
	/* Best fit: the fuller card. */
	CHECK(sub(s, rq(2, 25, 0, 5, 0), 0) == 0);
	CHECK((d = dec(SCHED_ADMIT, 0)) != NULL && d->card == 0 &&
	    d->mem == 20 * G);
	CHECK(sub(s, rq(3, 50, 0, 5, 0), 0) == 0);
	CHECK((d = dec(SCHED_ADMIT, 0)) != NULL && d->card == 1);
	/* Explicit memory, and a share-0 job (no card). */
	CHECK(sub(s, rq(4, 20, 8 * G, 5, 0), 0) == 0);
	CHECK((d = dec(SCHED_ADMIT, 0)) != NULL && d->card == 0 &&
	    d->mem == 8 * G);
	CHECK(sub(s, rq(5, 0, 0, 5, 0), 0) == 0);
	CHECK((d = dec(SCHED_ADMIT, 0)) != NULL && d->card == -1 &&
	    d->cards == 0);
	sched_free(s);
}

static void
refused(struct sched *s, struct sched_req r, const char *why)
{
	struct sched_decision	*d = NULL;

	CHECK(sub(s, r, 0) == -1);
	CHECK(out.n == 1 && (d = dec(SCHED_REFUSE, 0)) != NULL);
	if (d != NULL)
		CHECK_STR(d->reason, why);
}

static void
test_refuse(void)
{
	struct sched		*s;
	struct sched_req	 r;
	uint64_t		 m[2] = { 80 * G, 40 * G };

	s = mk(2, 80 * G);
	refused(s, rq(1, 10, 90 * G, 5, 0),
	    "needs 90G of memory; the largest card has 80G");
	r = rq(2, 10, 0, 5, 0);
	r.pin = 3;
	refused(s, r, "needs card 3; this host has 2 cards");
	r = rq(3, 100, 0, 5, 0);
	r.ncards = 3;
	refused(s, r, "needs 3 cards; this host has 2");
	r = rq(4, 10, 0, 5, 0);
	r.ncards = 2;
	r.pin = 1;
	refused(s, r, "asks for 2 cards but is pinned to card 1");
	refused(s, rq(5, 10, 0, 12, 0), "priority 12: must be from 0 to 9");
	CHECK(sub(s, rq(6, 10, 0, 5, 0), 0) == 0);
	refused(s, rq(6, 10, 0, 5, 0), "j6 is already scheduled");
	sched_free(s);

	s = sched_create(m, 2, NULL);
	r = rq(7, 10, 60 * G, 5, 0);
	r.pin = 1;
	refused(s, r, "needs 60G of memory; card 1 has 40G");
	r.pin = -1;
	r.ncards = 2;
	refused(s, r, "needs 2 cards with 60G of memory; this host has 1");
	sched_free(s);

	s = mk(0, 0);
	refused(s, rq(8, 10, 0, 5, 0), "needs a card; this host has none");
	CHECK(sub(s, rq(9, 0, 0, 5, 0), 0) == 0 && dec(SCHED_ADMIT, 0));
	sched_free(s);
}

static void
test_queue(void)
{
	struct sched		*s = mk(1, 80 * G);
	struct sched_decision	*d = NULL;
	struct sched_info	 info;
	struct sched_req	 r;
	char			*why;

	CHECK(sub(s, rq(1, 75, 0, 5, 0), 0) == 0);
	CHECK(sub(s, rq(2, 50, 0, 5, 0), 1) == 0);
	CHECK(out.n == 1 && (d = dec(SCHED_QUEUE, 0)) != NULL);
	CHECK(d->pos == 1);
	CHECK_STR(d->reason, "waiting for 0.5 of a card (first in the queue; "
	    "card 0 kept for it)");
	CHECK(sched_holder(s, 0) == 2);
	CHECK(sub(s, rq(3, 50, 0, 5, 0), 2) == 0);
	CHECK((d = dec(SCHED_QUEUE, 0)) != NULL && d->pos == 2);
	CHECK_STR(d->reason, "waiting for 0.5 of a card");
	CHECK(sub(s, rq(4, 50, 0, 5, 0), 3) == 0);
	CHECK((d = dec(SCHED_QUEUE, 0)) != NULL && d->pos == 3);
	/* The held card takes nothing new, even what would fit. */
	CHECK(sub(s, rq(5, 10, 0, 5, 0), 4) == 0);
	CHECK((d = dec(SCHED_QUEUE, 0)) != NULL && d->pos == 4);
	CHECK_STR(d->reason, "waiting for 0.1 of a card (card 0 is held for "
	    "j2)");
	/* No-wait refuses instead; sched_refusal says so ahead, purely. */
	r = rq(6, 50, 0, 5, JOB_NOWAIT);
	why = sched_refusal(s, &r);
	CHECK_STR(why, "no room now for 0.5 of a card (--no-wait)");
	free(why);
	r = rq(6, 50, 0, 5, 0);
	CHECK(sched_refusal(s, &r) == NULL);
	r = rq(6, 50, 0, 5, 0);
	r.ncards = 2;
	CHECK((why = sched_refusal(s, &r)) != NULL);
	free(why);
	CHECK(sched_info(s, 6, &info) == -1);
	CHECK(sub(s, rq(6, 50, 0, 5, JOB_NOWAIT), 5) == -1);
	CHECK((d = dec(SCHED_REFUSE, 0)) != NULL);
	CHECK_STR(d->reason, "no room now for 0.5 of a card (--no-wait)");
	/* j1 ends: j2 and j3 fill the card, in queue order. */
	CHECK(end(s, 1, 10) == 0);
	CHECK(count(SCHED_ADMIT) == 2);
	CHECK(dec(SCHED_ADMIT, 0)->job == 2 && dec(SCHED_ADMIT, 1)->job == 3);
	CHECK(sched_info(s, 4, &info) == 0 && info.state == SCHED_QUEUED &&
	    info.pos == 1 && info.hold == SCHED_HOLD_DRAIN);
	CHECK(sched_info(s, 5, &info) == 0 && info.pos == 2);
	/* Cancelling a queued job moves the others up. */
	CHECK(end(s, 4, 11) == 0);
	CHECK(sched_info(s, 5, &info) == 0 && info.pos == 1 &&
	    info.hold == SCHED_HOLD_DRAIN);
	CHECK(end(s, 77, 11) == -1);
	sched_free(s);
}

static void
test_queue_memory(void)
{
	struct sched		*s = mk(2, 80 * G);
	struct sched_decision	*d = NULL;

	CHECK(sub(s, rq(1, 10, 60 * G, 5, 0), 0) == 0);
	CHECK(sub(s, rq(2, 10, 60 * G, 5, 0), 0) == 0);
	CHECK(sub(s, rq(3, 10, 40 * G, 5, 0), 0) == 0);
	CHECK((d = dec(SCHED_QUEUE, 0)) != NULL);
	CHECK_STR(d->reason, "waiting for 40G of memory on one card (first in "
	    "the queue; card 0 kept for it)");
	CHECK(sub(s, rq(4, 95, 40 * G, 5, 0), 0) == 0);
	CHECK((d = dec(SCHED_QUEUE, 0)) != NULL);
	CHECK_STR(d->reason, "waiting for 0.95 of a card with 40G of memory");
	sched_free(s);
}

static void
test_aging(void)
{
	struct sched		*s = mk(1, 80 * G);
	struct sched_info	 info;
	u_int			 ids[4];

	sched_set_age(s, 1000);
	CHECK(sub(s, rq(1, 100, 0, 5, 0), 0) == 0);
	CHECK(sub(s, rq(2, 10, 0, 0, 0), 0) == 0);	/* key 0 */
	CHECK(sub(s, rq(3, 10, 0, 9, 0), 1000) == 0);	/* key -8000 */
	CHECK(sub(s, rq(4, 10, 0, 9, 0), 9500) == 0);	/* key 500 */
	CHECK(sched_queue_list(s, ids, 4) == 3);
	CHECK(ids[0] == 3 && ids[1] == 2 && ids[2] == 4);
	/* Equal keys: the older first. */
	CHECK(sub(s, rq(5, 10, 0, 4, 0), 9000) == 0);	/* key 5000 */
	CHECK(sub(s, rq(6, 10, 0, 5, 0), 10000) == 0);	/* key 5000 */
	CHECK(sched_info(s, 5, &info) == 0 && info.pos == 4);
	CHECK(sched_info(s, 6, &info) == 0 && info.pos == 5);
	sched_free(s);
}

static void
test_preempt(void)
{
	struct sched		*s = mk(1, 80 * G);
	struct sched_decision	*d = NULL;
	int			 pf = JOB_PREEMPTIBLE;

	CHECK(sub(s, rq(1, 20, 0, 1, pf), 1) == 0);
	CHECK(sub(s, rq(2, 30, 0, 1, pf), 2) == 0);
	CHECK(sub(s, rq(3, 50, 0, 1, pf | JOB_REQUEUE), 3) == 0);
	/* Fewest jobs: j3 alone frees 0.5. */
	CHECK(sub(s, rq(4, 50, 0, 9, 0), 4) == 0);
	CHECK(count(SCHED_PREEMPT) == 1 && (d = dec(SCHED_PREEMPT, 0)));
	CHECK(d->job == 3 && d->by == 4 && d->card == 0);
	CHECK_STR(d->reason, "preempted for j4 (priority 9) on card 0");
	CHECK((d = dec(SCHED_QUEUE, 0)) != NULL);
	CHECK_STR(d->reason, "waiting for j3 to leave card 0 (preempted for "
	    "it)");
	/* A second one is not preempted again; it ends, goes back. */
	CHECK(end(s, 3, 5) == 1);
	CHECK(out.v[0].act == SCHED_REQUEUE && out.v[0].job == 3);
	CHECK((d = dec(SCHED_ADMIT, 0)) != NULL && d->job == 4);
	CHECK(count(SCHED_PREEMPT) == 0);
	sched_free(s);

	/* Two sets of one job: the younger goes. */
	s = mk(1, 80 * G);
	CHECK(sub(s, rq(1, 40, 0, 2, pf), 1) == 0);
	CHECK(sub(s, rq(2, 30, 0, 2, pf), 2) == 0);
	CHECK(sub(s, rq(3, 30, 0, 2, pf), 3) == 0);
	CHECK(sub(s, rq(4, 30, 0, 5, 0), 4) == 0);
	CHECK(count(SCHED_PREEMPT) == 1 && dec(SCHED_PREEMPT, 0)->job == 3);
	CHECK(end(s, 3, 5) == 0);	/* no --requeue: gone */
	CHECK(count(SCHED_REQUEUE) == 0 && dec(SCHED_ADMIT, 0)->job == 4);
	sched_free(s);

	/* Two jobs needed: the pair that spares the oldest. */
	s = mk(1, 80 * G);
	CHECK(sub(s, rq(1, 40, 0, 2, pf), 1) == 0);
	CHECK(sub(s, rq(2, 30, 0, 2, pf), 2) == 0);
	CHECK(sub(s, rq(3, 30, 0, 2, pf), 3) == 0);
	CHECK(sub(s, rq(4, 60, 0, 5, 0), 4) == 0);
	CHECK(count(SCHED_PREEMPT) == 2);
	CHECK(dec(SCHED_PREEMPT, 0)->job == 2);
	CHECK(dec(SCHED_PREEMPT, 1)->job == 3);
	sched_free(s);

	/* Never a job that is not preemptible, nor one of equal priority. */
	s = mk(1, 80 * G);
	CHECK(sub(s, rq(1, 50, 0, 1, 0), 1) == 0);
	CHECK(sub(s, rq(2, 50, 0, 9, pf), 2) == 0);
	CHECK(sub(s, rq(3, 50, 0, 9, 0), 3) == 0);
	CHECK(count(SCHED_PREEMPT) == 0 && count(SCHED_QUEUE) == 1);
	sched_free(s);
}

static void
test_burst(void)
{
	struct sched		*s = mk(1, 80 * G);
	struct sched_decision	*d = NULL;

	CHECK(sub(s, rq(1, 25, 0, 5, JOB_BURST), 1) == 0);
	CHECK((d = dec(SCHED_ADMIT, 0)) != NULL && d->ceiling == 100);
	CHECK(sub(s, rq(2, 25, 0, 5, JOB_BURST), 2) == 0);
	/* j1 comes down to 50 before j2 starts with 50. */
	CHECK(out.n == 2 && out.v[0].act == SCHED_CEILING &&
	    out.v[0].job == 1 && out.v[0].ceiling == 50);
	CHECK(out.v[1].act == SCHED_ADMIT && out.v[1].ceiling == 50);
	CHECK(sub(s, rq(3, 25, 0, 5, 0), 3) == 0);
	/* 25 idle between two: 13 and 12, the older gets the odd seat. */
	CHECK(out.n == 3 && out.v[0].ceiling == 38 && out.v[1].ceiling == 37);
	CHECK(out.v[2].act == SCHED_ADMIT && out.v[2].ceiling == 25);
	CHECK(sched_ceiling(s, 1, 0) == 38 && sched_ceiling(s, 2, 0) == 37);
	/* Needed back: down to the guarantees, raised again at the end. */
	CHECK(sub(s, rq(4, 25, 0, 5, 0), 4) == 0);
	CHECK(count(SCHED_CEILING) == 2 && out.v[0].ceiling == 25 &&
	    out.v[1].ceiling == 25 && out.v[2].act == SCHED_ADMIT);
	CHECK(end(s, 4, 5) == 0);
	CHECK(count(SCHED_CEILING) == 2 && out.v[0].ceiling == 38);
	sched_free(s);
}

static void
test_resize(void)
{
	struct sched		*s = mk(1, 80 * G);
	struct sched_decision	*d = NULL;
	char			*cause = NULL;

	CHECK(sub(s, rq(1, 25, 0, 5, 0), 0) == 0);
	CHECK(sub(s, rq(2, 50, 0, 5, 0), 0) == 0);
	sched_out_clear(&out);
	CHECK(sched_resize(s, 1, 75, 0, 1, &out, &cause) == -1);
	CHECK_STR(cause, "cannot grow to 0.75: card 0 has 0.25 free, 0.5 more "
	    "is needed");
	free(cause);
	CHECK(out.n == 0);
	CHECK(sched_resize(s, 1, 50, 0, 1, &out, &cause) == 0);
	CHECK(out.n == 1 && (d = dec(SCHED_RESIZE, 0)) != NULL);
	CHECK(d->seats == 50 && d->mem == 40 * G && d->ceiling == 50);
	sched_out_clear(&out);
	CHECK(sched_resize(s, 1, 40, 50 * G, 1, &out, &cause) == -1);
	CHECK_STR(cause, "cannot grow to 50G of memory: card 0 has 0B free, "
	    "10G more is needed");
	free(cause);
	CHECK(sched_resize(s, 1, 90, 90 * G, 1, &out, &cause) == -1);
	CHECK_STR(cause, "cannot grow to 90G of memory: card 0 has 80G");
	free(cause);
	/* A queued job waits for the room a shrink frees. */
	CHECK(sub(s, rq(3, 30, 0, 5, 0), 2) == 0 && dec(SCHED_QUEUE, 0));
	CHECK(sched_resize(s, 3, 100, 0, 2, &out, &cause) == 0);
	sched_out_clear(&out);
	CHECK(sched_resize(s, 1, 70, 0, 3, &out, &cause) == -1);
	CHECK_STR(cause, "cannot grow on card 0: it is held for j3, first in "
	    "the queue");
	free(cause);
	CHECK(sched_resize(s, 3, 30, 0, 3, &out, &cause) == 0);
	CHECK(sched_resize(s, 1, 20, 0, 3, &out, &cause) == 0);
	CHECK((d = dec(SCHED_RESIZE, 0)) != NULL && d->mem == 16 * G);
	CHECK((d = dec(SCHED_ADMIT, 0)) != NULL && d->job == 3);
	CHECK(sched_resize(s, 9, 20, 0, 3, &out, &cause) == -1);
	free(cause);
	sched_free(s);
}

static void
test_cards(void)
{
	struct sched		*s = mk(4, 80 * G);
	struct sched_decision	*d = NULL;
	struct sched_req	 r;

	CHECK(sub(s, rq(1, 60, 0, 5, 0), 0) == 0);	/* card 0 */
	r = rq(2, 60, 0, 5, 0);
	r.ncards = 3;
	CHECK(sub(s, r, 1) == 0 && count(SCHED_ADMIT) == 3);
	CHECK((d = dec(SCHED_ADMIT, 0)) != NULL && d->cards == 0xe &&
	    d->card == 1 && dec(SCHED_ADMIT, 2)->card == 3);
	r = rq(3, 50, 0, 5, 0);
	r.ncards = 2;
	CHECK(sub(s, r, 2) == 0 && (d = dec(SCHED_QUEUE, 0)) != NULL);
	CHECK_STR(d->reason, "waiting for 2 cards with 0.5 free each (first in "
	    "the queue; cards 0, 1 kept for it)");
	r = rq(4, 10, 0, 5, 0);
	r.pin = 3;
	CHECK(sub(s, r, 3) == 0 && (d = dec(SCHED_ADMIT, 0)) != NULL &&
	    d->card == 3);
	r = rq(5, 10, 0, 5, 0);
	r.pin = 1;
	CHECK(sub(s, r, 3) == 0 && (d = dec(SCHED_QUEUE, 0)) != NULL);
	CHECK_STR(d->reason, "waiting for 0.1 of card 1 (card 1 is held for "
	    "j3)");
	CHECK(end(s, 2, 4) == 0);
	CHECK(count(SCHED_ADMIT) == 3);
	CHECK(dec(SCHED_ADMIT, 0)->job == 3);
	CHECK(dec(SCHED_ADMIT, 0)->cards == 0xa);
	CHECK(dec(SCHED_ADMIT, 2)->job == 5 && dec(SCHED_ADMIT, 2)->card == 1);
	sched_free(s);
}

static void
test_timeout(void)
{
	struct sched		*s = mk(1, 80 * G);
	struct sched_req	 r = rq(2, 50, 0, 5, 0);
	struct sched_decision	*d = NULL;

	CHECK(sub(s, rq(1, 100, 0, 5, 0), 0) == 0);
	r.timeout = 5000;
	CHECK(sub(s, r, 1000) == 0 && dec(SCHED_QUEUE, 0));
	sched_out_clear(&out);
	sched_tick(s, 5999, &out);
	CHECK(out.n == 0);
	sched_tick(s, 6000, &out);
	CHECK(out.n == 1 && (d = dec(SCHED_REFUSE, 0)) != NULL && d->job == 2);
	CHECK_STR(d->reason, "did not start within 5s (--timeout)");
	CHECK(sched_find(s, 2) == NULL && sched_holder(s, 0) == 0);
	/* the timeout as it was given, not rounded to a coarser unit */
	r = rq(3, 50, 0, 5, 0);
	r.timeout = 90 * 1000;
	CHECK(sub(s, r, 7000) == 0 && dec(SCHED_QUEUE, 0));
	sched_out_clear(&out);
	sched_tick(s, 97000, &out);
	CHECK(out.n == 1 && (d = dec(SCHED_REFUSE, 0)) != NULL && d->job == 3);
	CHECK_STR(d->reason, "did not start within 90s (--timeout)");
	sched_free(s);
}

struct saved {
	struct sched_req	 req[16];
	struct sched_run	 run[16];
	int			 running[16];
	u_int			 n;
};

static void
save_cb(const struct sched_req *r, const struct sched_run *run, void *arg)
{
	struct saved	*sv = arg;

	sv->req[sv->n] = *r;
	if ((sv->running[sv->n] = run != NULL))
		sv->run[sv->n] = *run;
	sv->n++;
}

static void
test_restore(void)
{
	struct sched		*s = mk(2, 80 * G), *t;
	struct saved		 sv;
	struct sched_info	 info;
	u_int			 i, a[8], b[8], na;
	char			*cause = NULL;
	int			 pf = JOB_PREEMPTIBLE;

	sched_set_age(s, 1000);
	CHECK(sub(s, rq(1, 60, 0, 1, pf | JOB_BURST), 0) == 0);
	CHECK(sub(s, rq(2, 60, 0, 5, 0), 1) == 0);
	CHECK(sub(s, rq(3, 80, 0, 9, 0), 2) == 0);	/* preempts j1 */
	CHECK(sub(s, rq(4, 70, 0, 0, 0), 3) == 0);
	CHECK(sub(s, rq(5, 50, 0, 2, 0), 4) == 0);
	na = sched_queue_list(s, a, 8);
	memset(&sv, 0, sizeof sv);
	sched_walk(s, save_cb, &sv);
	CHECK(sv.n == 5);

	t = mk(2, 80 * G);
	sched_set_age(t, 1000);
	for (i = sv.n; i-- > 0;) {
		CHECK(sched_restore(t, &sv.req[i], sv.running[i] ? &sv.run[i] :
		    NULL, &cause) == 0);
	}
	sched_out_clear(&out);
	sched_pass(t, 10, &out);
	/* Ceilings are told again, nothing else happens. */
	CHECK(count(SCHED_CEILING) == 2 && out.n == 2);
	CHECK(sched_queue_list(t, b, 8) == na && memcmp(a, b, na * 4) == 0);
	CHECK(sched_info(t, 3, &info) == 0 && info.hold == SCHED_HOLD_CLAIM);
	CHECK(sched_info(t, 1, &info) == 0 && info.by == 3);
	CHECK(end(t, 1, 11) == 0 && dec(SCHED_ADMIT, 0)->job == 3);
	/* What cannot be put back is refused with the reason. */
	sv.req[0].id = 99;
	sv.run[0].cards = 1;
	sv.running[0] = 1;
	sv.req[0].seats = 100;
	CHECK(sched_restore(t, &sv.req[0], &sv.run[0], &cause) == -1);
	CHECK_STR(cause, "j99 would overfill card 0");
	free(cause);
	sched_free(s);
	sched_free(t);
}

static void
test_explain(void)
{
	struct sched		*s = mk(2, 80 * G);
	struct sched_req	 r;
	char			*t;

	CHECK(sub(s, rq(1, 75, 0, 5, JOB_BURST), 0) == 0);
	CHECK(sub(s, rq(2, 80, 0, 5, 0), 0) == 0);
	CHECK(sub(s, rq(3, 50, 0, 3, 0), 1000) == 0);
	t = sched_explain(s, 3, 61000);
	CHECK(t != NULL && strstr(t, "j3 is queued at position 1 of 1, "
	    "waiting for 0.5 of a card (first in the queue; card 0 kept for "
	    "it)\n") == t);
	CHECK(t != NULL && strstr(t, "priority 3, effective 3.2 after 1m of "
	    "waiting; ahead of all new work in 29m\n") != NULL);
	CHECK(t != NULL && strstr(t, "  card 0: 0.25 free, 20G of 80G memory "
	    "free; kept for it\n") != NULL);
	free(t);
	t = sched_explain(s, 1, 61000);
	CHECK_STR(t, "j1 is running on card 0 (for 1m)\n  card 0: 0.75 "
	    "guaranteed, up to 1, 60G of memory\n");
	free(t);
	CHECK(sched_explain(s, 42, 0) == NULL);
	r = rq(9, 20, 0, 5, 0);
	t = sched_explain_req(s, &r, 61000);
	CHECK_STR(t, "would start now on card 1\n");
	free(t);
	r.seats = 60;
	t = sched_explain_req(s, &r, 61000);
	CHECK(t != NULL && strncmp(t, "would wait at position 1, waiting for "
	    "0.6 of a card\n", 52) == 0);
	free(t);
	r.mem = 100 * G;
	t = sched_explain_req(s, &r, 61000);
	CHECK_STR(t, "would be refused: needs 100G of memory; the largest card "
	    "has 80G\n");
	free(t);
	sched_free(s);
}

int
main(void)
{
	RUN(test_admit);
	RUN(test_refuse);
	RUN(test_queue);
	RUN(test_queue_memory);
	RUN(test_aging);
	RUN(test_preempt);
	RUN(test_burst);
	RUN(test_resize);
	RUN(test_cards);
	RUN(test_timeout);
	RUN(test_restore);
	RUN(test_explain);
	sched_out_free(&out);
	UNIT_EXIT();
}
