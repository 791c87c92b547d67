/*
 * test-usage.c: usage windows and dates, the report's table, CSV and JSON,
 * and the query against a brute-force integration of the same rows.
 */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "ledger-int.h"
#include "unit.h"

#define T0	1793491200000LL		/* 2026-11-01T00:00:00Z */
#define HOUR	3600000LL

static void
test_parse_time(void)
{
	int64_t	 t;
	char	*cause = NULL;

	CHECK(usage_parse_time("2026-11-01", 0, &t, &cause) == 0 && t == T0);
	CHECK(usage_parse_time("2026-11-01T12:30", 0, &t, &cause) == 0 &&
	    t == T0 + 12 * HOUR + 30 * 60000);
	CHECK(usage_parse_time("2026-11-01 12:30:15Z", 0, &t, &cause) == 0 &&
	    t == T0 + 12 * HOUR + 30 * 60000 + 15000);
	CHECK(usage_parse_time("1970-01-01", 0, &t, &cause) == 0 && t == 0);
	CHECK(usage_parse_time("2024-02-29", 0, &t, &cause) == 0);
	CHECK(usage_parse_time("24h", T0, &t, &cause) == 0 &&
	    t == T0 - 24 * HOUR);
	CHECK(usage_parse_time("30d", T0, &t, &cause) == 0 &&
	    t == T0 - 30 * 24 * HOUR);
	CHECK(usage_parse_time("now", T0, &t, &cause) == 0 && t == T0);
	CHECK(cause == NULL);
	CHECK(usage_parse_time("2026-13-01", T0, &t, &cause) == -1);
	CHECK_STR(cause, "'2026-13-01' is not a time (like 24h, 30d, "
	    "2026-11-01 or 2026-11-01T12:00Z)");
	free(cause);
	cause = NULL;
	CHECK(usage_parse_time("2025-02-29", T0, &t, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(usage_parse_time("2026-11-01T24:00", T0, &t, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(usage_parse_time("yesterday", T0, &t, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(usage_parse_time("100000d", T0, &t, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(usage_parse_time("", T0, &t, &cause) == -1);
	free(cause);
}

static void
test_window(void)
{
	int64_t		 a, b;
	char		*cause = NULL;
	enum usage_by	 by;

	CHECK(usage_parse_window(NULL, NULL, T0, &a, &b, &cause) == 0);
	CHECK(a == T0 - 24 * HOUR && b == T0);
	CHECK(usage_parse_window("2026-10-01", "2026-11-01", T0 + 5, &a, &b,
	    &cause) == 0 && a == T0 - 31 * 24 * HOUR && b == T0);
	CHECK(usage_parse_window("1h", "2h", T0, &a, &b, &cause) == -1);
	CHECK_STR(cause, "--since must be before --until");
	free(cause);
	cause = NULL;
	CHECK(usage_by_from_name("day", &by, &cause) == 0 && by == USAGE_DAY);
	CHECK(usage_by_from_name("user", &by, &cause) == -1);
	CHECK_STR(cause, "'user' is not one of owner, job, card, vendor, day");
	free(cause);
}

static void
test_format_time(void)
{
	char	 buf[32], *cause = NULL;
	int64_t	 t;

	usage_format_time(T0, buf);
	CHECK_STR(buf, "2026-11-01T00:00:00Z");
	usage_format_time(T0 + 13 * HOUR + 5 * 60000 + 7001, buf);
	CHECK_STR(buf, "2026-11-01T13:05:07.001Z");
	usage_format_day(T0 / LEDGER_DAY_MS + 59, buf);
	CHECK_STR(buf, "2026-12-30");
	usage_format_day(19782, buf);		/* a leap day */
	CHECK_STR(buf, "2024-02-29");
	/* The last day a date may name, not 1970 (issue 11). */
	usage_format_day(2932896, buf);
	CHECK_STR(buf, "9999-12-31");
	CHECK(usage_parse_time("9999-12-31T23:59:59Z", 0, &t, &cause) == 0);
	usage_format_time(t, buf);
	CHECK_STR(buf, "9999-12-31T23:59:59Z");
}

/* A two-owner report built by hand. */
static void
sample(struct usage *u)
{
	memset(u, 0, sizeof *u);
	u->by = USAGE_OWNER;
	u->since = T0;
	u->until = T0 + 24 * HOUR;
	u->nrows = 2;
	u->rows = xcalloc(2, sizeof *u->rows);
	u->rows[0].key = xstrdup("alice");
	u->rows[0].jobs = 2;
	u->rows[0].seat_ms = 450000000;
	u->rows[0].mem_gib_hours = 100;
	u->rows[1].key = xstrdup("bob,jr");
	u->rows[1].jobs = 1;
	u->rows[1].seat_ms = 123456789;
	u->rows[1].mem_gib_hours = 0.5;
	u->total.key = xstrdup("total");
	u->total.jobs = 3;
	u->total.seat_ms = 573456789;
	u->total.mem_gib_hours = 100.5;
}

static char *
printed(const struct usage *u, enum usage_format fmt)
{
	char	*buf = NULL;
	size_t	 len = 0;
	FILE	*f;

	f = open_memstream(&buf, &len);
	usage_print(u, fmt, f);
	fclose(f);
	return (buf);
}

static void
test_print(void)
{
	struct usage	 u, back;
	json_t		*j;
	char		*s, *cause = NULL;

	sample(&u);
	s = printed(&u, USAGE_TABLE);
	CHECK_STR(s,
	    "usage by owner from 2026-11-01T00:00:00Z to "
	    "2026-11-02T00:00:00Z (UTC)\n"
	    "OWNER    JOBS   CARD-HOURS  SHARE-SECONDS  MEM-GIB-HOURS\n"
	    "alice       2       1.2500        4500.00        100.000\n"
	    "bob,jr      1       0.3429        1234.57          0.500\n"
	    "TOTAL       3       1.5929        5734.57        100.500\n");
	free(s);
	s = printed(&u, USAGE_CSV);
	CHECK_STR(s,
	    "owner,jobs,share_seconds,card_hours,mem_gib_hours,seat_ms\n"
	    "alice,2,4500.00000,1.250000,100.000000,450000000\n"
	    "\"bob,jr\",1,1234.56789,0.342936,0.500000,123456789\n"
	    "(total),3,5734.56789,1.592936,100.500000,573456789\n");
	free(s);

	j = usage_to_json(&u);
	s = json_dumps(json_object_get(j, "total"), JSON_COMPACT|
	    JSON_PRESERVE_ORDER|JSON_REAL_PRECISION(15));
	CHECK_STR(s, "{\"jobs\":3,\"seat_ms\":573456789,\"share_seconds\":"
	    "5734.56789,\"card_hours\":1.592935525,\"mem_gib_hours\":"
	    "100.5}");
	free(s);
	CHECK_STR(json_string_value(json_object_get(json_array_get(
	    json_object_get(j, "rows"), 1), "owner")), "bob,jr");
	CHECK_STR(json_string_value(json_object_get(j, "until_utc")),
	    "2026-11-02T00:00:00Z");
	CHECK(usage_from_json(j, &back, &cause) == 0);
	CHECK(back.nrows == 2 && back.by == USAGE_OWNER && back.since == T0);
	CHECK(back.nrows == 2 && strcmp(back.rows[1].key, "bob,jr") == 0 &&
	    back.rows[1].seat_ms == 123456789 &&
	    back.rows[1].mem_gib_hours == 0.5 && back.total.jobs == 3);
	usage_free(&back);
	json_object_set_new(json_array_get(json_object_get(j, "rows"), 0),
	    "jobs", json_string("x"));
	CHECK(usage_from_json(j, &back, &cause) == -1);
	CHECK_STR(cause, "the usage reply is malformed");
	free(cause);
	json_decref(j);
	usage_free(&u);
}

/* A deterministic generator, so a failure can be replayed. */
static uint64_t	 rng = 88172645463325252ULL;

static u_int
rnd(u_int n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return ((u_int)(rng % n));
}

struct naive {
	char		 key[32];
	int64_t		 seat_ms;
	unsigned __int128 mem;
	u_int		 jobs[64];
	u_int		 njobs;
};

static void
naive_add(struct naive *v, u_int *n, const char *key, u_int job, int64_t ms,
    u_int seats, uint64_t mem)
{
	u_int	 i, j;

	for (i = 0; i < *n && strcmp(v[i].key, key) != 0; i++)
		;
	if (i == *n) {
		memset(&v[i], 0, sizeof v[i]);
		snprintf(v[i].key, sizeof v[i].key, "%s", key);
		(*n)++;
	}
	v[i].seat_ms += (int64_t)seats * ms;
	v[i].mem += (unsigned __int128)mem * (uint64_t)ms;
	for (j = 0; j < v[i].njobs && v[i].jobs[j] != job; j++)
		;
	if (j == v[i].njobs && v[i].njobs < nitems(v[i].jobs))
		v[i].jobs[v[i].njobs++] = job;
}

/* Integrates every row of the file by brute force, one ms span at a time. */
static u_int
naive_usage(const char *path, enum usage_by by, int64_t a, int64_t b,
    struct naive *v)
{
	struct db	*db;
	struct dbstmt	*st;
	char		*cause = NULL, key[32];
	int64_t		 s, e, to;
	u_int		 n = 0;

	db = db_open(path, &cause);
	st = db_prepare(db, "SELECT job, owner, card, vendor, seats, mem, "
	    "start_ms, end_ms FROM ledger UNION ALL SELECT job, owner, card, "
	    "vendor, seats, mem, start_ms, max(start_ms, (SELECT v FROM "
	    "ledger_meta WHERE k = 'last_tick')) FROM ledger_open");
	while (db_step(st) == 1) {
		s = db_col_int(st, 6) > a ? db_col_int(st, 6) : a;
		e = db_col_int(st, 7) < b ? db_col_int(st, 7) : b;
		for (; s < e; s = to) {
			to = (s / LEDGER_DAY_MS + 1) * LEDGER_DAY_MS;
			if (to > e || by != USAGE_DAY)
				to = e;
			if (by == USAGE_OWNER)
				snprintf(key, sizeof key, "%s",
				    db_col_text(st, 1));
			else if (by == USAGE_JOB)
				snprintf(key, sizeof key, "j%lld",
				    (long long)db_col_int(st, 0));
			else if (by == USAGE_CARD)
				snprintf(key, sizeof key, "%lld",
				    (long long)db_col_int(st, 2));
			else if (by == USAGE_VENDOR)
				snprintf(key, sizeof key, "%s",
				    db_col_text(st, 3));
			else
				usage_format_day(s / LEDGER_DAY_MS, key);
			naive_add(v, &n, key, (u_int)db_col_int(st, 0), to - s,
			    (u_int)db_col_int(st, 4),
			    (uint64_t)db_col_int(st, 5));
		}
	}
	db_finalize(st);
	db_close(db);
	return (n);
}

static int
naive_match(const struct usage_row *r, const struct naive *v, u_int n)
{
	u_int	 i;

	for (i = 0; i < n; i++) {
		if (strcmp(r->key, v[i].key) != 0)
			continue;
		return (r->seat_ms == v[i].seat_ms && r->jobs == v[i].njobs &&
		    r->mem_gib_hours == (double)v[i].mem /
		    (1073741824.0 * 3600000.0));
	}
	return (0);
}

/* Random jobs over five days: starts, resizes, moves, ends, ticks. */
static struct ledger *
random_books(const char *path)
{
	static const char	*owners[] = { "ann", "ben", "cat", "dan" };
	struct ledger		*l;
	struct ledger_use	 u;
	char			*cause = NULL;
	int64_t			 t = T0 - 3 * HOUR;
	u_int			 i, job;

	l = ledger_open(path, &cause);
	for (i = 0; i < 3000; i++) {
		t += rnd(600000);
		job = 1 + rnd(40);
		memset(&u, 0, sizeof u);
		u.job = job;
		u.owner = owners[job % 4];
		u.card = rnd(3);
		u.vendor = u.card == 2 ? "amd" : "nvidia";
		u.model = "X";
		u.seats = 1 + rnd(100);
		u.ceiling = u.seats + rnd(101 - u.seats);
		u.mem = (uint64_t)rnd(1 << 20) * 81920 + rnd(4096);
		u.fence = "none";
		if (rnd(4) == 0)
			CHECK(ledger_end(l, job, t, &cause) == 0);
		else
			CHECK(ledger_set(l, job, &u, 1, t, &cause) == 0);
		if (rnd(8) == 0)
			CHECK(ledger_tick(l, t, &cause) == 0);
	}
	return (l);
}

static void
test_against_naive(void)
{
	struct ledger	*l;
	struct usage	 u;
	struct naive	 v[256];
	char		 path[] = "/tmp/gmux-test-usage.XXXXXX", *db, *cause;
	int64_t		 a, b, span = 6 * 24 * HOUR, seat, jobs;
	u_int		 i, k, n, by, bad = 0;

	CHECK(mkdtemp(path) != NULL);
	xasprintf(&db, "%s/l.db", path);
	l = random_books(db);
	for (i = 0; i < 200; i++) {
		a = T0 - 4 * HOUR + rnd(span);
		b = a + 1 + (i % 3 == 0 ? rnd(3 * 24) * HOUR : rnd(span));
		if (i % 5 == 0)
			a = a / LEDGER_DAY_MS * LEDGER_DAY_MS;
		by = i % 5;
		n = naive_usage(db, by, a, b, v);
		CHECK(ledger_usage(l, by, a, b, &u, &cause) == 0);
		seat = jobs = 0;
		for (k = 0; k < n; k++) {
			seat += v[k].seat_ms;
			jobs += v[k].njobs;
		}
		for (k = 0; k < u.nrows; k++) {
			if (!naive_match(&u.rows[k], v, n))
				bad++;
		}
		if (u.nrows != n || u.total.seat_ms != seat)
			bad++;
		if (by == USAGE_OWNER && u.total.jobs != jobs)
			bad++;
		usage_free(&u);
	}
	CHECK(bad == 0);
	ledger_close(l);
	free(db);
	xasprintf(&db, "rm -rf '%s'", path);
	CHECK(system(db) == 0);
	free(db);
}

/* The route's helper: the window from strings, ticked to now. */
static void
test_usage_json(void)
{
	struct ledger		*l;
	struct ledger_use	 u;
	char			 dir[] = "/tmp/gmux-test-usage.XXXXXX", *path;
	char			*cause = NULL, *s;
	json_t			*j;

	CHECK(mkdtemp(dir) != NULL);
	xasprintf(&path, "%s/l.db", dir);
	l = ledger_open(path, &cause);
	memset(&u, 0, sizeof u);
	u.job = 7;
	u.owner = "alice";
	u.vendor = "nvidia";
	u.model = "H100";
	u.fence = "none";
	u.seats = u.ceiling = 25;
	u.mem = 1ULL << 30;
	CHECK(ledger_set(l, 7, &u, 1, T0 - HOUR, &cause) == 0);
	j = ledger_usage_json(l, "2026-11-01", NULL, "day", T0 + 2 * HOUR,
	    &cause);
	CHECK(j != NULL);
	s = json_dumps(json_object_get(j, "rows"), JSON_COMPACT|
	    JSON_PRESERVE_ORDER|JSON_REAL_PRECISION(15));
	CHECK_STR(s, "[{\"day\":\"2026-11-01\",\"jobs\":1,\"seat_ms\":"
	    "180000000,\"share_seconds\":1800.0,\"card_hours\":0.5,"
	    "\"mem_gib_hours\":2.0}]");
	free(s);
	json_decref(j);
	CHECK(ledger_last_tick(l) == T0 + 2 * HOUR);
	CHECK(ledger_usage_json(l, "2026-11-01", NULL, "hour", T0, &cause) ==
	    NULL);
	CHECK_STR(cause, "'hour' is not one of owner, job, card, vendor, day");
	free(cause);
	cause = NULL;
	CHECK(ledger_usage_json(l, "tomorrow", NULL, NULL, T0, &cause) ==
	    NULL);
	free(cause);
	ledger_close(l);
	free(path);
	xasprintf(&path, "rm -rf '%s'", dir);
	CHECK(system(path) == 0);
	free(path);
}

/* Is step i of s what ledger_usage says for that step alone? */
static int
series_step_ok(struct ledger *l, const struct usage_series *s, u_int i)
{
	struct usage	 u;
	char		*cause = NULL;
	int64_t		 a = s->since + s->step * i, got, want = 0, all = 0;
	u_int		 k, r;
	int		 ok = 1;

	if (ledger_usage(l, s->by, a, a + s->step, &u, &cause) != 0)
		return (0);
	for (r = 0; r < u.nrows; r++) {
		if (s->only != NULL && strcmp(u.rows[r].key, s->only) != 0)
			continue;
		for (k = 0; k < s->nkeys; k++) {
			if (strcmp(s->keys[k], u.rows[r].key) == 0)
				break;
		}
		got = k < s->nkeys ? s->seat_ms[(size_t)k * s->n + i] : 0;
		ok &= got == u.rows[r].seat_ms;
		want += u.rows[r].seat_ms;
	}
	/* and nothing more than those rows */
	for (k = 0; k < s->nkeys; k++)
		all += s->seat_ms[(size_t)k * s->n + i];
	usage_free(&u);
	return (ok && all == want);
}

/* The dashboard's series: each step as GET /v1/usage integrates it. */
static void
test_series_against_usage(void)
{
	struct ledger		*l;
	struct usage_series	 s;
	char			 path[] = "/tmp/gmux-test-series.XXXXXX", *db;
	char			*cause = NULL;
	u_int			 i, k, bad = 0, keys = 0;

	CHECK(mkdtemp(path) != NULL);
	xasprintf(&db, "%s/l.db", path);
	l = random_books(db);
	for (i = 0; i < 40; i++) {
		memset(&s, 0, sizeof s);
		s.by = i % 2 ? USAGE_CARD : USAGE_OWNER;
		s.only = i % 4 == 2 ? "ben" : NULL;
		s.since = T0 - 4 * HOUR + rnd(5 * 24) * HOUR + rnd(3600000);
		s.step = 1 + rnd(3) * HOUR + rnd(3600000);
		s.n = 1 + rnd(40);
		if (i % 5 == 0) {	/* whole days: the rollup's way */
			s.since = s.since / LEDGER_DAY_MS * LEDGER_DAY_MS;
			s.step = LEDGER_DAY_MS;
			s.n = 1 + rnd(6);
		}
		CHECK(ledger_usage_series(l, &s, &cause) == 0);
		for (k = 0; k < s.n; k++)
			bad += !series_step_ok(l, &s, k);
		for (k = 0; s.only != NULL && k < s.nkeys; k++)
			bad += strcmp(s.keys[k], "ben") != 0;
		keys += s.nkeys;
		usage_series_free(&s);
	}
	CHECK(bad == 0);
	CHECK(keys > 0);
	ledger_close(l);
	free(db);
	xasprintf(&db, "rm -rf '%s'", path);
	CHECK(system(db) == 0);
	free(db);
}

int
main(void)
{
	RUN(test_parse_time);
	RUN(test_window);
	RUN(test_format_time);
	RUN(test_print);
	RUN(test_against_naive);
	RUN(test_usage_json);
	RUN(test_series_against_usage);
	UNIT_EXIT();
}
