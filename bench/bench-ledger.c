/*
 * bench-ledger.c: the books' two targets, each against a baseline run in
 * the same process on the same data.
 *
 *  usage: `gmux usage --since 30d --by owner` over 1,000,000 intervals
 *         (ledger_usage), against a plain SELECT count(*) of the intervals
 *         and against the naive query (clip and sum every row in SQL),
 *         whose figures must agree with ours.  Target: <= 100 ms.
 *  tick:  ledger_tick with 1,000 running jobs, against writing each open
 *         interval's end through in one transaction (the per-row design).
 *         Target: <= 2 ms.
 *
 * Usage: bench-ledger [DIR] (default build/bench-data); the 1,000,000-row
 * database is made there once, through the ledger's own API, and reused:
 * 100,000 jobs starting in turn over 60 days, each with ten spans of 10 to
 * 60 minutes (resizes) on one of 8 cards, 50 owners.
 */

#include <sys/stat.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gmux.h"
#include "ledger-int.h"

#define NOW	(1793491200000LL + 13 * 3600000LL + 37 * 60000LL)
#define DAY	LEDGER_DAY_MS
#define NROWS	1000000
#define NJOBS	1000

/* The same data on every run: random() seeded in main. */
static u_int
rnd(u_int n)
{
	return ((u_int)(random() % n));
}

static double
now_us(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3);
}

static int
cmp_double(const void *a, const void *b)
{
	double	 x = *(const double *)a, y = *(const double *)b;

	return (x < y ? -1 : x > y);
}

struct stat_pair {
	double	 median;
	double	 p99;
};

static struct stat_pair
stats(double *v, u_int n)
{
	struct stat_pair	 s;

	qsort(v, n, sizeof *v, cmp_double);
	s.median = v[n / 2];
	s.p99 = v[(n * 99 + 99) / 100 - 1];
	return (s);
}

static void
die(const char *what, char *cause)
{
	fprintf(stderr, "bench-ledger: %s: %s\n", what, cause ? cause : "");
	exit(1);
}

static char *owners[50];

/* One job: ten spans of 10 to 60 minutes (resizes), then its end. */
static int64_t
gen_job(struct ledger *l, u_int job)
{
	struct ledger_use	 u;
	char			*cause = NULL;
	int64_t			 t;
	u_int			 i;

	memset(&u, 0, sizeof u);
	u.job = job;
	u.owner = owners[job % 50];
	u.card = rnd(8);
	u.vendor = u.card < 6 ? "nvidia" : "amd";
	u.model = u.card < 6 ? "H100" : "MI300X";
	u.fence = "none";
	u.seats = 5;
	/* Jobs start in order, every 52 s or so: rows are appended in
	 * about the order of time, as the daemon appends them. */
	t = NOW - 60 * DAY + (int64_t)(job - 1) * (60 * DAY / (NROWS / 10)) +
	    rnd(60000);
	for (i = 0; i < 10; i++) {
		/* Every span differs from the last, so each is a row. */
		u.seats = 5 + (u.seats - 5 + 1 + rnd(95)) % 96;
		u.ceiling = u.seats;
		u.mem = (uint64_t)(1 + rnd(80)) << 30;
		if (ledger_set(l, job, &u, 1, t, &cause) != 0)
			die("ledger_set", cause);
		t += (10 + rnd(51)) * 60000LL;
	}
	if (ledger_end(l, job, t, &cause) != 0)
		die("ledger_end", cause);
	return (t);
}

static struct ledger *
make_books(const char *path)
{
	struct ledger	*l;
	char		*cause = NULL;
	double		 t0 = now_us();
	u_int		 job;

	if ((l = ledger_open(path, &cause)) == NULL)
		die(path, cause);
	if (ledger_meta_int(l, "head_seq") == NROWS &&
	    ledger_meta_int(l, "last_tick") == NOW) {
		printf("reusing %s (%d intervals)\n", path, NROWS);
		return (l);
	}
	if (ledger_meta_int(l, "head_seq") != 0)
		die(path, xstrdup("exists with other contents; remove it"));
	printf("generating %d intervals (100,000 jobs x 10 spans over 60 "
	    "days, 50 owners, 8 cards) in %s ...\n", NROWS, path);
	fflush(stdout);
	for (job = 1; job <= NROWS / 10; job++) {
		if ((job - 1) % 5000 == 0 && ledger_begin(l) != 0)
			die("begin", NULL);
		gen_job(l, job);
		if (job % 5000 == 0 && ledger_commit(l, &cause) != 0)
			die("commit", cause);
	}
	if (ledger_tick(l, NOW, &cause) != 0)
		die("tick", cause);
	printf("generated in %.1f s\n", (now_us() - t0) / 1e6);
	return (l);
}

