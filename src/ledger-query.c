/*
 * ledger-query.c: integrating the books over a window [since, until).
 *
 * Whole UTC days inside the window are read from the rollup (one row per
 * day, job, card), the partial days at its edges from the closed intervals
 * that touch them (through the day index), clipped, and the open intervals
 * from memory, running to the last tick.  Every figure is an integer sum of
 * seats x ms and bytes x ms, so the result is exact and the same whichever
 * way a span was read; a query costs the days and jobs in the window, not
 * the rows.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "ledger-int.h"

typedef unsigned __int128 u128;

struct uq_group {
	char		*key;
	u_int		 jobs;
	int64_t		 seat_ms;
	u128		 mem;		/* byte-ms */
};

/* An open-addressing set of 64-bit keys (stored plus one; 0 is empty). */
struct uq_set {
	uint64_t	*v;
	u_int		 n;
	u_int		 size;		/* a power of two */
};

struct uq {
	enum usage_by	 by;
	struct uq_group	*g;
	u_int		 ng;
	u_int		*slot;		/* group index plus one; 0 is empty */
	u_int		 nslot;		/* a power of two */
	struct uq_set	 pairs;		/* group << 32 | job */
	struct uq_set	 jobs;
	struct uq_group	 total;
};

static uint64_t
uq_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (x);
}

static uint32_t
uq_hash_str(const char *s)
{
	uint32_t	 h = 2166136261U;

	for (; *s != '\0'; s++)
		h = (h ^ (u_char)*s) * 16777619U;
	return (h);
}

/* Adds k to the set; returns 1 if it was not there. */
static int
uq_set_add(struct uq_set *s, uint64_t k)
{
	uint64_t	*old = s->v;
	u_int		 i, oldsize = s->size;

	if ((s->n + 1) * 2 > s->size) {
		s->size = s->size ? s->size * 2 : 1024;
		s->v = xcalloc(s->size, sizeof *s->v);
		s->n = 0;
		for (i = 0; i < oldsize; i++) {
			if (old[i] != 0)
				uq_set_add(s, old[i] - 1);
		}
		free(old);
	}
	for (i = uq_mix(k) & (s->size - 1); s->v[i] != 0;
	    i = (i + 1) & (s->size - 1)) {
		if (s->v[i] == k + 1)
			return (0);
	}
	s->v[i] = k + 1;
	s->n++;
	return (1);
}

static void
uq_rehash(struct uq *q)
{
	u_int	 i, j;

	free(q->slot);
	q->nslot = q->nslot ? q->nslot * 2 : 256;
	q->slot = xcalloc(q->nslot, sizeof *q->slot);
	for (i = 0; i < q->ng; i++) {
		j = uq_hash_str(q->g[i].key) & (q->nslot - 1);
		while (q->slot[j] != 0)
			j = (j + 1) & (q->nslot - 1);
		q->slot[j] = i + 1;
	}
}

static u_int
uq_group(struct uq *q, const char *key)
{
	u_int	 i;

	if ((q->ng + 1) * 2 > q->nslot)
		uq_rehash(q);
	for (i = uq_hash_str(key) & (q->nslot - 1); q->slot[i] != 0;
	    i = (i + 1) & (q->nslot - 1)) {
		if (strcmp(q->g[q->slot[i] - 1].key, key) == 0)
			return (q->slot[i] - 1);
	}
	q->g = xreallocarray(q->g, q->ng + 1, sizeof *q->g);
	memset(&q->g[q->ng], 0, sizeof *q->g);
	q->g[q->ng].key = xstrdup(key);
	q->slot[i] = q->ng + 1;
	return (q->ng++);
}

/* The group key of a span; day is the UTC day it lies in. */
static const char *
uq_key(struct uq *q, u_int job, const char *owner, u_int card,
    const char *vendor, int64_t day, char *buf)
{
	switch (q->by) {
	case USAGE_OWNER:
		return (owner);
	case USAGE_VENDOR:
		return (vendor);
	case USAGE_JOB:
		snprintf(buf, 16, "j%u", job);
		return (buf);
	case USAGE_CARD:
		snprintf(buf, 16, "%u", card);
		return (buf);
	case USAGE_DAY:
		usage_format_day(day, buf);
		return (buf);
	}
	return ("");
}

