/*
 * ledger.c: the usage books' database: its schema, transactions, metadata
 * and the tick.  The books are intervals: one job on one card under
 * unchanged terms (ledger-interval.c opens and closes them), closed ones
 * chained by hash (ledger-chain.c), integrated over windows by
 * ledger-query.c; docs/ledger.md tells the whole story.
 *
 * An open interval runs until the last tick.  All open intervals share that
 * end, so the write-through of every tick is one row (ledger_meta's
 * last_tick) in one transaction, whatever the number of running jobs; a
 * crash loses at most the time since the last tick.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "ledger-int.h"

#define LEDGER_MAX_MS	253402300800000LL	/* year 10000 */

static const char ledger_schema[] =
    "CREATE TABLE IF NOT EXISTS ledger ("
    " seq INTEGER PRIMARY KEY, job INTEGER NOT NULL, owner TEXT NOT NULL,"
    " card INTEGER NOT NULL, vendor TEXT NOT NULL, model TEXT NOT NULL,"
    " seats INTEGER NOT NULL, ceiling INTEGER NOT NULL, mem INTEGER NOT NULL,"
    " fence TEXT NOT NULL, start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL,"
    " hash TEXT NOT NULL);"
    "CREATE TRIGGER IF NOT EXISTS ledger_append_only BEFORE UPDATE ON ledger"
    " BEGIN SELECT RAISE(ABORT, 'closed intervals are never rewritten'); END;"
    "CREATE TABLE IF NOT EXISTS ledger_open ("
    " id INTEGER PRIMARY KEY, job INTEGER NOT NULL, owner TEXT NOT NULL,"
    " card INTEGER NOT NULL, vendor TEXT NOT NULL, model TEXT NOT NULL,"
    " seats INTEGER NOT NULL, ceiling INTEGER NOT NULL, mem INTEGER NOT NULL,"
    " fence TEXT NOT NULL, start_ms INTEGER NOT NULL);"
    /* Which closed intervals touch a UTC day: the partial days of a query. */
    "CREATE TABLE IF NOT EXISTS ledger_day ("
    " day INTEGER NOT NULL, seq INTEGER NOT NULL,"
    " PRIMARY KEY (day, seq)) WITHOUT ROWID;"
    /* Closed time per UTC day: the whole days of a query. */
    "CREATE TABLE IF NOT EXISTS ledger_rollup ("
    " day INTEGER NOT NULL, job INTEGER NOT NULL, card INTEGER NOT NULL,"
    " owner TEXT NOT NULL, vendor TEXT NOT NULL, ms INTEGER NOT NULL,"
    " seat_ms INTEGER NOT NULL, mem_hi INTEGER NOT NULL,"
    " mem_lo INTEGER NOT NULL,"
    " PRIMARY KEY (day, job, card, owner, vendor)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS ledger_total ("
    " owner TEXT PRIMARY KEY, seat_ms INTEGER NOT NULL,"
    " mem_hi INTEGER NOT NULL, mem_lo INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS ledger_meta ("
    " k TEXT PRIMARY KEY, v) WITHOUT ROWID;"
    "INSERT OR IGNORE INTO ledger_meta VALUES"
    " ('version', 1), ('last_tick', 0), ('head_seq', 0),"
    " ('head_hash', printf('%064d', 0)), ('anchor_seq', 0),"
    " ('anchor_hash', printf('%064d', 0));";

static void
ledger_prepare(struct ledger *l)
{
	l->st_meta_get = db_prepare(l->db, "SELECT v FROM ledger_meta "
	    "WHERE k = ?");
	l->st_meta_set = db_prepare(l->db, "INSERT OR REPLACE INTO ledger_meta "
	    "VALUES (?, ?)");
	l->st_tick = db_prepare(l->db, "UPDATE ledger_meta SET v = ? "
	    "WHERE k = 'last_tick'");
}

struct db *
ledger_db(struct ledger *l)
{
	return (l->db);
}

int64_t
ledger_meta_int(struct ledger *l, const char *k)
{
	int64_t	 v = 0;

	db_bind_text(l->st_meta_get, 1, k);
	if (db_step(l->st_meta_get) == 1)
		v = db_col_int(l->st_meta_get, 0);
	db_reset(l->st_meta_get);
	return (v);
}

/* Returns an allocated copy of a text value ("" if none); caller frees. */
char *
ledger_meta_text(struct ledger *l, const char *k)
{
	const char	*v = NULL;
	char		*s;

	db_bind_text(l->st_meta_get, 1, k);
	if (db_step(l->st_meta_get) == 1)
		v = db_col_text(l->st_meta_get, 0);
	s = xstrdup(v != NULL ? v : "");
	db_reset(l->st_meta_get);
	return (s);
}

