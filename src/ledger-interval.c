/*
 * ledger-interval.c: opening, continuing and closing the books' intervals.
 * Every job on every card is one open interval (a row in ledger_open, and
 * in memory) until its terms (share, burst ceiling, memory cap, card,
 * fence) change or it ends; then it is closed: appended to the ledger with
 * the next place in the hash chain, added to the day index, the daily
 * rollup and the per-owner totals, and never rewritten.
 *
 * After a restart the open rows are loaded unclaimed.  The daemon claims
 * those of the jobs it re-adopts (ledger_adopt or ledger_set) and closes
 * those of the jobs that ended while it was down at their real end
 * (ledger_end); the first tick closes whatever is left at the last tick
 * before the restart (ledger_sweep).
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "ledger-int.h"

#define LEDGER_MAX_MEM	(1ULL << 50)
#define LEDGER_LO_MASK	((1LL << LEDGER_LO_BITS) - 1)

#define LEDGER_USE_COLS "job, owner, card, vendor, model, seats, ceiling, " \
	"mem, fence"
/* Adds (hi, lo) pairs with the carry (SET sees the old row throughout). */
#define LEDGER_ADD_MEM \
	"mem_hi = mem_hi + excluded.mem_hi + (mem_lo + excluded.mem_lo) / " \
	"1099511627776, mem_lo = (mem_lo + excluded.mem_lo) % 1099511627776"
#define LEDGER_UPSERT_CELL "VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT DO " \
	"UPDATE SET ms = ms + excluded.ms, seat_ms = seat_ms + " \
	"excluded.seat_ms, " LEDGER_ADD_MEM

void
ledger_intervals_prepare(struct ledger *l)
{
	struct db	*db = l->db;

	l->st_open_ins = db_prepare(db, "INSERT INTO ledger_open ("
	    LEDGER_USE_COLS ", start_ms) VALUES (?,?,?,?,?,?,?,?,?,?) "
	    "RETURNING id");
	l->st_open_del = db_prepare(db, "DELETE FROM ledger_open WHERE id = ?");
	l->st_ins = db_prepare(db, "INSERT INTO ledger (seq, " LEDGER_USE_COLS
	    ", start_ms, end_ms, hash) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)");
	l->st_day = db_prepare(db, "INSERT INTO ledger_day VALUES (?, ?)");
	l->st_rollup = db_prepare(db, "INSERT INTO ledger_rollup "
	    LEDGER_UPSERT_CELL);
	l->st_total = db_prepare(db, "INSERT INTO ledger_total VALUES "
	    "(?,?,?,?) ON CONFLICT DO UPDATE SET "
	    "seat_ms = seat_ms + excluded.seat_ms, " LEDGER_ADD_MEM);
}

static void
ledger_use_copy(struct ledger_use *dst, const struct ledger_use *src)
{
	*dst = *src;
	dst->owner = xstrdup(src->owner);
	dst->vendor = xstrdup(src->vendor);
	dst->model = xstrdup(src->model);
	dst->fence = xstrdup(src->fence);
}

static void
ledger_use_clear(struct ledger_use *u)
{
	free((char *)u->owner);
	free((char *)u->vendor);
	free((char *)u->model);
	free((char *)u->fence);
}

static int
ledger_use_equal(const struct ledger_use *a, const struct ledger_use *b)
{
	return (a->job == b->job && a->card == b->card &&
	    a->seats == b->seats && a->ceiling == b->ceiling &&
	    a->mem == b->mem && strcmp(a->owner, b->owner) == 0 &&
	    strcmp(a->vendor, b->vendor) == 0 &&
	    strcmp(a->model, b->model) == 0 &&
	    strcmp(a->fence, b->fence) == 0);
}

/* Binds the nine use columns starting at parameter i. */
static void
ledger_bind_use(struct dbstmt *st, int i, const struct ledger_use *u)
{
	db_bind_int(st, i, u->job);
	db_bind_text(st, i + 1, u->owner);
	db_bind_int(st, i + 2, u->card);
	db_bind_text(st, i + 3, u->vendor);
	db_bind_text(st, i + 4, u->model);
	db_bind_int(st, i + 5, u->seats);
	db_bind_int(st, i + 6, u->ceiling);
	db_bind_int(st, i + 7, (int64_t)u->mem);
	db_bind_text(st, i + 8, u->fence);
}

