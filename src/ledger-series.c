/*
 * ledger-series.c: the books as a time series, for the dashboard's plots
 * (docs/ui.md): [since, since + n * step) cut into n steps, the guaranteed
 * seat-ms of each owner or card in each step.  One pass, as ledger-query.c
 * integrates one window: the closed intervals that touch each partial UTC
 * day are read through the day index, clipped to that day (so one that
 * spans days counts once in each), and spread over the steps; when steps
 * are whole UTC days, the days wholly inside come from the rollup; the
 * open intervals come from memory, up to the last tick.  The sums are
 * exact integers, the same as GET /v1/usage gives for each step alone.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "ledger-int.h"

struct series_acc {
	struct usage_series	*s;
	struct hmap		*index;		/* key -> its row plus one */
	char			 buf[16];
};

/* The row of key, made on first use. */
static int64_t *
series_row(struct series_acc *a, const char *key)
{
	struct usage_series	*s = a->s;
	uintptr_t		 i;

	if ((i = (uintptr_t)hmap_get(a->index, key)) != 0)
		return (&s->seat_ms[(i - 1) * s->n]);
	s->keys = xreallocarray(s->keys, s->nkeys + 1, sizeof *s->keys);
	s->keys[s->nkeys] = xstrdup(key);
	s->seat_ms = xreallocarray(s->seat_ms, (size_t)(s->nkeys + 1) * s->n,
	    sizeof *s->seat_ms);
	memset(&s->seat_ms[(size_t)s->nkeys * s->n], 0, s->n *
	    sizeof *s->seat_ms);
	hmap_put(a->index, s->keys[s->nkeys], (void *)(uintptr_t)
	    (s->nkeys + 1));
	s->nkeys++;
	return (&s->seat_ms[(s->nkeys - 1) * s->n]);
}

static const char *
series_key(struct series_acc *a, const char *owner, u_int card)
{
	if (a->s->by == USAGE_OWNER)
		return (owner);
	snprintf(a->buf, sizeof a->buf, "%u", card);
	return (a->buf);
}

/* Adds seats over [from, to) (clipped to the window) to key's steps. */
static void
series_add(struct series_acc *a, const char *owner, u_int card, u_int seats,
    int64_t from, int64_t to)
{
	struct usage_series	*s = a->s;
	int64_t			*row, end = s->since + s->step * s->n, b;
	int64_t			 i;

	if (s->only != NULL && strcmp(owner, s->only) != 0)
		return;
	if (from < s->since)
		from = s->since;
	if (to > end)
		to = end;
	if (from >= to)
		return;
	row = series_row(a, series_key(a, owner, card));
	for (i = (from - s->since) / s->step; from < to; i++) {
		b = s->since + (i + 1) * s->step;
		if (b > to)
			b = to;
		row[i] += (int64_t)seats * (b - from);
		from = b;
	}
}

/* The closed intervals that touch day, clipped to [a, b) within it. */
static int
series_partial_day(struct series_acc *a, struct ledger *l, int64_t day,
    int64_t from, int64_t to)
{
	struct dbstmt	*st;
	int64_t		 s, e;
	int		 rc;

	st = db_prepare(ledger_db(l), "SELECT owner, card, seats, start_ms, "
	    "end_ms FROM ledger_day d JOIN ledger l ON l.seq = d.seq WHERE "
	    "d.day = ? AND start_ms < ? AND end_ms > ?");
	db_bind_int(st, 1, day);
	db_bind_int(st, 2, to);
	db_bind_int(st, 3, from);
	while ((rc = db_step(st)) == 1) {
		s = db_col_int(st, 3);
		e = db_col_int(st, 4);
		series_add(a, db_col_text(st, 0), (u_int)db_col_int(st, 1),
		    (u_int)db_col_int(st, 2), s > from ? s : from,
		    e < to ? e : to);
	}
	db_finalize(st);
	return (rc);
}

/* Whole days [fa, fb) from the rollup: each is one step. */
static int
series_rollup(struct series_acc *a, struct ledger *l, int64_t fa, int64_t fb)
{
	struct usage_series	*s = a->s;
	struct dbstmt		*st;
	int64_t			 i, *row;
	int			 rc;

	st = db_prepare(ledger_db(l), "SELECT day, owner, card, seat_ms FROM "
	    "ledger_rollup WHERE day >= ? AND day < ?");
	db_bind_int(st, 1, fa);
	db_bind_int(st, 2, fb);
	while ((rc = db_step(st)) == 1) {
		if (s->only != NULL && strcmp(db_col_text(st, 1), s->only) != 0)
			continue;
		i = (db_col_int(st, 0) * LEDGER_DAY_MS - s->since) / s->step;
		row = series_row(a, series_key(a, db_col_text(st, 1),
		    (u_int)db_col_int(st, 2)));
		row[i] += db_col_int(st, 3);
	}
	db_finalize(st);
	return (rc);
}

static int
series_read(struct series_acc *a, struct ledger *l)
{
	struct usage_series	*s = a->s;
	const struct ledger_use	*u;
	int64_t			 until = s->since + s->step * s->n, day, fa, fb;
	int64_t			 from, to, start;
	u_int			 i;

	fa = fb = 0;		/* whole days from the rollup: [fa, fb) */
	if (s->step % LEDGER_DAY_MS == 0 && s->since % LEDGER_DAY_MS == 0) {
		fa = ledger_day(s->since);
		fb = ledger_day(until);
	}
	if (fa < fb && series_rollup(a, l, fa, fb) == -1)
		return (-1);
	for (day = ledger_day(s->since); day <= ledger_day(until - 1); day++) {
		if (day >= fa && day < fb)
			continue;
		from = day * LEDGER_DAY_MS > s->since ? day * LEDGER_DAY_MS :
		    s->since;
		to = (day + 1) * LEDGER_DAY_MS < until ? (day + 1) *
		    LEDGER_DAY_MS : until;
		if (series_partial_day(a, l, day, from, to) == -1)
			return (-1);
	}
	for (i = 0; (u = ledger_open_interval(l, i, &start)) != NULL; i++)
		series_add(a, u->owner, u->card, u->seats, start,
		    ledger_last_tick(l));
	return (0);
}

/*
 * Fills s's rows (by, since, step, n and only set by the caller; by is
 * USAGE_OWNER or USAGE_CARD).  Open intervals count up to the last tick.
 * Returns 0, or -1 with *cause.  usage_series_free frees the rows.
 */
int
ledger_usage_series(struct ledger *l, struct usage_series *s, char **cause)
{
	struct series_acc	 a;
	int			 rc;

	s->keys = NULL;
	s->nkeys = 0;
	s->seat_ms = NULL;
	if (s->n == 0 || s->step <= 0)
		return (0);
	memset(&a, 0, sizeof a);
	a.s = s;
	a.index = hmap_create();
	if ((rc = series_read(&a, l)) != 0)
		xasprintf(cause, "usage: %s", db_error(ledger_db(l)));
	hmap_free(a.index);
	return (rc);
}

void
usage_series_free(struct usage_series *s)
{
	u_int	 i;

	for (i = 0; i < s->nkeys; i++)
		free(s->keys[i]);
	free(s->keys);
	free(s->seat_ms);
	s->keys = NULL;
	s->seat_ms = NULL;
	s->nkeys = 0;
}
