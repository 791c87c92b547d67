/*
 * test-ledger.c: the books with exact figures: resize, preemption, burst,
 * stop, a crash and restart, the hash chain against tampering, pruning.
 */

#include <sys/stat.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "ledger-int.h"
#include "unit.h"

#define T0	1793491200000LL		/* 2026-11-01T00:00:00Z */
#define SEC	1000LL
#define MIN	(60 * SEC)
#define HOUR	(60 * MIN)
#define GIB	(1ULL << 30)

static char	 dir[] = "/tmp/gmux-test-ledger.XXXXXX";
static u_int	 ndb;

static void
rm_dir(void)
{
	char	*cmd;

	xasprintf(&cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "%s failed\n", cmd);
	free(cmd);
}

/* A fresh database path in the test's directory; caller frees. */
static char *
new_path(void)
{
	char	*p;

	xasprintf(&p, "%s/ledger%u.db", dir, ndb++);
	return (p);
}

static struct ledger_use
use(u_int job, const char *owner, u_int card, u_int seats, uint64_t mem)
{
	struct ledger_use	 u;

	memset(&u, 0, sizeof u);
	u.job = job;
	u.owner = owner;
	u.card = card;
	u.vendor = card < 2 ? "nvidia" : "amd";
	u.model = card < 2 ? "H100" : "MI300X";
	u.seats = seats;
	u.ceiling = seats;
	u.mem = mem;
	u.fence = "none";
	return (u);
}

static void
set1(struct ledger *l, struct ledger_use u, int64_t t)
{
	char	*cause = NULL;

	CHECK(ledger_set(l, u.job, &u, 1, t, &cause) == 0);
	if (cause != NULL)
		fprintf(stderr, "%s\n", cause);
	free(cause);
}

static void
end1(struct ledger *l, u_int job, int64_t t)
{
	char	*cause = NULL;

	CHECK(ledger_end(l, job, t, &cause) == 0);
	free(cause);
}

static void
tick(struct ledger *l, int64_t t)
{
	char	*cause = NULL;

	CHECK(ledger_tick(l, t, &cause) == 0);
	free(cause);
}

/* The row for key in a report, or NULL. */
static const struct usage_row *
row(const struct usage *u, const char *key)
{
	u_int	 i;

	for (i = 0; i < u->nrows; i++) {
		if (strcmp(u->rows[i].key, key) == 0)
			return (&u->rows[i]);
	}
	return (NULL);
}

static void
query(struct ledger *l, enum usage_by by, int64_t a, int64_t b,
    struct usage *u)
{
	char	*cause = NULL;

	CHECK(ledger_usage(l, by, a, b, u, &cause) == 0);
	free(cause);
}

/* Runs SQL on the ledger's file behind its back, as a tamperer would. */
static void
tamper(const char *path, const char *sql)
{
	struct db	*db;
	char		*cause = NULL;

	db = db_open(path, &cause);
	CHECK(db != NULL);
	CHECK(db_exec(db, "DROP TRIGGER IF EXISTS ledger_append_only", NULL) ==
	    0);
	if (db_exec(db, sql, &cause) != 0)
		fprintf(stderr, "tamper: %s\n", cause);
	free(cause);
	db_close(db);
}

static int64_t
count_rows(const char *path, const char *table)
{
	struct db	*db;
	struct dbstmt	*st;
	char		*sql, *cause = NULL;
	int64_t		 n = -1;

	db = db_open(path, &cause);
	xasprintf(&sql, "SELECT count(*) FROM %s", table);
	st = db_prepare(db, sql);
	if (db_step(st) == 1)
		n = db_col_int(st, 0);
	db_finalize(st);
	db_close(db);
	free(sql);
	return (n);
}