/* Byte-ms stored as (hi, lo) in columns i and i + 1. */
static u128
uq_mem(struct dbstmt *st, int i)
{
	return (((u128)db_col_int(st, i) << LEDGER_LO_BITS) +
	    (uint64_t)db_col_int(st, i + 1));
}

static void
uq_add(struct uq *q, const char *key, u_int job, int64_t ms, int64_t seat_ms,
    u128 mem)
{
	struct uq_group	*g;
	u_int		 i;

	i = uq_group(q, key);
	g = &q->g[i];
	g->seat_ms += seat_ms;
	g->mem += mem;
	q->total.seat_ms += seat_ms;
	q->total.mem += mem;
	if (ms <= 0)
		return;
	if (uq_set_add(&q->pairs, (uint64_t)i << 32 | job)) {
		g->jobs++;
		/* A job is in one owner's (or job's) group only. */
		if (q->by == USAGE_OWNER || q->by == USAGE_JOB)
			q->total.jobs++;
		else if (uq_set_add(&q->jobs, job))
			q->total.jobs++;
	}
}

/* Adds use u over [a, b), split at UTC days when grouping by day. */
static void
uq_add_span(struct uq *q, const struct ledger_use *u, int64_t a, int64_t b)
{
	char	 buf[16];
	int64_t	 day, to;

	while (a < b) {
		day = ledger_day(a);
		to = b;
		if (q->by == USAGE_DAY && to > (day + 1) * LEDGER_DAY_MS)
			to = (day + 1) * LEDGER_DAY_MS;
		uq_add(q, uq_key(q, u->job, u->owner, u->card, u->vendor, day,
		    buf), u->job, to - a, (int64_t)u->seats * (to - a),
		    (u128)u->mem * (uint64_t)(to - a));
		a = to;
	}
}

/*
 * The columns a query reads: those its grouping does not need are
 * constants, so SQLite does not decode them.
 */
static char *
uq_sql(struct uq *q, const char *fmt)
{
	char	*sql;

	xasprintf(&sql, fmt, q->by == USAGE_CARD ? "card" : "0",
	    q->by == USAGE_OWNER ? "owner" : "''",
	    q->by == USAGE_VENDOR ? "vendor" : "''");
	return (sql);
}

static int
uq_rollup(struct uq *q, struct ledger *l, int64_t from, int64_t to)
{
	struct dbstmt	*st;
	char		 buf[16], *sql;
	int		 rc;

	sql = uq_sql(q, "SELECT day, job, %s, %s, %s, ms, seat_ms, mem_hi, "
	    "mem_lo FROM ledger_rollup WHERE day >= ? AND day < ?");
	st = db_prepare(ledger_db(l), sql);
	free(sql);
	db_bind_int(st, 1, from);
	db_bind_int(st, 2, to);
	while ((rc = db_step(st)) == 1) {
		uq_add(q, uq_key(q, (u_int)db_col_int(st, 1),
		    db_col_text(st, 3), (u_int)db_col_int(st, 2),
		    db_col_text(st, 4), db_col_int(st, 0), buf),
		    (u_int)db_col_int(st, 1), db_col_int(st, 5),
		    db_col_int(st, 6), uq_mem(st, 7));
	}
	db_finalize(st);
	return (rc);
}