/* Steps a write statement once and resets it; -1 on failure. */
static int
ledger_run(struct dbstmt *st)
{
	int	 rc;

	rc = db_step(st);
	db_reset(st);
	return (rc == -1 ? -1 : 0);
}

static void
ledger_free_open(struct ledger *l)
{
	u_int	 i;

	for (i = 0; i < l->nopen; i++)
		ledger_use_clear(&l->open[i].u);
	free(l->open);
	l->open = NULL;
	l->nopen = 0;
}

static struct ledger_iv *
ledger_add_open(struct ledger *l)
{
	struct ledger_iv	*iv;

	l->open = xreallocarray(l->open, l->nopen + 1, sizeof *l->open);
	iv = &l->open[l->nopen++];
	memset(iv, 0, sizeof *iv);
	return (iv);
}

/* Drops the open intervals from memory and the statements. */
void
ledger_intervals_free(struct ledger *l)
{
	ledger_free_open(l);
	db_finalize(l->st_open_ins);
	db_finalize(l->st_open_del);
	db_finalize(l->st_ins);
	db_finalize(l->st_day);
	db_finalize(l->st_rollup);
	db_finalize(l->st_total);
	db_finalize(l->st_check);
}

/*
 * Loads the head of the chain, the last tick and the open intervals from
 * the database, dropping what memory held: after open, or after a failed
 * transaction.  Rows are claimed only once the first tick has swept.
 */
int
ledger_reload(struct ledger *l)
{
	struct dbstmt		*st;
	struct ledger_iv	*iv;
	struct ledger_use	 u;
	char			*hex;
	int			 rc;

	ledger_free_open(l);
	l->last_tick = ledger_meta_int(l, "last_tick");
	l->head_seq = ledger_meta_int(l, "head_seq");
	hex = ledger_meta_text(l, "head_hash");
	rc = digest_from_hex(hex, l->head_hash);
	free(hex);
	if (rc != 0)
		return (-1);
	st = db_prepare(l->db, "SELECT id, " LEDGER_USE_COLS ", start_ms "
	    "FROM ledger_open ORDER BY id");
	while ((rc = db_step(st)) == 1) {
		u.job = (u_int)db_col_int(st, 1);
		u.owner = db_col_text(st, 2);
		u.card = (u_int)db_col_int(st, 3);
		u.vendor = db_col_text(st, 4);
		u.model = db_col_text(st, 5);
		u.seats = (u_int)db_col_int(st, 6);
		u.ceiling = (u_int)db_col_int(st, 7);
		u.mem = (uint64_t)db_col_int(st, 8);
		u.fence = db_col_text(st, 9);
		iv = ledger_add_open(l);
		iv->id = db_col_int(st, 0);
		ledger_use_copy(&iv->u, &u);
		iv->start = db_col_int(st, 10);
		iv->claimed = l->swept;
	}
	db_finalize(st);
	return (rc == -1 ? -1 : 0);
}

/* The i-th open interval and its start, or NULL past the last. */
const struct ledger_use *
ledger_open_interval(struct ledger *l, u_int i, int64_t *start)
{
	if (i >= l->nopen)
		return (NULL);
	*start = l->open[i].start;
	return (&l->open[i].u);
}

static void
ledger_bind_mem(struct dbstmt *st, int i, unsigned __int128 v)
{
	db_bind_int(st, i, (int64_t)(v >> LEDGER_LO_BITS));
	db_bind_int(st, i + 1, (int64_t)(v & LEDGER_LO_MASK));
}

/*
 * Adds what row r spent in UTC day (day number) to the rollup, or with
 * check to the temporary table against which verification compares it.
 */