/* The naive query: clip and sum every interval in SQL, grouped by owner. */
static int64_t
naive(struct db *db, int64_t since, int64_t until, int64_t *jobs)
{
	static struct dbstmt	*st;
	int64_t			 total = 0;

	if (st == NULL) {
		st = db_prepare(db, "SELECT owner, sum(seats * (min(end_ms, ?2)"
		    " - max(start_ms, ?1))), count(DISTINCT job) FROM ledger "
		    "WHERE end_ms > ?1 AND start_ms < ?2 GROUP BY owner");
	}
	*jobs = 0;
	db_bind_int(st, 1, since);
	db_bind_int(st, 2, until);
	while (db_step(st) == 1) {
		total += db_col_int(st, 1);
		*jobs += db_col_int(st, 2);
	}
	db_reset(st);
	return (total);
}

static int64_t
count_rows(struct db *db)
{
	static struct dbstmt	*st;
	int64_t			 n = 0;

	if (st == NULL)
		st = db_prepare(db, "SELECT count(*) FROM ledger");
	if (db_step(st) == 1)
		n = db_col_int(st, 0);
	db_reset(st);
	return (n);
}

static double
cpu_us(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ((double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3);
}

static void
print_stat(const char *what, struct stat_pair s, struct stat_pair base)
{
	printf("  %-34s median %9.3f ms  p99 %9.3f ms  (x%.3f of baseline "
	    "median)\n", what, s.median / 1e3, s.p99 / 1e3,
	    s.median / base.median);
}

/* What one query cost, in wall and CPU time. */
struct cost {
	double	 wall[60];
	double	 cpu[60];
	u_int	 n;
};

static void
cost_start(double *t)
{
	t[0] = now_us();
	t[1] = cpu_us();
}

static void
cost_end(struct cost *c, const double *t)
{
	c->wall[c->n] = now_us() - t[0];
	c->cpu[c->n++] = cpu_us() - t[1];
}

static void
print_cost(const char *what, struct cost *c, struct cost *base)
{
	struct stat_pair	 w, p, bw, bp;

	w = stats(c->wall, c->n);
	p = stats(c->cpu, c->n);
	bw = stats(base->wall, base->n);
	bp = stats(base->cpu, base->n);
	printf("  %-28s wall median %8.3f ms p99 %8.3f ms (x%.3f) | cpu "
	    "median %8.3f ms (x%.3f)\n", what, w.median / 1e3, w.p99 / 1e3,
	    w.median / bw.median, p.median / 1e3, p.median / bp.median);
}

/*
 * The three queries take turns, so that they share whatever else the
 * machine is doing; CPU time is shown beside wall time for that reason.
 */
static void
bench_usage(const char *dir)
{
	static struct cost	 q, c, n;
	struct ledger		*l;
	struct usage		 u;
	struct stat_pair	 sq;
	char			*path, *cause = NULL;
	double			 t[2];
	int64_t			 since = NOW - 30 * DAY, njobs = 0, seat = 0;
	u_int			 i;

	xasprintf(&path, "%s/ledger-1m.db", dir);
	l = make_books(path);
	memset(&u, 0, sizeof u);
	for (i = 0; i < nitems(q.wall); i++) {
		usage_free(&u);
		cost_start(t);
		if (ledger_usage(l, USAGE_OWNER, since, NOW, &u, &cause) != 0)
			die("usage", cause);
		cost_end(&q, t);
		cost_start(t);
		if (count_rows(ledger_db(l)) != NROWS)
			die("count", NULL);
		cost_end(&c, t);
		if (i % 3 != 0)
			continue;
		cost_start(t);
		seat = naive(ledger_db(l), since, NOW, &njobs);
		cost_end(&n, t);
	}
	printf("usage --since 30d --by owner over %d intervals: %u owners, "
	    "%.1f card-hours, %u jobs\n", NROWS, u.nrows,
	    (double)u.total.seat_ms / 3.6e8, u.total.jobs);
	printf("  naive query agrees: %s\n", seat == u.total.seat_ms &&
	    njobs == u.total.jobs ? "yes" : "NO");
	print_cost("SELECT count(*) (baseline)", &c, &c);
	print_cost("naive clip-and-sum in SQL", &n, &c);
	print_cost("ledger_usage (gmux usage)", &q, &c);
	sq = stats(q.wall, q.n);
	printf("  ledger_usage / naive (wall medians): %.4f; target <= 100 ms "
	    "(median): %s\n", sq.median / stats(n.wall, n.n).median,
	    sq.median <= 100e3 ? "met" : "MISSED");
	usage_free(&u);
	ledger_close(l);
	free(path);
}

/* The per-row design: each open interval's end updated, one transaction. */
static double
per_row_tick(struct db *db, struct dbstmt *st, int64_t now)
{
	double	 t = now_us();
	u_int	 i;

	db_begin(db);
	for (i = 1; i <= NJOBS; i++) {
		db_bind_int(st, 1, now);
		db_bind_int(st, 2, i);
		db_step(st);
		db_reset(st);
	}
	db_commit(db);
	return (now_us() - t);
}

static struct db *
per_row_books(const char *dir, struct dbstmt **st)
{
	struct db	*db;
	char		*path, *cause = NULL;
	u_int		 i;

	xasprintf(&path, "%s/per-row.db", dir);
	unlink(path);
	if ((db = db_open(path, &cause)) == NULL)
		die(path, cause);
	free(path);
	db_exec(db, "CREATE TABLE iv (id INTEGER PRIMARY KEY, job, owner, "
	    "card, seats, mem, start_ms, end_ms)", NULL);
	db_begin(db);
	*st = db_prepare(db, "INSERT INTO iv VALUES (?, ?, 'owner', 0, 25, "
	    "21474836480, ?, ?)");
	for (i = 1; i <= NJOBS; i++) {
		db_bind_int(*st, 1, i);
		db_bind_int(*st, 2, i);
		db_bind_int(*st, 3, NOW);
		db_bind_int(*st, 4, NOW);
		db_step(*st);
		db_reset(*st);
	}
	db_commit(db);
	db_finalize(*st);
	*st = db_prepare(db, "UPDATE iv SET end_ms = ? WHERE id = ?");
	return (db);
}

static struct ledger *
running_books(const char *dir)
{
	struct ledger		*l;
	struct ledger_use	 u;
	char			*path, *cause = NULL;
	u_int			 i;

	xasprintf(&path, "%s/ledger-1k.db", dir);
	unlink(path);
	if ((l = ledger_open(path, &cause)) == NULL)
		die(path, cause);
	free(path);
	memset(&u, 0, sizeof u);
	u.vendor = "nvidia";
	u.model = "H100";
	u.fence = "none";
	ledger_begin(l);
	for (i = 1; i <= NJOBS; i++) {
		u.job = i;
		u.owner = owners[i % 50];
		u.card = i % 8;
		u.seats = u.ceiling = 1 + i % 10;
		u.mem = 1ULL << 30;
		if (ledger_set(l, i, &u, 1, NOW, &cause) != 0)
			die("ledger_set", cause);
	}
	if (ledger_commit(l, &cause) != 0)
		die("commit", cause);
	return (l);
}

static void
bench_tick(const char *dir)
{
	struct ledger		*l;
	struct db		*db;
	struct dbstmt		*st;
	struct ledger_use	 u;
	struct stat_pair	 sl, sr, ss;
	char			*cause = NULL;
	double			 a[2000], b[2000], s[200], t;
	int64_t			 now = NOW;
	u_int			 i;

	l = running_books(dir);
	db = per_row_books(dir, &st);
	for (i = 0; i < nitems(a); i++) {
		now += 1000;
		t = now_us();
		if (ledger_tick(l, now, &cause) != 0)
			die("tick", cause);
		a[i] = now_us() - t;
		b[i] = per_row_tick(db, st, now);
	}
	/* A resize among 1,000 running jobs: one close and one open. */
	memset(&u, 0, sizeof u);
	u.vendor = "nvidia";
	u.model = "H100";
	u.fence = "none";
	for (i = 0; i < nitems(s); i++) {
		u.job = 1 + rnd(NJOBS);
		u.owner = owners[u.job % 50];
		u.card = u.job % 8;
		u.seats = u.ceiling = 1 + rnd(100);
		u.mem = 1ULL << 30;
		now += 1000;
		t = now_us();
		if (ledger_set(l, u.job, &u, 1, now, &cause) != 0)
			die("resize", cause);
		s[i] = now_us() - t;
	}
	sl = stats(a, nitems(a));
	sr = stats(b, nitems(b));
	ss = stats(s, nitems(s));
	printf("ledger tick with %d running jobs (%zu ticks):\n", NJOBS,
	    nitems(a));
	print_stat("per-row write-through (baseline)", sr, sr);
	print_stat("ledger_tick", sl, sr);
	print_stat("ledger_set resize (close + open)", ss, sr);
	printf("  target <= 2 ms per tick: %s\n", sl.p99 <= 2e3 ? "met" :
	    "MISSED");
	db_finalize(st);
	db_close(db);
	ledger_close(l);
}

int
main(int argc, char **argv)
{
	const char	*dir = argc > 1 ? argv[1] : "build/bench-data";
	u_int		 i;

	srandom(1);
	for (i = 0; i < nitems(owners); i++)
		xasprintf(&owners[i], "user%02u", i);
	if (mkdir_p(dir, 0700) != 0) {
		perror(dir);
		return (1);
	}
	bench_tick(dir);
	bench_usage(dir);
	return (0);
}