/* The closed intervals that touch day, clipped to [a, b) within it. */
static int
uq_partial_day(struct uq *q, struct ledger *l, int64_t day, int64_t a,
    int64_t b)
{
	struct dbstmt		*st;
	struct ledger_use	 u;
	char			*sql;
	int64_t			 s, e;
	int			 rc;

	memset(&u, 0, sizeof u);
	sql = uq_sql(q, "SELECT job, %s, %s, %s, seats, mem, start_ms, end_ms "
	    "FROM ledger_day d JOIN ledger l ON l.seq = d.seq WHERE d.day = ? "
	    "AND start_ms < ? AND end_ms > ?");
	st = db_prepare(ledger_db(l), sql);
	free(sql);
	db_bind_int(st, 1, day);
	db_bind_int(st, 2, b);
	db_bind_int(st, 3, a);
	while ((rc = db_step(st)) == 1) {
		u.job = (u_int)db_col_int(st, 0);
		u.card = (u_int)db_col_int(st, 1);
		u.owner = db_col_text(st, 2);
		u.vendor = db_col_text(st, 3);
		u.seats = (u_int)db_col_int(st, 4);
		u.mem = (uint64_t)db_col_int(st, 5);
		s = db_col_int(st, 6);
		e = db_col_int(st, 7);
		uq_add_span(q, &u, s > a ? s : a, e < b ? e : b);
	}
	db_finalize(st);
	return (rc);
}

static void
uq_open(struct uq *q, struct ledger *l, int64_t since, int64_t until)
{
	const struct ledger_use	*u;
	int64_t			 s, e;
	u_int			 i;

	for (i = 0; (u = ledger_open_interval(l, i, &s)) != NULL; i++) {
		e = ledger_last_tick(l);
		uq_add_span(q, u, s > since ? s : since, e < until ? e : until);
	}
}

static int
uq_read(struct uq *q, struct ledger *l, int64_t since, int64_t until)
{
	int64_t	 first, last, fa, fb, day;

	first = ledger_day(since);
	last = ledger_day(until - 1);
	fa = ledger_day(since - 1) + 1;		/* whole days: [fa, fb) */
	fb = ledger_day(until);
	if (fa < fb && uq_rollup(q, l, fa, fb) == -1)
		return (-1);
	for (day = first; day <= last; day++) {
		if (day >= fa && day < fb) {
			day = fb - 1;
			continue;
		}
		if (uq_partial_day(q, l, day, since > day * LEDGER_DAY_MS ?
		    since : day * LEDGER_DAY_MS, until < (day + 1) *
		    LEDGER_DAY_MS ? until : (day + 1) * LEDGER_DAY_MS) == -1)
			return (-1);
	}
	uq_open(q, l, since, until);
	return (0);
}

static void
uq_free(struct uq *q, int keys)
{
	u_int	 i;

	for (i = 0; keys && i < q->ng; i++)
		free(q->g[i].key);
	free(q->g);
	free(q->slot);
	free(q->pairs.v);
	free(q->jobs.v);
}

static enum usage_by uq_sort_by;

static int
uq_cmp(const void *a, const void *b)
{
	const struct usage_row	*ra = a, *rb = b;
	long long		 na, nb;

	switch (uq_sort_by) {
	case USAGE_JOB:
	case USAGE_CARD:
		na = atoll(ra->key + (uq_sort_by == USAGE_JOB));
		nb = atoll(rb->key + (uq_sort_by == USAGE_JOB));
		return (na < nb ? -1 : na > nb);
	default:
		return (strcmp(ra->key, rb->key));
	}
}

static double
uq_gib_hours(u128 byte_ms)
{
	return ((double)byte_ms / (1073741824.0 * 3600000.0));
}

static void
uq_result(struct uq *q, struct usage *u)
{
	u_int	 i;

	u->rows = xcalloc(q->ng ? q->ng : 1, sizeof *u->rows);
	u->nrows = q->ng;
	for (i = 0; i < q->ng; i++) {
		u->rows[i].key = q->g[i].key;
		u->rows[i].jobs = q->g[i].jobs;
		u->rows[i].seat_ms = q->g[i].seat_ms;
		u->rows[i].mem_gib_hours = uq_gib_hours(q->g[i].mem);
	}
	uq_sort_by = q->by;
	qsort(u->rows, u->nrows, sizeof *u->rows, uq_cmp);
	u->total.key = xstrdup("total");
	u->total.jobs = q->total.jobs;
	u->total.seat_ms = q->total.seat_ms;
	u->total.mem_gib_hours = uq_gib_hours(q->total.mem);
}

