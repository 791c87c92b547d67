/*
 * sched-admission.c: admission decision time with 10,000 queued jobs on 8
 * cards, median and p99, against a naive scheduler measured in the same
 * run (the queue in a sorted array, every decision rescanning all of it
 * against every card, as a first implementation would).  Usage:
 * sched-admission [-n decisions] [-q queued] [-s seed].
 */

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gmux.h"
#include "sched-int.h"

#define G	(1ULL << 30)
#define NCARDS	8

static uint64_t	 rng = 1;

static uint64_t
rnd(void)
{
	uint64_t	 z = (rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (z ^ (z >> 31));
}

static u_int
below(u_int n)
{
	return ((u_int)(rnd() % n));
}

static int64_t
nsec(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
}

/*
 * A request as users send them: mostly small shares of one card, default
 * memory, priority 5; some explicit memory, pins, several cards.  With
 * distinct set, every request is its own class (the worst case).
 */
static void
random_req(struct sched_req *r, u_int id, int64_t now, int distinct)
{
	static const u_int	 shares[] = { 5, 10, 10, 20, 25, 25, 25, 30,
				     33, 40, 50, 50, 60, 75, 100 };
	static const uint64_t	 mems[] = { 4 * G, 8 * G, 16 * G, 24 * G,
				     40 * G };
	u_int			 x;

	memset(r, 0, sizeof *r);
	r->id = id;
	r->submit = now;
	r->pin = -1;
	r->ncards = 1;
	if (distinct) {
		r->seats = 1 + below(100);
		r->mem = G + rnd() % (40 * G);
		r->prio = below(10);
		return;
	}
	r->seats = shares[below(nitems(shares))];
	if (below(10) < 3)
		r->mem = mems[below(nitems(mems))];
	r->prio = below(10) < 6 ? 5 : below(10);
	if ((x = below(100)) < 8)
		r->ncards = 2;
	else if (x < 10)
		r->ncards = 4;
	else if (x < 15)
		r->pin = below(NCARDS);
	if (below(10) < 2)
		r->flags |= JOB_BURST;
}

/* The naive scheduler: a sorted array and full rescans. */
struct naive {
	u_int		 used[NCARDS];
	uint64_t	 mem_used[NCARDS];
	uint64_t	 memory[NCARDS];
	struct njob {
		struct sched_req r;
		int64_t		 key;
		uint64_t	 cards;
	}		*q, *run;
	u_int		 nq, nrun;
};

static uint64_t
naive_need(struct naive *nv, const struct sched_req *r, u_int c)
{
	return (r->mem != 0 ? r->mem : r->seats * nv->memory[c] / 100);
}

static uint64_t
naive_fit(struct naive *nv, const struct sched_req *r)
{
	uint64_t	 cards = 0;
	u_int		 c, n = 0;

	for (c = 0; c < NCARDS && n < r->ncards; c++) {
		if ((r->pin < 0 || (u_int)r->pin == c) &&
		    100 - nv->used[c] >= r->seats &&
		    nv->memory[c] - nv->mem_used[c] >= naive_need(nv, r, c)) {
			cards |= 1ULL << c;
			n++;
		}
	}
	return (n == r->ncards ? cards : 0);
}

static void
naive_start(struct naive *nv, const struct njob *j, uint64_t cards)
{
	u_int	 c;

	nv->run[nv->nrun] = *j;
	nv->run[nv->nrun++].cards = cards;
	for (c = 0; c < NCARDS; c++) {
		if (cards & (1ULL << c)) {
			nv->used[c] += j->r.seats;
			nv->mem_used[c] += naive_need(nv, &j->r, c);
		}
	}
}

/* A submit: starts it or puts it in place; says where, with a reason. */
static u_int
naive_submit(struct naive *nv, const struct sched_req *r, int64_t age,
    char **reason)
{
	struct njob	 j;
	uint64_t	 cards;
	u_int		 lo = 0, hi = nv->nq, mid;
	char		*share;

	j.r = *r;
	j.key = r->submit - (int64_t)r->prio * age;
	if ((cards = naive_fit(nv, r)) != 0) {
		naive_start(nv, &j, cards);
		return (0);
	}
	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (nv->q[mid].key <= j.key)
			lo = mid + 1;
		else
			hi = mid;
	}
	memmove(&nv->q[lo + 1], &nv->q[lo], (nv->nq - lo) * sizeof j);
	nv->q[lo] = j;
	nv->nq++;
	share = format_share(r->seats);
	xasprintf(reason, "waiting for %s of a card", share);
	free(share);
	return (lo + 1);
}

