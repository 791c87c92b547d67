/*
 * test-sched-prop.c: random sequences of submit / end / cancel / resize /
 * preempt / timeout / restart against the scheduler's invariants, checked
 * by a model of our own after every step.  Each sequence has its own seed;
 * a failure prints it, and GMUX_PROP_SEED=N replays that one sequence
 * (GMUX_PROP_RUNS=N changes how many run).
 */

#include <limits.h>
#include <setjmp.h>

#include "gmux.h"
#include "sched-int.h"
#include "unit.h"

#define G		(1ULL << 30)
#define MAXC		4
#define MAXJ		400
#define M_NONE		0
#define M_QUEUED	1
#define M_RUNNING	2
#define M_GONE		3

struct mjob {
	struct sched_req req;
	int		 state;
	uint64_t	 cards;
	uint64_t	 mem[MAXC];
	u_int		 ceil[MAXC];
	u_int		 by;
	int64_t		 start;
	int64_t		 end_at;	/* aging runs: when it ends */
	int		 hit;		/* aging runs: its preemption seen */
};

struct model {
	struct sched	*s;
	u_int		 ncards;
	uint64_t	 memory[MAXC];
	int64_t		 age;
	int64_t		 now;
	struct mjob	 j[MAXJ + 1];
	u_int		 n;		/* ids 1..n used */
	uint64_t	 rng;
	uint64_t	 seed;
	u_int		 step;
	struct sched_out out;
};

static jmp_buf	 fail_jmp;
static int	 trace;
static char	 fail_msg[512];

#define FAIL(m, ...) do {						\
	snprintf(fail_msg, sizeof fail_msg, __VA_ARGS__);		\
	longjmp(fail_jmp, 1);						\
} while (0)