/*
 * Integrates the books over [since, until), grouped by by.  Open intervals
 * count up to the last tick (tick first for up-to-the-second figures).
 * Fills u (usage_free it) or returns -1 with cause.
 */
int
ledger_usage(struct ledger *l, enum usage_by by, int64_t since, int64_t until,
    struct usage *u, char **cause)
{
	struct uq	 q;

	memset(u, 0, sizeof *u);
	u->by = by;
	u->since = since;
	u->until = until;
	memset(&q, 0, sizeof q);
	q.by = by;
	if (since < until && uq_read(&q, l, since, until) != 0) {
		xasprintf(cause, "usage: %s", db_error(ledger_db(l)));
		uq_free(&q, 1);
		return (-1);
	}
	uq_result(&q, u);	/* the rows take the keys */
	uq_free(&q, 0);
	return (0);
}

/*
 * The answer to GET /v1/usage?since=&until=&by= (each may be NULL): the
 * window is resolved with now, and the books are ticked first so that open
 * intervals count up to now.  Returns a new reference, or NULL and a cause
 * (bad input: a 400).
 */
json_t *
ledger_usage_json(struct ledger *l, const char *since_s, const char *until_s,
    const char *by_s, int64_t now, char **cause)
{
	struct usage	 u;
	enum usage_by	 by = USAGE_OWNER;
	int64_t		 since, until;
	json_t		*j;

	if (by_s != NULL && usage_by_from_name(by_s, &by, cause) != 0)
		return (NULL);
	if (usage_parse_window(since_s, until_s, now, &since, &until,
	    cause) != 0)
		return (NULL);
	if (ledger_tick(l, now, cause) != 0 ||
	    ledger_usage(l, by, since, until, &u, cause) != 0)
		return (NULL);
	j = usage_to_json(&u);
	usage_free(&u);
	return (j);
}

static int
uq_total_cmp(const void *a, const void *b)
{
	return (strcmp(((const struct ledger_total *)a)->owner,
	    ((const struct ledger_total *)b)->owner));
}

/*
 * All-time totals per owner, open intervals counted to the last tick,
 * sorted by owner.  The caller frees the array with ledger_totals_free.
 */
int
ledger_totals(struct ledger *l, struct ledger_total **out, u_int *nout)
{
	struct uq		 q;
	struct dbstmt		*st;
	const struct ledger_use	*u;
	int64_t			 s;
	u_int			 i;
	int			 rc;

	memset(&q, 0, sizeof q);
	q.by = USAGE_OWNER;
	st = db_prepare(ledger_db(l), "SELECT owner, seat_ms, mem_hi, mem_lo "
	    "FROM ledger_total");
	while ((rc = db_step(st)) == 1) {
		uq_add(&q, db_col_text(st, 0), 0, 0, db_col_int(st, 1),
		    uq_mem(st, 2));
	}
	db_finalize(st);
	for (i = 0; (u = ledger_open_interval(l, i, &s)) != NULL; i++)
		uq_add_span(&q, u, s, ledger_last_tick(l));
	*out = xcalloc(q.ng + 1, sizeof **out);
	for (i = 0; i < q.ng; i++) {
		(*out)[i].owner = q.g[i].key;
		(*out)[i].seat_ms = q.g[i].seat_ms;
		(*out)[i].mem_byte_seconds = (double)q.g[i].mem / 1000.0;
	}
	qsort(*out, q.ng, sizeof **out, uq_total_cmp);
	*nout = q.ng;
	uq_free(&q, 0);
	return (rc == -1 ? -1 : 0);
}

void
ledger_totals_free(struct ledger_total *v, u_int n)
{
	u_int	 i;

	for (i = 0; i < n; i++)
		free(v[i].owner);
	free(v);
}