/* 25% and 20G for an hour, then 50% and 40G for two hours. */
static void
test_resize(void)
{
	struct ledger		*l;
	struct usage		 u;
	const struct usage_row	*r;
	char			*path = new_path(), *cause = NULL;
	int64_t			 n;

	l = ledger_open(path, &cause);
	CHECK(l != NULL);
	set1(l, use(1, "alice", 0, 25, 20 * GIB), T0);
	set1(l, use(1, "alice", 0, 25, 20 * GIB), T0 + 10 * MIN); /* same */
	set1(l, use(1, "alice", 0, 50, 40 * GIB), T0 + HOUR);
	end1(l, 1, T0 + 3 * HOUR);
	CHECK(count_rows(path, "ledger") == 2);
	CHECK(count_rows(path, "ledger_open") == 0);

	query(l, USAGE_OWNER, T0, T0 + LEDGER_DAY_MS, &u);
	CHECK(u.nrows == 1);
	CHECK((r = row(&u, "alice")) != NULL);
	CHECK(r != NULL && r->seat_ms == 25 * HOUR + 50 * 2 * HOUR);
	CHECK(r != NULL && r->seat_ms == 450000000);	/* 1.25 card-hours */
	CHECK(r != NULL && r->mem_gib_hours == 100.0);
	CHECK(r != NULL && r->jobs == 1);
	CHECK(u.total.seat_ms == 450000000 && u.total.jobs == 1);
	usage_free(&u);

	/* Clipped: 30 minutes either side of the resize. */
	query(l, USAGE_JOB, T0 + 30 * MIN, T0 + 90 * MIN, &u);
	CHECK((r = row(&u, "j1")) != NULL);
	CHECK(r != NULL && r->seat_ms == 25 * 30 * MIN + 50 * 30 * MIN);
	CHECK(r != NULL && r->mem_gib_hours == 30.0);
	usage_free(&u);

	/* A window after the job: nothing, and no job counted. */
	query(l, USAGE_OWNER, T0 + 3 * HOUR, T0 + 4 * HOUR, &u);
	CHECK(u.nrows == 0 && u.total.jobs == 0 && u.total.seat_ms == 0);
	usage_free(&u);

	CHECK(ledger_verify(l, &n, &cause) == 0 && n == 2);
	ledger_close(l);
	free(path);
}

/*
 * Preempted at 10 minutes (the close is at the preempt time), requeued and
 * started again at 20 minutes on another card; stopped at 50 minutes.
 */
static void
test_preempt_and_stop(void)
{
	struct ledger		*l;
	struct usage		 u;
	const struct usage_row	*r;
	char			*path = new_path(), *cause = NULL;

	l = ledger_open(path, &cause);
	set1(l, use(2, "bob", 0, 50, 10 * GIB), T0);
	set1(l, use(3, "carol", 1, 100, 80 * GIB), T0);
	end1(l, 2, T0 + 10 * MIN);			/* preempted */
	set1(l, use(2, "bob", 2, 50, 10 * GIB), T0 + 20 * MIN);
	end1(l, 2, T0 + 50 * MIN);			/* stopped */
	end1(l, 3, T0 + HOUR);

	query(l, USAGE_JOB, T0, T0 + HOUR, &u);
	CHECK(u.nrows == 2);
	CHECK((r = row(&u, "j2")) != NULL);
	CHECK(r != NULL && r->seat_ms == 50 * 40 * MIN);
	CHECK(r != NULL && r->jobs == 1);
	CHECK((r = row(&u, "j3")) != NULL);
	CHECK(r != NULL && r->seat_ms == 100 * HOUR);
	CHECK(u.total.seat_ms == 50 * 40 * MIN + 100 * HOUR);
	CHECK(u.total.jobs == 2);
	usage_free(&u);

	query(l, USAGE_CARD, T0, T0 + HOUR, &u);
	CHECK(u.nrows == 3);
	CHECK(strcmp(u.rows[0].key, "0") == 0 && u.rows[0].seat_ms ==
	    50 * 10 * MIN);
	CHECK(strcmp(u.rows[1].key, "1") == 0 && u.rows[1].seat_ms ==
	    100 * HOUR);
	CHECK(strcmp(u.rows[2].key, "2") == 0 && u.rows[2].seat_ms ==
	    50 * 30 * MIN);
	usage_free(&u);

	query(l, USAGE_VENDOR, T0, T0 + HOUR, &u);
	CHECK(u.nrows == 2);
	CHECK((r = row(&u, "amd")) != NULL && r->seat_ms == 50 * 30 * MIN &&
	    r->jobs == 1);
	CHECK((r = row(&u, "nvidia")) != NULL && r->jobs == 2);
	usage_free(&u);
	ledger_close(l);
	free(path);
}