/* A running job ends: rescan the whole queue, admitting what fits. */
static void
naive_end(struct naive *nv, u_int k)
{
	struct njob	 j = nv->run[k];
	uint64_t	 cards;
	u_int		 c, i, n = 0;

	nv->run[k] = nv->run[--nv->nrun];
	for (c = 0; c < NCARDS; c++) {
		if (j.cards & (1ULL << c)) {
			nv->used[c] -= j.r.seats;
			nv->mem_used[c] -= naive_need(nv, &j.r, c);
		}
	}
	for (i = 0; i < nv->nq; i++) {
		if ((cards = naive_fit(nv, &nv->q[i].r)) != 0)
			naive_start(nv, &nv->q[i], cards);
		else
			nv->q[n++] = nv->q[i];
	}
	nv->nq = n;
}

static int
cmp64(const void *a, const void *b)
{
	int64_t	 x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x < y ? -1 : x > y);
}

struct stats {
	double		 median;
	double		 p99;
};

static struct stats
stats(int64_t *v, u_int n)
{
	struct stats	 st;

	qsort(v, n, sizeof *v, cmp64);
	st.median = v[n / 2] / 1000.0;
	st.p99 = v[(size_t)n * 99 / 100] / 1000.0;
	return (st);
}

struct world {
	struct sched	*s;
	struct sched_out out;
	u_int		*running;
	u_int		 nrunning;
	u_int		 next;
	int64_t		 now;
	int		 distinct;
};

/* Carries out decisions as far as the benchmark cares: who runs. */
static void
world_apply(struct world *w)
{
	struct sched_decision	*d;
	u_int			 i;

	for (i = 0; i < w->out.n; i++) {
		d = &w->out.v[i];
		if (d->act == SCHED_ADMIT && (d->card == -1 ||
		    d->card == __builtin_ctzll(d->cards)))
			w->running[w->nrunning++] = d->job;
	}
	sched_out_clear(&w->out);
}

/* Submits until queued jobs are back to q. */
static void
world_fill(struct world *w, u_int q)
{
	struct sched_req	 r;

	while (sched_queue_count(w->s) < q) {
		random_req(&r, ++w->next, w->now, w->distinct);
		sched_submit(w->s, &r, w->now, &w->out);
		world_apply(w);
	}
}

static void
world_init(struct world *w, u_int q, int distinct)
{
	uint64_t	 mem[NCARDS];
	u_int		 c;

	memset(w, 0, sizeof *w);
	for (c = 0; c < NCARDS; c++)
		mem[c] = 80 * G;
	w->s = sched_create(mem, NCARDS, NULL);
	w->running = xcalloc(q + 100000, sizeof *w->running);
	w->now = 1000000;
	w->distinct = distinct;
	world_fill(w, q);
}

static void
world_free(struct world *w)
{
	sched_free(w->s);
	sched_out_free(&w->out);
	free(w->running);
}

/* Times n submits that queue (each then cancelled, not timed). */
static struct stats
bench_submit(u_int q, u_int n, int distinct)
{
	struct world		 w;
	struct sched_req	 r;
	int64_t			*t = xcalloc(n, sizeof *t), t0;
	u_int			 i;

	world_init(&w, q, distinct);
	for (i = 0; i < n; i++) {
		w.now += 10;
		random_req(&r, ++w.next, w.now, distinct);
		t0 = nsec();
		sched_submit(w.s, &r, w.now, &w.out);
		t[i] = nsec() - t0;
		world_apply(&w);
		sched_end(w.s, r.id, w.now, &w.out);
		world_apply(&w);
	}
	world_free(&w);
	return (stats(t, n));
}

/* Times n job ends, each admitting what fits; the queue is refilled. */
static struct stats
bench_end(u_int q, u_int n, int distinct, double *admits)
{
	struct world	 w;
	int64_t		*t = xcalloc(n, sizeof *t), t0;
	u_int		 i, k, id, before, total = 0;

	world_init(&w, q, distinct);
	for (i = 0; i < n; i++) {
		w.now += 10;
		k = below(w.nrunning);
		id = w.running[k];
		w.running[k] = w.running[--w.nrunning];
		before = w.nrunning;
		t0 = nsec();
		sched_end(w.s, id, w.now, &w.out);
		t[i] = nsec() - t0;
		world_apply(&w);
		total += w.nrunning - before;
		world_fill(&w, q);
	}
	*admits = (double)total / n;
	world_free(&w);
	return (stats(t, n));
}