int
ledger_rollup_add(struct ledger *l, const struct ledger_row *r, int64_t day,
    int check)
{
	struct dbstmt	*st = l->st_rollup;
	int64_t		 from, to, ms;

	if (check) {
		if (l->st_check == NULL) {
			l->st_check = db_prepare(l->db, "INSERT INTO "
			    "temp.ledger_check " LEDGER_UPSERT_CELL);
		}
		st = l->st_check;
	}

	from = day * LEDGER_DAY_MS;
	to = from + LEDGER_DAY_MS;
	ms = (r->end < to ? r->end : to) - (r->start > from ? r->start : from);
	if (ms <= 0)
		return (0);
	db_bind_int(st, 1, day);
	db_bind_int(st, 2, r->u.job);
	db_bind_int(st, 3, r->u.card);
	db_bind_text(st, 4, r->u.owner);
	db_bind_text(st, 5, r->u.vendor);
	db_bind_int(st, 6, ms);
	db_bind_int(st, 7, (int64_t)r->u.seats * ms);
	ledger_bind_mem(st, 8, (unsigned __int128)r->u.mem * (uint64_t)ms);
	return (ledger_run(st));
}

/* Appends a closed interval: the chain, the day index, rollup, totals. */
static int
ledger_append(struct ledger *l, const struct ledger_row *r)
{
	u_char		 h[DIGEST_LEN];
	char		 hex[DIGEST_HEX];
	int64_t		 day, ms = r->end - r->start;

	ledger_row_hash(l->head_hash, r, h);
	hex_encode(h, DIGEST_LEN, hex);
	db_bind_int(l->st_ins, 1, r->seq);
	ledger_bind_use(l->st_ins, 2, &r->u);
	db_bind_int(l->st_ins, 11, r->start);
	db_bind_int(l->st_ins, 12, r->end);
	db_bind_text(l->st_ins, 13, hex);
	if (ledger_run(l->st_ins) != 0)
		return (-1);
	for (day = ledger_day(r->start);
	    day <= ledger_day(r->end - 1); day++) {
		db_bind_int(l->st_day, 1, day);
		db_bind_int(l->st_day, 2, r->seq);
		if (ledger_run(l->st_day) != 0 ||
		    ledger_rollup_add(l, r, day, 0) != 0)
			return (-1);
	}
	db_bind_text(l->st_total, 1, r->u.owner);
	db_bind_int(l->st_total, 2, (int64_t)r->u.seats * ms);
	ledger_bind_mem(l->st_total, 3, (unsigned __int128)r->u.mem *
	    (uint64_t)ms);
	if (ledger_run(l->st_total) != 0)
		return (-1);
	if (ledger_meta_set(l, "head_seq", r->seq, NULL) != 0 ||
	    ledger_meta_set(l, "head_hash", 0, hex) != 0)
		return (-1);
	l->head_seq = r->seq;
	memcpy(l->head_hash, h, DIGEST_LEN);
	return (0);
}

/*
 * Closes open interval i at end (never before its start).  An interval of
 * no length leaves no row: it carries no usage.
 */
static int
ledger_close_iv(struct ledger *l, u_int i, int64_t end)
{
	struct ledger_iv	*iv = &l->open[i];
	struct ledger_row	 r;

	if (end > iv->start) {
		r.seq = l->head_seq + 1;
		r.u = iv->u;
		r.start = iv->start;
		r.end = end;
		if (ledger_append(l, &r) != 0)
			return (-1);
	}
	db_bind_int(l->st_open_del, 1, iv->id);
	if (ledger_run(l->st_open_del) != 0)
		return (-1);
	log_debug("%s: j%u card %u [%lld, %lld)", __func__, iv->u.job,
	    iv->u.card, (long long)iv->start, (long long)end);
	ledger_use_clear(&iv->u);
	memmove(iv, iv + 1, (l->nopen - i - 1) * sizeof *iv);
	l->nopen--;
	return (0);
}

static int
ledger_open_iv(struct ledger *l, const struct ledger_use *u, int64_t start)
{
	struct ledger_iv	*iv;
	int64_t			 id;

	db_bind_int(l->st_open_ins, 10, start);
	ledger_bind_use(l->st_open_ins, 1, u);
	if (db_step(l->st_open_ins) != 1) {
		db_reset(l->st_open_ins);
		return (-1);
	}
	id = db_col_int(l->st_open_ins, 0);
	db_reset(l->st_open_ins);
	iv = ledger_add_open(l);
	iv->id = id;
	ledger_use_copy(&iv->u, u);
	iv->start = start;
	iv->claimed = 1;
	log_debug("%s: j%u card %u seats %u from %lld", __func__, u->job,
	    u->card, u->seats, (long long)start);
	return (0);
}