/* The guarantee is billed; the ceiling is recorded and closes on change. */
static void
test_burst(void)
{
	struct ledger		*l;
	struct ledger_use	 b;
	struct usage		 u;
	char			*path = new_path(), *cause = NULL;

	l = ledger_open(path, &cause);
	b = use(4, "dave", 0, 25, 20 * GIB);
	b.ceiling = 100;
	set1(l, b, T0);
	b.ceiling = 60;
	set1(l, b, T0 + HOUR);
	end1(l, 4, T0 + 2 * HOUR);
	query(l, USAGE_OWNER, T0, T0 + LEDGER_DAY_MS, &u);
	CHECK(u.nrows == 1 && u.rows[0].seat_ms == 25 * 2 * HOUR);
	usage_free(&u);
	CHECK(count_rows(path, "ledger WHERE ceiling = 100 AND seats = 25") ==
	    1);
	CHECK(count_rows(path, "ledger WHERE ceiling = 60") == 1);

	/* Refused: a ceiling below the guarantee, one card twice. */
	b.ceiling = 10;
	CHECK(ledger_set(l, 4, &b, 1, T0, &cause) == -1);
	free(cause);
	ledger_close(l);
	free(path);
}

/* Two cards at once; then one of them is given up. */
static void
test_multi_card(void)
{
	struct ledger		*l;
	struct ledger_use	 two[2];
	struct usage		 u;
	char			*path = new_path(), *cause = NULL;

	l = ledger_open(path, &cause);
	two[0] = use(5, "erin", 0, 100, 80 * GIB);
	two[1] = use(5, "erin", 1, 100, 80 * GIB);
	CHECK(ledger_set(l, 5, two, 2, T0, &cause) == 0);
	CHECK(ledger_set(l, 5, two, 1, T0 + HOUR, &cause) == 0);
	two[1] = two[0];
	CHECK(ledger_set(l, 5, two, 2, T0, &cause) == -1);	/* twice */
	free(cause);
	end1(l, 5, T0 + 2 * HOUR);
	query(l, USAGE_CARD, T0, T0 + LEDGER_DAY_MS, &u);
	CHECK(u.nrows == 2 && u.rows[0].seat_ms == 100 * 2 * HOUR &&
	    u.rows[1].seat_ms == 100 * HOUR && u.total.jobs == 1);
	usage_free(&u);
	ledger_close(l);
	free(path);
}

/* Starts job 6 at T0 and ticks to T0 + 6 s, then "crashes". */
static char *
crashed(void)
{
	struct ledger	*l;
	struct usage	 u;
	char		*path = new_path(), *cause = NULL;
	int64_t		 t;

	l = ledger_open(path, &cause);
	set1(l, use(6, "fred", 0, 50, 10 * GIB), T0);
	for (t = T0 + SEC; t <= T0 + 6 * SEC; t += SEC)
		tick(l, t);
	query(l, USAGE_OWNER, T0, T0 + HOUR, &u);
	CHECK(u.total.seat_ms == 50 * 6 * SEC);
	usage_free(&u);
	ledger_close(l);	/* as kill -9 would leave it: nothing ended */
	return (path);
}