static uint64_t
rnd(struct model *m)
{
	uint64_t	 z = (m->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (z ^ (z >> 31));
}

static u_int
below(struct model *m, u_int n)
{
	return (n == 0 ? 0 : (u_int)(rnd(m) % n));
}

static uint64_t
need(const struct model *m, const struct sched_req *r, u_int c)
{
	if (r->mem != 0)
		return (r->mem);
	return ((uint64_t)r->seats * m->memory[c] / 100);
}

static void
used(const struct model *m, u_int c, u_int *seats, uint64_t *mem)
{
	u_int	 i;

	*seats = 0;
	*mem = 0;
	for (i = 1; i <= m->n; i++) {
		if (m->j[i].state == M_RUNNING &&
		    (m->j[i].cards & (1ULL << c))) {
			*seats += m->j[i].req.seats;
			*mem += m->j[i].mem[c];
		}
	}
}

static int
fits_on(const struct model *m, const struct sched_req *r, u_int c)
{
	u_int		 us;
	uint64_t	 um;

	if (r->pin >= 0 && (u_int)r->pin != c)
		return (0);
	used(m, c, &us, &um);
	return (100 - us >= r->seats && m->memory[c] - um >= need(m, r, c));
}

/* Cards j may use: nobody's, or held for j itself. */
static uint64_t
avail_for(const struct model *m, u_int id)
{
	uint64_t	 a = 0;
	u_int		 c, h;

	for (c = 0; c < m->ncards; c++) {
		h = sched_holder(m->s, c);
		if (h == 0 || h == id)
			a |= 1ULL << c;
	}
	return (a);
}

static u_int
fit_count(const struct model *m, const struct sched_req *r, uint64_t cards)
{
	u_int	 c, n = 0;

	for (c = 0; c < m->ncards; c++)
		n += (cards & (1ULL << c)) && fits_on(m, r, c);
	return (n);
}

static uint64_t
eligible(const struct model *m, const struct sched_req *r)
{
	uint64_t	 e = 0;
	u_int		 c;

	for (c = 0; c < m->ncards; c++) {
		if ((r->pin < 0 || (u_int)r->pin == c) &&
		    need(m, r, c) <= m->memory[c])
			e |= 1ULL << c;
	}
	return (e);
}

static int
impossible(const struct model *m, const struct sched_req *r)
{
	if (r->seats == 0)
		return (0);
	if (r->pin >= 0 && ((u_int)r->pin >= m->ncards || r->ncards > 1))
		return (1);
	return (r->ncards > m->ncards ||
	    (u_int)__builtin_popcountll(eligible(m, r)) < r->ncards);
}

static int64_t
key(const struct model *m, const struct mjob *j)
{
	return (j->req.submit - (int64_t)j->req.prio * m->age);
}

static int
before(const struct model *m, const struct mjob *a, const struct mjob *b)
{
	if (key(m, a) != key(m, b))
		return (key(m, a) < key(m, b));
	if (a->req.submit != b->req.submit)
		return (a->req.submit < b->req.submit);
	return (a->req.id < b->req.id);
}

/* The model's queue, in order; returns its length. */
static u_int
order(const struct model *m, u_int *ids)
{
	u_int	 i, k, n = 0;

	for (i = 1; i <= m->n; i++) {
		if (m->j[i].state != M_QUEUED)
			continue;
		for (k = n; k > 0 && before(m, &m->j[i], &m->j[ids[k - 1]]);
		    k--)
			ids[k] = ids[k - 1];
		ids[k] = i;
		n++;
	}
	return (n);
}

/* What card c could free for a job of priority p by preemption. */
static void
pre_room(const struct model *m, u_int c, u_int p, u_int *seats, uint64_t *mem)
{
	const struct mjob	*v;
	u_int			 i;

	*seats = 0;
	*mem = 0;
	for (i = 1; i <= m->n; i++) {
		v = &m->j[i];
		if (v->state == M_RUNNING && (v->cards & (1ULL << c)) &&
		    (v->req.flags & JOB_PREEMPTIBLE) && v->by == 0 &&
		    v->req.prio < p) {
			*seats += v->req.seats;
			*mem += v->mem[c];
		}
	}
}

/* Whether queued job q could preempt on some card it may use. */
static int
could_preempt(const struct model *m, const struct mjob *q, uint64_t avail)
{
	const struct sched_req	*r = &q->req;
	uint64_t		 pm, um;
	u_int			 c, nfit, ps, us;

	if (r->prio == 0 || r->seats == 0)
		return (0);
	nfit = fit_count(m, r, avail & eligible(m, r));
	if (nfit + 1 != r->ncards)
		return (0);
	for (c = 0; c < m->ncards; c++) {
		if (!(avail & eligible(m, r) & (1ULL << c)) ||
		    fits_on(m, r, c))
			continue;
		used(m, c, &us, &um);
		pre_room(m, c, r->prio, &ps, &pm);
		if (100 - us + ps >= r->seats &&
		    m->memory[c] - um + pm >= need(m, r, c))
			return (1);
	}
	return (0);
}

static void
check_cards(struct model *m)
{
	const struct mjob	*j;
	u_int			 c, i, us, nb, idle, extra, rest, want;
	uint64_t		 um;

	for (c = 0; c < m->ncards; c++) {
		used(m, c, &us, &um);
		if (us > 100 || um > m->memory[c])
			FAIL(m, "card %u overfilled: %u seats, %llu bytes", c,
			    us, (unsigned long long)um);
		/* Ceilings: burst jobs share the idle seats, oldest first. */
		idle = 100 - us;
		for (nb = 0, i = 1; i <= m->n; i++) {
			j = &m->j[i];
			nb += j->state == M_RUNNING &&
			    (j->cards & (1ULL << c)) &&
			    (j->req.flags & JOB_BURST);
		}
		extra = nb ? idle / nb : 0;
		rest = nb ? idle % nb : 0;
		for (i = 1; i <= m->n; i++) {
			j = &m->j[i];
			if (j->state != M_RUNNING || !(j->cards & (1ULL << c)))
				continue;
			want = j->req.seats;
			if (j->req.flags & JOB_BURST) {
				u_int k, older = 0;
				for (k = 1; k <= m->n; k++) {
					const struct mjob *o = &m->j[k];
					older += o->state == M_RUNNING &&
					    (o->cards & (1ULL << c)) &&
					    (o->req.flags & JOB_BURST) &&
					    (o->start < j->start ||
					    (o->start == j->start &&
					    o->req.id < j->req.id));
				}
				want += extra + (older < rest);
			}
			if (j->ceil[c] != want)
				FAIL(m, "j%u ceiling %u on card %u, want %u",
				    i, j->ceil[c], c, want);
			if (sched_ceiling(m->s, i, c) != want)
				FAIL(m, "j%u: scheduler says ceiling %u", i,
				    sched_ceiling(m->s, i, c));
		}
	}
}

static void
check_jobs(struct model *m)
{
	const struct mjob	*j;
	struct sched_info	 info;
	u_int			 i, c;

	for (i = 1; i <= m->n; i++) {
		j = &m->j[i];
		if (j->state == M_GONE || j->state == M_NONE) {
			if (sched_info(m->s, i, &info) == 0)
				FAIL(m, "j%u is gone but scheduled", i);
			continue;
		}
		if (sched_info(m->s, i, &info) != 0)
			FAIL(m, "j%u is lost", i);
		if ((j->state == M_RUNNING) != (info.state == SCHED_RUNNING))
			FAIL(m, "j%u: states differ", i);
		if (j->state != M_RUNNING)
			continue;
		if (info.cards != j->cards || info.by != j->by)
			FAIL(m, "j%u: placement differs", i);
		if (j->req.seats == 0) {
			if (j->cards != 0)
				FAIL(m, "j%u: share 0 on a card", i);
			continue;
		}
		if ((u_int)__builtin_popcountll(j->cards) != j->req.ncards)
			FAIL(m, "j%u holds %d cards, asked %u", i,
			    __builtin_popcountll(j->cards), j->req.ncards);
		if (j->req.pin >= 0 && j->cards != 1ULL << j->req.pin)
			FAIL(m, "j%u is not on its pinned card", i);
		for (c = 0; c < m->ncards; c++) {
			if ((j->cards & (1ULL << c)) &&
			    j->mem[c] != need(m, &j->req, c))
				FAIL(m, "j%u: memory cap on card %u", i, c);
		}
	}
}

/* Holds are legitimate; nothing waits that fits; preemption is used. */
static void
check_queue(struct model *m)
{
	struct sched_info	 info;
	const struct mjob	*q;
	u_int			 ids[MAXJ], got[MAXJ], n, i, c, h, ndrain = 0;
	uint64_t		 avail;

	n = order(m, ids);
	if (sched_queue_list(m->s, got, MAXJ) != n ||
	    memcmp(ids, got, n * sizeof *ids) != 0)
		FAIL(m, "queue order differs");
	for (c = 0; c < m->ncards; c++) {
		if ((h = sched_holder(m->s, c)) == 0)
			continue;
		if (m->j[h].state != M_QUEUED || sched_info(m->s, h, &info) ||
		    !(info.cards & (1ULL << c)))
			FAIL(m, "card %u held for j%u, not queued", c, h);
		if (info.hold == SCHED_HOLD_DRAIN && h != ids[0])
			FAIL(m, "j%u holds cards but is not first", h);
		ndrain += info.hold == SCHED_HOLD_DRAIN &&
		    (u_int)__builtin_ctzll(info.cards) == c;
	}
	if (ndrain > 1)
		FAIL(m, "two jobs hold cards to drain");
	for (i = 0; i < n; i++) {
		q = &m->j[ids[i]];
		sched_info(m->s, ids[i], &info);
		avail = avail_for(m, ids[i]);
		if (fit_count(m, &q->req, avail) >= q->req.ncards)
			FAIL(m, "j%u fits but waits", ids[i]);
		if (info.hold == SCHED_HOLD_CLAIM) {
			u_int k, nv = 0;
			for (k = 1; k <= m->n; k++)
				nv += m->j[k].state == M_RUNNING &&
				    m->j[k].by == ids[i];
			if (nv == 0)
				FAIL(m, "j%u claims cards, no victims", ids[i]);
			continue;
		}
		if (could_preempt(m, q, avail))
			FAIL(m, "j%u could preempt but waits", ids[i]);
		if (i == 0 && (u_int)__builtin_popcountll(info.cards) <
		    q->req.ncards && (avail & ~info.cards & eligible(m,
		    &q->req)) != 0)
			FAIL(m, "j%u is first but holds too little", ids[i]);
	}
}

static void
check_all(struct model *m)
{
	check_cards(m);
	check_jobs(m);
	check_queue(m);
}

static int
older(const struct mjob *a, const struct mjob *b)
{
	return (a->start < b->start || (a->start == b->start &&
	    a->req.id < b->req.id));
}

/* Brute force: fewest victims on c for job p; the set sparing the oldest. */
static u_int
best_victims(const struct model *m, const struct mjob *p, u_int c,
    u_int *best)
{
	u_int		 cand[MAXJ], nc = 0, i, k, us, ps, bn = 0;
	uint64_t	 um, pm, mask, bmask = 0;

	for (i = 1; i <= m->n; i++) {
		const struct mjob *v = &m->j[i];
		if (v->state == M_RUNNING && (v->cards & (1ULL << c)) &&
		    (v->req.flags & JOB_PREEMPTIBLE) && v->by == 0 &&
		    v->req.prio < p->req.prio)
			cand[nc++] = i;
	}
	/* Oldest first, as the scheduler sees age. */
	for (i = 1; i < nc; i++) {
		for (k = i; k > 0 && older(&m->j[cand[k]],
		    &m->j[cand[k - 1]]); k--) {
			u_int t = cand[k];
			cand[k] = cand[k - 1];
			cand[k - 1] = t;
		}
	}
	if (nc > 14)
		return (UINT_MAX);
	used(m, c, &us, &um);
	for (mask = 1; mask < (1ULL << nc); mask++) {
		u_int bits = __builtin_popcountll(mask);
		ps = 0;
		pm = 0;
		for (i = 0; i < nc; i++) {
			if (mask & (1ULL << i)) {
				ps += m->j[cand[i]].req.seats;
				pm += m->j[cand[i]].mem[c];
			}
		}
		if (100 - us + ps < p->req.seats ||
		    m->memory[c] - um + pm < need(m, &p->req, c))
			continue;
		/* Fewer; or as few and leaving out an older one. */
		if (bn == 0 || bits < bn || (bits == bn &&
		    __builtin_ctzll(mask ^ bmask) ==
		    __builtin_ctzll(bmask & (mask ^ bmask)))) {
			bn = bits;
			bmask = mask;
		}
	}
	for (i = 0, k = 0; i < nc; i++) {
		if (bmask & (1ULL << i))
			best[k++] = cand[i];
	}
	return (bn);
}

/* Carries out one call's decisions on the model, checking each. */
static void
apply(struct model *m)
{
	struct sched_decision	*d;
	struct mjob		*j;
	u_int			 i, k, n, want[MAXJ], c;

	for (i = 0; i < m->out.n; i++) {
		d = &m->out.v[i];
		if (trace)
			fprintf(stderr, "  -> act %d j%u card %d seats %u "
			    "ceil %u mem %lluG by %u pos %u %s\n", d->act,
			    d->job, d->card, d->seats, d->ceiling,
			    (unsigned long long)(d->mem >> 30), d->by, d->pos,
			    d->reason ? d->reason : "");
		if (d->job == 0 || d->job > m->n)
			FAIL(m, "decision for unknown j%u", d->job);
		j = &m->j[d->job];
		c = d->card < 0 ? 0 : (u_int)d->card;
		switch (d->act) {
		case SCHED_ADMIT:
			if (j->state != M_RUNNING) {
				j->state = M_RUNNING;
				j->cards = 0;
				j->start = m->now;
				j->by = 0;
				j->end_at = 0;
				j->hit = 0;
			}
			if (d->card < 0)
				break;
			if ((j->cards & (1ULL << c)) || d->seats !=
			    j->req.seats || !(d->cards & (1ULL << c)))
				FAIL(m, "bad ADMIT of j%u", d->job);
			j->cards |= 1ULL << c;
			j->mem[c] = d->mem;
			j->ceil[c] = d->ceiling;
			break;
		case SCHED_QUEUE:
			if (j->state == M_RUNNING || d->pos == 0)
				FAIL(m, "bad QUEUE of j%u", d->job);
			j->state = M_QUEUED;
			break;
		case SCHED_REFUSE:
			if (j->state == M_RUNNING)
				FAIL(m, "REFUSE of running j%u", d->job);
			j->state = M_GONE;
			break;
		case SCHED_PREEMPT:
			if (j->state != M_RUNNING || j->by != 0 ||
			    !(j->req.flags & JOB_PREEMPTIBLE) ||
			    m->j[d->by].req.prio <= j->req.prio ||
			    m->j[d->by].state != M_QUEUED)
				FAIL(m, "bad PREEMPT of j%u for j%u (state %d "
				    "by %u flags %x prio %u, by prio %u state "
				    "%d)", d->job, d->by, j->state, j->by,
				    j->req.flags, j->req.prio,
				    m->j[d->by].req.prio, m->j[d->by].state);
			for (n = 0; i + n < m->out.n &&
			    m->out.v[i + n].act == SCHED_PREEMPT &&
			    m->out.v[i + n].by == d->by; n++)
				;
			k = best_victims(m, &m->j[d->by], c, want);
			if (k != UINT_MAX) {
				if (k != n)
					FAIL(m, "j%u preempts %u on card %u, "
					    "%u would do", d->by, n, c, k);
				for (k = 0; k < n; k++) {
					if (m->out.v[i + k].job == want[k])
						continue;
					FAIL(m, "j%u preempts j%u, want j%u",
					    d->by, m->out.v[i + k].job,
					    want[k]);
				}
			}
			for (k = 0; k < n; k++)
				m->j[m->out.v[i + k].job].by = d->by;
			i += n - 1;
			break;
		case SCHED_CEILING:
			if (j->state != M_RUNNING || !(j->cards & (1ULL << c)))
				FAIL(m, "CEILING for j%u not there", d->job);
			j->ceil[c] = d->ceiling;
			break;
		case SCHED_RESIZE:
			if (j->state != M_RUNNING || !(j->cards & (1ULL << c)))
				FAIL(m, "RESIZE for j%u not there", d->job);
			j->req.seats = d->seats;
			j->mem[c] = d->mem;
			j->ceil[c] = d->ceiling;
			break;
		case SCHED_REQUEUE:
			if (j->state != M_RUNNING || j->by == 0 ||
			    !(j->req.flags & JOB_REQUEUE))
				FAIL(m, "bad REQUEUE of j%u", d->job);
			j->state = M_QUEUED;
			j->cards = 0;
			j->by = 0;
			j->req.submit = m->now;
			break;
		}
	}
	sched_out_clear(&m->out);
}

static struct sched_req
random_req(struct model *m, u_int id)
{
	static const u_int	 shares[] = { 5, 10, 20, 25, 30, 33, 50, 60,
				     75, 100 };
	static const uint64_t	 mems[] = { 1 * G, 8 * G, 20 * G, 40 * G,
				     70 * G, 90 * G };
	struct sched_req	 r;
	u_int			 x;

	memset(&r, 0, sizeof r);
	r.id = id;
	x = below(m, 100);
	if (x < 2)
		r.seats = 0;
	else if (x < 70)
		r.seats = shares[below(m, nitems(shares))];
	else
		r.seats = 1 + below(m, 100);
	if (r.seats != 0 && below(m, 10) < 3)
		r.mem = mems[below(m, nitems(mems))];
	x = below(m, 100);
	r.ncards = r.seats == 0 ? 0 : x < 80 ? 1 : x < 95 ? 2 : 3 + below(m, 3);
	r.pin = r.seats != 0 && below(m, 10) == 0 ? (int)below(m,
	    m->ncards + 1) : -1;
	r.prio = below(m, 10);
	if (below(m, 10) < 3)
		r.flags |= JOB_BURST;
	if (below(m, 10) < 4)
		r.flags |= JOB_PREEMPTIBLE | (below(m, 2) ? JOB_REQUEUE : 0);
	if (below(m, 10) == 0)
		r.flags |= JOB_NOWAIT;
	if (below(m, 10) == 0)
		r.timeout = 1000 + below(m, 9000);
	r.submit = m->now;
	return (r);
}

static void
op_submit(struct model *m)
{
	struct sched_req	 r;
	struct mjob		*j;
	int			 rc, refuse, fits;

	if (m->n == MAXJ)
		return;
	r = random_req(m, ++m->n);
	j = &m->j[r.id];
	memset(j, 0, sizeof *j);
	j->req = r;
	if (r.seats == 0)
		j->req.ncards = 0;
	fits = r.seats == 0 || (!impossible(m, &r) &&
	    fit_count(m, &r, avail_for(m, r.id) & eligible(m, &r)) >= r.ncards);
	refuse = impossible(m, &r) || ((r.flags & JOB_NOWAIT) && !fits);
	if (trace)
		fprintf(stderr, "%u t=%lld submit j%u seats %u mem %lluG n %u "
		    "pin %d prio %u flags %x timeout %lld\n", m->step,
		    (long long)m->now, r.id, r.seats,
		    (unsigned long long)(r.mem >> 30), r.ncards, r.pin, r.prio,
		    r.flags, (long long)r.timeout);
	rc = sched_submit(m->s, &r, m->now, &m->out);
	j->state = M_QUEUED;	/* during the call: it may preempt */
	if ((rc == -1) != refuse)
		FAIL(m, "j%u: submit gave %d, expected %s", r.id, rc,
		    refuse ? "a refusal" : "no refusal");
	apply(m);
	if (refuse && j->state != M_GONE)
		FAIL(m, "j%u refused without REFUSE", r.id);
	if (!refuse && fits && j->state != M_RUNNING)
		FAIL(m, "j%u fits but was not admitted", r.id);
	if (!refuse && j->state != M_RUNNING && j->state != M_QUEUED)
		FAIL(m, "j%u neither admitted nor queued", r.id);
}

/* Picks a job in state st (and, if victim, being preempted). */
static u_int
pick(struct model *m, int st, int victim)
{
	u_int	 i, n = 0, ids[MAXJ];

	for (i = 1; i <= m->n; i++) {
		if (m->j[i].state == st && (!victim || m->j[i].by != 0))
			ids[n++] = i;
	}
	return (n == 0 ? 0 : ids[below(m, n)]);
}

static void
op_end(struct model *m, u_int id)
{
	struct mjob	*j = &m->j[id];
	int		 rc, requeue;

	if (id == 0)
		return;
	requeue = j->state == M_RUNNING && j->by != 0 &&
	    (j->req.flags & JOB_REQUEUE);
	if (trace)
		fprintf(stderr, "%u t=%lld end j%u\n", m->step,
		    (long long)m->now, id);
	rc = sched_end(m->s, id, m->now, &m->out);
	if (rc != requeue)
		FAIL(m, "j%u: end gave %d", id, rc);
	if (!requeue) {
		j->state = M_GONE;
		j->cards = 0;
	}
	apply(m);
	if (requeue && j->state == M_GONE)
		FAIL(m, "j%u: requeued job lost", id);
}

static void
op_resize(struct model *m)
{
	struct mjob	*j;
	struct sched_req r;
	char		*cause = NULL;
	u_int		 id, seats, c, us, h;
	uint64_t	 mem = 0, um, nm;
	int		 rc, ok = 1;

	if ((id = pick(m, below(m, 4) ? M_RUNNING : M_QUEUED, 0)) == 0)
		return;
	j = &m->j[id];
	if (j->req.seats == 0)
		return;
	seats = 1 + below(m, 100);
	if (below(m, 10) < 3)
		mem = (1 + below(m, 90)) * G;
	r = j->req;
	r.seats = seats;
	if (mem != 0)
		r.mem = mem;
	if (j->state == M_QUEUED)
		ok = !impossible(m, &r);
	for (c = 0; j->state == M_RUNNING && c < m->ncards; c++) {
		if (!(j->cards & (1ULL << c)))
			continue;
		nm = need(m, &r, c);
		if (seats <= j->req.seats && nm <= j->mem[c])
			continue;
		used(m, c, &us, &um);
		h = sched_holder(m->s, c);
		if (nm > m->memory[c] || j->by != 0 || h != 0 ||
		    (seats > j->req.seats && seats - j->req.seats > 100 - us) ||
		    (nm > j->mem[c] && nm - j->mem[c] > m->memory[c] - um))
			ok = 0;
	}
	if (trace)
		fprintf(stderr, "%u t=%lld resize j%u seats %u mem %lluG\n",
		    m->step, (long long)m->now, id, seats,
		    (unsigned long long)(mem >> 30));
	rc = sched_resize(m->s, id, seats, mem, m->now, &m->out, &cause);
	if ((rc == 0) != ok)
		FAIL(m, "j%u: resize to %u gave %d (%s)", id, seats, rc,
		    cause ? cause : "");
	free(cause);
	if (rc == 0) {
		j->req.seats = seats;
		if (mem != 0)
			j->req.mem = mem;
	}
	apply(m);
}

static void
op_tick(struct model *m)
{
	u_int	 i;

	m->now += below(m, 4000);
	if (trace)
		fprintf(stderr, "%u t=%lld tick\n", m->step, (long long)m->now);
	sched_tick(m->s, m->now, &m->out);
	apply(m);
	for (i = 1; i <= m->n; i++) {
		if (m->j[i].state == M_QUEUED && m->j[i].req.timeout > 0 &&
		    m->now - m->j[i].req.submit >= m->j[i].req.timeout)
			FAIL(m, "j%u waited past its timeout", i);
	}
}

struct saved {
	struct sched_req req[MAXJ];
	struct sched_run run[MAXJ];
	int		 running[MAXJ];
	u_int		 n;
};

static void
save_cb(const struct sched_req *r, const struct sched_run *run, void *arg)
{
	struct saved	*sv = arg;

	sv->req[sv->n] = *r;
	sv->running[sv->n] = run != NULL;
	if (run != NULL)
		sv->run[sv->n] = *run;
	sv->n++;
}

/* Rebuilds the scheduler from what a daemon would have persisted. */
static void
op_restart(struct model *m)
{
	static struct saved	 sv;
	u_int			 i, k, before_n, after_n, a[MAXJ], b[MAXJ];
	char			*cause = NULL;
	struct sched_req	 tr;
	struct sched_run	 trun;
	int			 trunning;

	if (trace)
		fprintf(stderr, "%u t=%lld restart\n", m->step,
		    (long long)m->now);
	before_n = sched_queue_list(m->s, a, MAXJ);
	sv.n = 0;
	sched_walk(m->s, save_cb, &sv);
	for (i = sv.n; i > 1; i--) {
		k = below(m, i);
		tr = sv.req[i - 1], sv.req[i - 1] = sv.req[k], sv.req[k] = tr;
		trun = sv.run[i - 1], sv.run[i - 1] = sv.run[k],
		    sv.run[k] = trun;
		trunning = sv.running[i - 1];
		sv.running[i - 1] = sv.running[k];
		sv.running[k] = trunning;
	}
	sched_free(m->s);
	m->s = sched_create(m->memory, m->ncards, NULL);
	sched_set_age(m->s, m->age);
	for (i = 0; i < sv.n; i++) {
		if (sched_restore(m->s, &sv.req[i], sv.running[i] ?
		    &sv.run[i] : NULL, &cause) != 0)
			FAIL(m, "restore: %s", cause);
	}
	/* Ceilings are unknown to a new scheduler: it tells them again. */
	for (i = 1; i <= m->n; i++)
		memset(m->j[i].ceil, 0xff, sizeof m->j[i].ceil);
	sched_pass(m->s, m->now, &m->out);
	apply(m);
	after_n = sched_queue_list(m->s, b, MAXJ);
	for (i = 0, k = 0; i < before_n; i++) {
		if (m->j[a[i]].state != M_QUEUED)
			continue;
		if (k >= after_n || b[k++] != a[i])
			FAIL(m, "the queue's order changed in a restart");
	}
}

static void
sequence(struct model *m)
{
	static const uint64_t	 sizes[] = { 16 * G, 40 * G, 80 * G };
	u_int			 steps, x, c;

	m->ncards = 1 + below(m, MAXC);
	for (c = 0; c < m->ncards; c++)
		m->memory[c] = sizes[below(m, nitems(sizes))];
	m->age = below(m, 2) ? 1000 : 20000;
	m->now = 1000000;
	m->s = sched_create(m->memory, m->ncards, NULL);
	sched_set_age(m->s, m->age);
	steps = 20 + below(m, 60);
	for (m->step = 0; m->step < steps; m->step++) {
		m->now += below(m, 1500);
		x = below(m, 100);
		if (x < 42)
			op_submit(m);
		else if (x < 60)
			op_end(m, pick(m, M_RUNNING, 0));
		else if (x < 70)
			op_end(m, pick(m, M_RUNNING, 1));
		else if (x < 75)
			op_end(m, pick(m, M_QUEUED, 0));
		else if (x < 88)
			op_resize(m);
		else if (x < 95)
			op_tick(m);
		else
			op_restart(m);
		check_all(m);
	}
}

/* Runs body on a fresh model; a failed check lands here with its seed. */
static int
guarded(uint64_t seed, const char *what, void (*body)(struct model *))
{
	static struct model	 m;
	volatile int		 rc = 0;

	memset(&m, 0, sizeof m);
	m.seed = m.rng = seed;
	if (setjmp(fail_jmp)) {
		fprintf(stderr, "%s: seed %llu step %u: %s (replay: "
		    "GMUX_PROP_SEED=%llu)\n", what, (unsigned long long)seed,
		    m.step, fail_msg, (unsigned long long)seed);
		rc = -1;
	} else
		body(&m);
	sched_free(m.s);
	sched_out_free(&m.out);
	return (rc);
}

/* Aging runs: every job started gets its end; victims leave within grace. */
static void
aging_times(struct model *m, int64_t d, int64_t grace)
{
	struct mjob	*j;
	u_int		 i;

	for (i = 1; i <= m->n; i++) {
		j = &m->j[i];
		if (j->state != M_RUNNING)
			continue;
		if (j->end_at == 0)
			j->end_at = m->now + 1 + below(m, d);
		if (j->by != 0 && !j->hit) {
			j->hit = 1;
			if (m->now + 1 + (int64_t)below(m, grace) < j->end_at)
				j->end_at = m->now + 1 + below(m, grace);
		}
	}
}

/*
 * Aging: a priority-0 job J comes into a busy host while priority-9 jobs
 * keep arriving every gap ms; every job runs at most d ms and a victim
 * leaves within grace ms.  The bound of docs/scheduling.md: nobody passes J
 * after cutoff = t0 + 9 x age, and J starts by cutoff + (n + 1) x (grace +
 * d), n being the number of jobs ahead of it at the cutoff.
 */
static void
aging(struct model *mp)
{
	struct model		*m = mp;
	struct sched_req	 r;
	struct sched_info	 info;
	int64_t			 d, grace, gap, t0, cutoff, bound, next, arrive;
	u_int			 c, i, id, nahead = 0;
	u_int			 shares[] = { 25, 50, 75, 100 };
	int			 at_cutoff = 0;

	m->ncards = 1 + below(m, 2);
	for (c = 0; c < m->ncards; c++)
		m->memory[c] = 80 * G;
	m->age = 500 + below(m, 2000);
	d = 200 + below(m, 3000);
	grace = 50 + below(m, 300);
	gap = d / (1 + below(m, 6)) + 1;
	m->now = 1000000;
	m->s = sched_create(m->memory, m->ncards, NULL);
	sched_set_age(m->s, m->age);
	for (i = 0; i < 2 + below(m, 8); i++) {
		r = random_req(m, ++m->n);
		r.flags &= ~(JOB_NOWAIT | JOB_BURST);
		r.timeout = 0;
		r.pin = -1;
		if (r.seats != 0)
			r.ncards = 1;
		m->j[r.id].req = r;
		m->j[r.id].req.ncards = r.seats ? r.ncards : 0;
		m->j[r.id].state = M_QUEUED;
		sched_submit(m->s, &r, m->now, &m->out);
		apply(m);
	}
	/* J: non-preemptible, so its first start is its start. */
	memset(&r, 0, sizeof r);
	r.id = id = ++m->n;
	r.seats = shares[below(m, nitems(shares))];
	r.ncards = m->ncards == 2 && below(m, 3) == 0 ? 2 : 1;
	r.pin = -1;
	r.submit = t0 = m->now;
	m->j[id].req = r;
	m->j[id].state = M_QUEUED;
	CHECK(sched_submit(m->s, &r, m->now, &m->out) == 0);
	apply(m);
	aging_times(m, d, grace);
	cutoff = t0 + 9 * m->age;
	bound = INT64_MAX;
	arrive = m->now + gap;
	for (m->step = 0; m->j[id].state != M_RUNNING; m->step++) {
		next = arrive;
		for (i = 1; i <= m->n; i++) {
			if (m->j[i].state == M_RUNNING && m->j[i].end_at < next)
				next = m->j[i].end_at;
		}
		if (!at_cutoff && next >= cutoff) {
			at_cutoff = 1;
			sched_info(m->s, id, &info);
			nahead = info.pos - 1;
			bound = cutoff + (int64_t)(nahead + 1) * (grace + d);
		}
		if (next > bound)
			FAIL(m, "j%u (priority 0) still waits at %lld, past "
			    "the bound %lld (%u ahead at the cutoff)", id,
			    (long long)(next - t0), (long long)(bound - t0),
			    nahead);
		m->now = next;
		for (i = 1; i <= m->n; i++) {
			if (m->j[i].state == M_RUNNING && m->j[i].end_at != 0 &&
			    m->j[i].end_at <= m->now) {
				op_end(m, i);
				aging_times(m, d, grace);
			}
		}
		if (m->now == arrive && m->n == MAXJ)
			arrive = INT64_MAX;
		if (m->now == arrive) {
			r = random_req(m, ++m->n);
			r.prio = 9;
			r.flags &= ~(JOB_NOWAIT | JOB_PREEMPTIBLE);
			r.timeout = 0;
			m->j[r.id].req = r;
			m->j[r.id].req.ncards = r.seats ? r.ncards : 0;
			m->j[r.id].state = M_QUEUED;
			sched_submit(m->s, &r, m->now, &m->out);
			apply(m);
			arrive += gap;
		}
		if (at_cutoff && m->j[id].state == M_QUEUED &&
		    sched_info(m->s, id, &info) == 0 && info.pos - 1 > nahead)
			FAIL(m, "j%u was passed after the cutoff", id);
		aging_times(m, d, grace);
		check_all(m);
	}
}

static uint64_t
env_u64(const char *name, uint64_t dflt)
{
	const char	*v = getenv(name);

	return (v != NULL && *v != '\0' ? strtoull(v, NULL, 10) : dflt);
}

/* Runs body n times from GMUX_PROP_BASE on, or once on GMUX_PROP_SEED. */
static void
many(const char *what, void (*body)(struct model *), uint64_t n)
{
	uint64_t	 base = env_u64("GMUX_PROP_BASE", 1), i;
	int		 failed = 0;

	if (getenv("GMUX_PROP_SEED") != NULL) {
		CHECK(guarded(env_u64("GMUX_PROP_SEED", 0), what, body) == 0);
		return;
	}
	for (i = 0; i < n && failed < 5; i++)
		failed += guarded(base + i, what, body) != 0;
	CHECK(failed == 0);
}

static void
test_sequences(void)
{
	many("sequence", sequence, env_u64("GMUX_PROP_RUNS", 10000));
}

static void
test_aging_bound(void)
{
	many("aging", aging, env_u64("GMUX_PROP_RUNS", 10000) / 20);
}

int
main(void)
{
	trace = getenv("GMUX_PROP_TRACE") != NULL;
	RUN(test_sequences);
	RUN(test_aging_bound);
	UNIT_EXIT();
}