static void
naive_fill(struct naive *nv, u_int q, u_int *next, int64_t now)
{
	struct sched_req	 r;
	char			*reason = NULL;

	while (nv->nq < q) {
		random_req(&r, ++*next, now, 0);
		naive_submit(nv, &r, SCHED_AGE_MS, &reason);
		free(reason);
		reason = NULL;
	}
}

/* The same two measures on the naive scheduler. */
static void
bench_naive(u_int q, u_int n, struct stats *sub, struct stats *end)
{
	struct naive		 nv;
	struct sched_req	 r;
	int64_t			*ts = xcalloc(n, sizeof *ts), t0, now = 1000000;
	int64_t			*te = xcalloc(n, sizeof *te);
	u_int			 i, c, next = 0, pos;
	char			*reason = NULL;

	memset(&nv, 0, sizeof nv);
	for (c = 0; c < NCARDS; c++)
		nv.memory[c] = 80 * G;
	nv.q = xcalloc(q + n + 1, sizeof *nv.q);
	nv.run = xcalloc(q + n + 1, sizeof *nv.run);
	naive_fill(&nv, q, &next, now);
	for (i = 0; i < n; i++) {
		now += 10;
		random_req(&r, ++next, now, 0);
		t0 = nsec();
		pos = naive_submit(&nv, &r, SCHED_AGE_MS, &reason);
		ts[i] = nsec() - t0;
		free(reason);
		reason = NULL;
		if (pos != 0) {
			memmove(&nv.q[pos - 1], &nv.q[pos],
			    (nv.nq - pos) * sizeof *nv.q);
			nv.nq--;
		}
		now += 10;
		t0 = nsec();
		naive_end(&nv, below(nv.nrun));
		te[i] = nsec() - t0;
		naive_fill(&nv, q, &next, now);
	}
	*sub = stats(ts, n);
	*end = stats(te, n);
	free(nv.q);
	free(nv.run);
}

static void
row(const char *what, struct stats a, struct stats b)
{
	printf("%-30s %9.1f %9.1f %12.1f %9.1f %8.1fx\n", what, a.median,
	    a.p99, b.median, b.p99, b.median / a.median);
}

int
main(int argc, char **argv)
{
	struct stats	 sub, end, wsub, wend, nsub, nend;
	u_int		 n = 3000, q = 10000;
	double		 admits, wadmits;
	int		 ch;

	while ((ch = getopt(argc, argv, "n:q:s:")) != -1) {
		switch (ch) {
		case 'n':
			n = (u_int)strtoul(optarg, NULL, 10);
			break;
		case 'q':
			q = (u_int)strtoul(optarg, NULL, 10);
			break;
		case 's':
			rng = strtoull(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr, "usage: sched-admission [-n decisions] "
			    "[-q queued] [-s seed]\n");
			return (2);
		}
	}
	if (n == 0 || q == 0)
		return (2);
	sub = bench_submit(q, n, 0);
	end = bench_end(q, n, 0, &admits);
	wsub = bench_submit(q, n, 1);
	wend = bench_end(q, n, 1, &wadmits);
	bench_naive(q, n, &nsub, &nend);

	printf("admission decisions: %u cards, %u queued jobs, %u decisions "
	    "each (us)\n", NCARDS, q, n);
	printf("%-30s %9s %9s %12s %9s %9s\n", "", "median", "p99",
	    "naive median", "naive p99", "ratio");
	row("submit, queued", sub, nsub);
	row("job end, admits what fits", end, nend);
	row("submit, all classes distinct", wsub, nsub);
	row("job end, all classes distinct", wend, nend);
	printf("jobs admitted per job end: %.2f (distinct classes: %.2f)\n",
	    admits, wadmits);
	printf("target: median <= 100 us: %s\n", sub.median <= 100 &&
	    end.median <= 100 && wsub.median <= 100 && wend.median <= 100 ?
	    "met" : "MISSED");
	return (0);
}