static void
test_crash(void)
{
	struct ledger	*l;
	struct usage	 u;
	char		*path, *cause = NULL;

	/* Restarted; the job survived and is re-adopted: no gap. */
	path = crashed();
	l = ledger_open(path, &cause);
	query(l, USAGE_OWNER, T0, T0 + HOUR, &u);
	CHECK(u.total.seat_ms == 50 * 6 * SEC);		/* written through */
	usage_free(&u);
	CHECK(ledger_adopt(l, 6) == 1);
	tick(l, T0 + MIN);
	end1(l, 6, T0 + 2 * MIN);
	query(l, USAGE_OWNER, T0, T0 + HOUR, &u);
	CHECK(u.total.seat_ms == 50 * 2 * MIN);
	usage_free(&u);
	CHECK(count_rows(path, "ledger") == 1);
	ledger_close(l);
	free(path);

	/* The job ended while the daemon was down: its keeper's real end. */
	path = crashed();
	l = ledger_open(path, &cause);
	end1(l, 6, T0 + 30 * SEC);
	tick(l, T0 + MIN);
	query(l, USAGE_OWNER, T0, T0 + HOUR, &u);
	CHECK(u.total.seat_ms == 50 * 30 * SEC);
	usage_free(&u);
	ledger_close(l);
	free(path);

	/* Nobody claims it: closed at the last tick before the crash. */
	path = crashed();
	l = ledger_open(path, &cause);
	tick(l, T0 + MIN);
	query(l, USAGE_OWNER, T0, T0 + HOUR, &u);
	CHECK(u.total.seat_ms == 50 * 6 * SEC);
	usage_free(&u);
	CHECK(count_rows(path, "ledger WHERE end_ms = 1793491206000") == 1);
	CHECK(count_rows(path, "ledger_open") == 0);
	ledger_close(l);
	free(path);
}

/* Six closed rows over three days (one spans midnight). */
static char *
six_rows(void)
{
	struct ledger	*l;
	char		*path = new_path(), *cause = NULL;
	u_int		 i;

	l = ledger_open(path, &cause);
	for (i = 0; i < 6; i++) {
		set1(l, use(10 + i, i % 2 ? "alice" : "bob", i % 3,
		    10 * (i + 1), GIB), T0 + (int64_t)i * 12 * HOUR);
		end1(l, 10 + i, T0 + (int64_t)i * 12 * HOUR + 13 * HOUR);
	}
	ledger_close(l);
	return (path);
}

static void
verify_fails(const char *path, const char *sql, const char *want)
{
	struct ledger	*l;
	char		*cause = NULL;
	int64_t		 n;

	if (sql != NULL)
		tamper(path, sql);
	l = ledger_open(path, &cause);
	CHECK(l != NULL);
	CHECK(ledger_verify(l, &n, &cause) == -1);
	CHECK(cause != NULL && strncmp(cause, want, strlen(want)) == 0);
	if (cause != NULL && strncmp(cause, want, strlen(want)) != 0)
		fprintf(stderr, "cause: %s\n", cause);
	free(cause);
	ledger_close(l);
}

static void
test_chain(void)
{
	struct ledger	*l;
	char		*path, *cause = NULL;
	int64_t		 n;

	path = six_rows();
	l = ledger_open(path, &cause);
	CHECK(ledger_verify(l, &n, &cause) == 0 && n == 6);
	/* Closed rows cannot be rewritten through SQLite's own checks. */
	CHECK(db_exec(ledger_db(l), "UPDATE ledger SET seats = 1", &cause) ==
	    -1);
	free(cause);
	ledger_close(l);

	verify_fails(path, "UPDATE ledger SET seats = 99 WHERE seq = 3",
	    "row 3 (j12 on card 2 from 2026-11-02T00:00:00Z): does not match");
	free(path);

	path = six_rows();
	verify_fails(path, "DELETE FROM ledger WHERE seq = 2",
	    "row 2: missing (deleted); the next row is 3");
	free(path);

	path = six_rows();
	verify_fails(path, "UPDATE ledger SET seq = 100 WHERE seq = 4;"
	    "UPDATE ledger SET seq = 4 WHERE seq = 5;"
	    "UPDATE ledger SET seq = 5 WHERE seq = 100;",
	    "row 4 (j14 on card 1 from 2026-11-03T00:00:00Z): does not match");
	free(path);

	path = six_rows();
	verify_fails(path, "DELETE FROM ledger WHERE seq = 6",
	    "row 6: missing (deleted); the chain ends at 6");
	free(path);

	path = six_rows();
	verify_fails(path, "UPDATE ledger_rollup SET seat_ms = seat_ms + 1 "
	    "WHERE day = 20760", "day 2026-11-03: the rollup");
	free(path);

	path = six_rows();
	verify_fails(path, "DELETE FROM ledger_day WHERE seq = 2 AND "
	    "day = 20759", "the day index has 8 entries");
	free(path);
}