static int
ledger_check_uses(const struct ledger_use *uses, u_int n, char **cause)
{
	u_int	 i, j;

	for (i = 0; i < n; i++) {
		if (uses[i].owner == NULL || uses[i].vendor == NULL ||
		    uses[i].model == NULL || uses[i].fence == NULL)
			return (xasprintf(cause, "ledger: missing field"), -1);
		if (uses[i].seats > SEATS_PER_CARD ||
		    uses[i].ceiling > SEATS_PER_CARD ||
		    uses[i].ceiling < uses[i].seats)
			return (xasprintf(cause, "ledger: bad share"), -1);
		if (uses[i].mem > LEDGER_MAX_MEM)
			return (xasprintf(cause, "ledger: bad memory"), -1);
		for (j = 0; j < i; j++) {
			if (uses[j].card == uses[i].card)
				return (xasprintf(cause,
				    "ledger: card %u twice", uses[i].card), -1);
		}
	}
	return (0);
}

static const struct ledger_use *
ledger_find_use(const struct ledger_use *uses, u_int n, u_int card)
{
	u_int	 i;

	for (i = 0; i < n; i++) {
		if (uses[i].card == card)
			return (&uses[i]);
	}
	return (NULL);
}

static int
ledger_has_open(struct ledger *l, u_int job, u_int card)
{
	u_int	 i;

	for (i = 0; i < l->nopen; i++) {
		if (l->open[i].u.job == job && l->open[i].u.card == card)
			return (1);
	}
	return (0);
}

/* Closes or keeps job's open intervals against its new uses. */
static int
ledger_diff(struct ledger *l, u_int job, const struct ledger_use *uses,
    u_int n, int64_t now)
{
	const struct ledger_use	*u;
	u_int			 i = 0;

	while (i < l->nopen) {
		if (l->open[i].u.job != job) {
			i++;
			continue;
		}
		l->open[i].claimed = 1;
		u = ledger_find_use(uses, n, l->open[i].u.card);
		if (u != NULL && ledger_use_equal(u, &l->open[i].u)) {
			i++;
			continue;
		}
		if (ledger_close_iv(l, i, now) != 0)
			return (-1);
	}
	for (i = 0; i < n; i++) {
		if (!ledger_has_open(l, job, uses[i].card) &&
		    ledger_open_iv(l, &uses[i], now) != 0)
			return (-1);
	}
	return (0);
}

/*
 * Makes the books say that job holds exactly uses[0..n-1] (one per card)
 * from now: intervals whose terms are unchanged continue, the others close
 * at now and new ones open at now.  n = 0 closes them all.  One call per
 * job start, resize, card change or re-adoption.
 */
int
ledger_set(struct ledger *l, u_int job, const struct ledger_use *uses,
    u_int n, int64_t now, char **cause)
{
	u_int	 i;

	if (ledger_check_time(now, cause) != 0 ||
	    ledger_check_uses(uses, n, cause) != 0)
		return (-1);
	for (i = 0; i < n; i++) {
		if (uses[i].job != job)
			return (xasprintf(cause, "ledger: job mismatch"), -1);
	}
	if (ledger_txn_begin(l) != 0)
		return (ledger_fail(l, cause));
	return (ledger_txn_end(l, ledger_diff(l, job, uses, n, now), cause));
}

/* Closes all of job's intervals at end: when it ended, or was preempted. */
int
ledger_end(struct ledger *l, u_int job, int64_t end, char **cause)
{
	return (ledger_set(l, job, NULL, 0, end, cause));
}

/* Claims job's open intervals as they are; returns how many it has. */
u_int
ledger_adopt(struct ledger *l, u_int job)
{
	u_int	 i, n = 0;

	for (i = 0; i < l->nopen; i++) {
		if (l->open[i].u.job == job) {
			l->open[i].claimed = 1;
			n++;
		}
	}
	return (n);
}

/* Closes the intervals nobody claimed since the restart, at the last tick. */
int
ledger_sweep(struct ledger *l)
{
	u_int	 i = 0;

	while (i < l->nopen) {
		if (l->open[i].claimed) {
			i++;
			continue;
		}
		log_debug("%s: j%u was not re-adopted", __func__,
		    l->open[i].u.job);
		if (ledger_close_iv(l, i, l->last_tick) != 0)
			return (-1);
	}
	return (0);
}