/* Sets k to text if not NULL, else to the integer; -1 on failure. */
int
ledger_meta_set(struct ledger *l, const char *k, int64_t i, const char *text)
{
	int	 rc;

	db_bind_text(l->st_meta_set, 1, k);
	if (text != NULL)
		db_bind_text(l->st_meta_set, 2, text);
	else
		db_bind_int(l->st_meta_set, 2, i);
	rc = db_step(l->st_meta_set);
	db_reset(l->st_meta_set);
	return (rc == -1 ? -1 : 0);
}

/* Opens (creating) the ledger in the database at path. */
struct ledger *
ledger_open(const char *path, char **cause)
{
	struct ledger	*l;
	struct db	*db;

	if ((db = db_open(path, cause)) == NULL)
		return (NULL);
	if (db_exec(db, ledger_schema, cause) != 0) {
		db_close(db);
		return (NULL);
	}
	l = xcalloc(1, sizeof *l);
	l->db = db;
	ledger_prepare(l);
	ledger_intervals_prepare(l);
	if (ledger_reload(l) != 0) {
		xasprintf(cause, "%s: ledger state is damaged", path);
		ledger_close(l);
		return (NULL);
	}
	log_debug("%s: %s: %u open, head %lld, last tick %lld", __func__,
	    path, l->nopen, (long long)l->head_seq, (long long)l->last_tick);
	return (l);
}

void
ledger_close(struct ledger *l)
{
	if (l == NULL)
		return;
	ledger_intervals_free(l);
	db_finalize(l->st_meta_get);
	db_finalize(l->st_meta_set);
	db_finalize(l->st_tick);
	db_close(l->db);
	free(l);
}

int64_t
ledger_last_tick(struct ledger *l)
{
	return (l->last_tick);
}

/* The UTC day number of a time: days since 1970-01-01, rounded down. */
int64_t
ledger_day(int64_t ms)
{
	return (ms >= 0 ? ms / LEDGER_DAY_MS :
	    -((-ms + LEDGER_DAY_MS - 1) / LEDGER_DAY_MS));
}

/* Batches the next changes into one transaction until ledger_commit. */
int
ledger_begin(struct ledger *l)
{
	if (l->batch || db_begin(l->db) != 0)
		return (-1);
	l->batch = 1;
	return (0);
}

int
ledger_fail(struct ledger *l, char **cause)
{
	if (cause != NULL)
		xasprintf(cause, "ledger: %s", db_error(l->db));
	db_exec(l->db, "ROLLBACK", NULL);
	l->batch = 0;
	ledger_reload(l);
	return (-1);
}

/* Drops the changes since ledger_begin, in the books and in memory. */
void
ledger_rollback(struct ledger *l)
{
	ledger_fail(l, NULL);
}

int
ledger_commit(struct ledger *l, char **cause)
{
	l->batch = 0;
	if (db_commit(l->db) != 0)
		return (ledger_fail(l, cause));
	return (0);
}

int
ledger_txn_begin(struct ledger *l)
{
	return (l->batch ? 0 : db_begin(l->db));
}

int
ledger_txn_end(struct ledger *l, int rc, char **cause)
{
	if (rc != 0)
		return (ledger_fail(l, cause));
	if (!l->batch && db_commit(l->db) != 0)
		return (ledger_fail(l, cause));
	return (0);
}

int
ledger_check_time(int64_t t, char **cause)
{
	if (t < 0 || t >= LEDGER_MAX_MS) {
		xasprintf(cause, "ledger: time %lld out of range",
		    (long long)t);
		return (-1);
	}
	return (0);
}

/*
 * Writes through the end of every open interval: now.  Called once a
 * second by the daemon; the first call after a restart also closes the
 * intervals that no job claimed.
 */
int
ledger_tick(struct ledger *l, int64_t now, char **cause)
{
	int	 rc = 0;

	if (ledger_check_time(now, cause) != 0)
		return (-1);
	/* One statement is one transaction: no BEGIN needed for it alone. */
	if (l->swept && !l->batch) {
		db_bind_int(l->st_tick, 1, now);
		rc = db_step(l->st_tick);
		db_reset(l->st_tick);
		if (rc == -1)
			return (ledger_fail(l, cause));
		l->last_tick = now;
		return (0);
	}
	if (ledger_txn_begin(l) != 0)
		return (ledger_fail(l, cause));
	if (!l->swept)
		rc = ledger_sweep(l);
	if (rc == 0) {
		db_bind_int(l->st_tick, 1, now);
		rc = db_step(l->st_tick) == -1 ? -1 : 0;
		db_reset(l->st_tick);
	}
	if (ledger_txn_end(l, rc, cause) != 0)
		return (-1);
	l->swept = 1;
	l->last_tick = now;
	return (0);
}