static void
test_prune(void)
{
	struct ledger		*l;
	struct usage		 u;
	struct ledger_total	*t;
	char			*path, *csv, *cause = NULL, *text;
	int64_t			 n, before;
	u_int			 nt;
	size_t			 len;

	path = six_rows();
	xasprintf(&csv, "%s.export.csv", path);
	l = ledger_open(path, &cause);
	query(l, USAGE_OWNER, T0, T0 + 4 * LEDGER_DAY_MS, &u);
	before = u.total.seat_ms;
	usage_free(&u);

	/* Rows 1 and 2 ended by T0 + 36h; row 3 ends at T0 + 37h. */
	CHECK(ledger_prune(l, T0 + 36 * HOUR, csv, &n, &cause) == 0);
	CHECK(n == 2);
	CHECK(ledger_verify(l, &n, &cause) == 0 && n == 4);
	CHECK(ledger_meta_int(l, "anchor_seq") == 2);
	text = read_file(csv, 1 << 20, &len, &cause);
	CHECK(text != NULL && strncmp(text, "seq,job,owner,card,", 19) == 0);
	CHECK(text != NULL && strstr(text, "\n1,10,bob,0,nvidia,H100,10,10,"
	    "1073741824,none,1793491200000,1793538000000,0000000000") != NULL);
	CHECK(text != NULL && strstr(text, "\n2,11,alice,") != NULL);
	CHECK(text != NULL && strstr(text, "\n3,") == NULL);
	free(text);

	/* What remains of the first days still adds up exactly. */
	query(l, USAGE_OWNER, T0, T0 + 4 * LEDGER_DAY_MS, &u);
	CHECK(u.total.seat_ms == before - 10 * 13 * HOUR - 20 * 13 * HOUR);
	usage_free(&u);
	query(l, USAGE_DAY, T0, T0 + 4 * LEDGER_DAY_MS, &u);
	CHECK(u.nrows == 3 && strcmp(u.rows[0].key, "2026-11-02") == 0);
	usage_free(&u);

	/* Counters never go down. */
	CHECK(ledger_totals(l, &t, &nt) == 0 && nt == 2);
	CHECK(nt == 2 && t[0].seat_ms + t[1].seat_ms == before);
	ledger_totals_free(t, nt);

	/* The export is never replaced. */
	CHECK(ledger_prune(l, T0 + 4 * LEDGER_DAY_MS, csv, &n, &cause) == -1);
	free(cause);
	cause = NULL;
	unlink(csv);
	CHECK(ledger_prune(l, T0 + 4 * LEDGER_DAY_MS, csv, &n, &cause) == 0);
	CHECK(n == 4 && ledger_verify(l, &n, &cause) == 0 && n == 0);
	ledger_close(l);
	unlink(csv);
	free(csv);
	free(path);
}

/* Six rows pruned into path: for tests/regress/test_ledger_export.py. */
static int
export_six(const char *path)
{
	struct ledger	*l;
	char		*db = six_rows(), *cause = NULL;
	int64_t		 n;

	l = ledger_open(db, &cause);
	if (ledger_prune(l, T0 + 4 * LEDGER_DAY_MS, path, &n, &cause) != 0) {
		fprintf(stderr, "%s\n", cause);
		return (1);
	}
	ledger_close(l);
	free(db);
	rm_dir();
	return (n == 6 ? 0 : 1);
}

int
main(int argc, char **argv)
{
	if (mkdtemp(dir) == NULL)
		return (1);
	if (argc == 3 && strcmp(argv[1], "--export") == 0)
		return (export_six(argv[2]));
	RUN(test_resize);
	RUN(test_preempt_and_stop);
	RUN(test_burst);
	RUN(test_multi_card);
	RUN(test_crash);
	RUN(test_chain);
	RUN(test_prune);
	if (unit_failed_tests == 0)
		rm_dir();
	UNIT_EXIT();
}
