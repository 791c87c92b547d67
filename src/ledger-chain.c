/*
 * ledger-chain.c: the hash chain over closed intervals, its verification,
 * and pruning (export first, then delete, keeping the chain verifiable).
 *
 * Row n's hash is SHA-256 over row n-1's hash and row n's fields in the
 * canonical encoding below (docs/ledger.md); row 1 (or the first row after
 * a prune) chains to the anchor, 32 zero bytes until a prune stores the
 * last pruned row's hash there.
 */

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "ledger-int.h"

#define LEDGER_CHAIN_TAG	"gmux-ledger-1"
#define LEDGER_ROW_COLS	"seq, job, owner, card, vendor, model, seats, " \
	"ceiling, mem, fence, start_ms, end_ms, hash"

struct chain_buf {
	u_char		*p;
	size_t		 len;
	size_t		 size;
};

static void
chain_put(struct chain_buf *b, const void *p, size_t len)
{
	if (b->len + len > b->size) {
		b->size = (b->len + len) * 2;
		b->p = xrealloc(b->p, b->size);
	}
	memcpy(b->p + b->len, p, len);
	b->len += len;
}

static void
chain_put_u64(struct chain_buf *b, uint64_t v)
{
	u_char	 be[8];
	int	 i;

	for (i = 7; i >= 0; i--, v >>= 8)
		be[i] = (u_char)(v & 0xff);
	chain_put(b, be, sizeof be);
}

static void
chain_put_str(struct chain_buf *b, const char *s)
{
	size_t	 len = strlen(s);
	u_char	 be[4];

	be[0] = (u_char)(len >> 24);
	be[1] = (u_char)(len >> 16);
	be[2] = (u_char)(len >> 8);
	be[3] = (u_char)len;
	chain_put(b, be, sizeof be);
	chain_put(b, s, len);
}

/*
 * The canonical encoding: the tag, the previous hash, then the fields in
 * this order, integers as 8 bytes big-endian (two's complement), strings
 * as a 4-byte big-endian length and the bytes.
 */
void
ledger_row_hash(const u_char *prev, const struct ledger_row *r, u_char *out)
{
	struct chain_buf	 b = { NULL, 0, 0 };

	chain_put(&b, LEDGER_CHAIN_TAG, strlen(LEDGER_CHAIN_TAG));
	chain_put(&b, prev, DIGEST_LEN);
	chain_put_u64(&b, (uint64_t)r->seq);
	chain_put_u64(&b, r->u.job);
	chain_put_str(&b, r->u.owner);
	chain_put_u64(&b, r->u.card);
	chain_put_str(&b, r->u.vendor);
	chain_put_str(&b, r->u.model);
	chain_put_u64(&b, r->u.seats);
	chain_put_u64(&b, r->u.ceiling);
	chain_put_u64(&b, r->u.mem);
	chain_put_str(&b, r->u.fence);
	chain_put_u64(&b, (uint64_t)r->start);
	chain_put_u64(&b, (uint64_t)r->end);
	digest_bytes(b.p, b.len, out);
	free(b.p);
}

/* Reads a row selected with LEDGER_ROW_COLS from column i on. */
static void
chain_read_row(struct dbstmt *st, int i, struct ledger_row *r)
{
	r->seq = db_col_int(st, i);
	r->u.job = (u_int)db_col_int(st, i + 1);
	r->u.owner = db_col_text(st, i + 2);
	r->u.card = (u_int)db_col_int(st, i + 3);
	r->u.vendor = db_col_text(st, i + 4);
	r->u.model = db_col_text(st, i + 5);
	r->u.seats = (u_int)db_col_int(st, i + 6);
	r->u.ceiling = (u_int)db_col_int(st, i + 7);
	r->u.mem = (uint64_t)db_col_int(st, i + 8);
	r->u.fence = db_col_text(st, i + 9);
	r->start = db_col_int(st, i + 10);
	r->end = db_col_int(st, i + 11);
}

static int
chain_anchor(struct ledger *l, int64_t *seq, u_char *h)
{
	char	*hex;
	int	 rc;

	*seq = ledger_meta_int(l, "anchor_seq");
	hex = ledger_meta_text(l, "anchor_hash");
	rc = digest_from_hex(hex, h);
	free(hex);
	return (rc);
}

static void
chain_name(const struct ledger_row *r, char **cause, const char *why)
{
	char	 t[32];

	usage_format_time(r->start, t);
	xasprintf(cause, "row %lld (j%u on card %u from %s): %s",
	    (long long)r->seq, r->u.job, r->u.card, t, why);
}

/* Checks one row against the previous hash; advances prev on success. */
static int
chain_check_row(struct ledger *l, struct dbstmt *st, int64_t expect,
    u_char *prev, int64_t *ndays, char **cause)
{
	struct ledger_row	 r;
	u_char			 h[DIGEST_LEN], stored[DIGEST_LEN];
	int64_t			 day;

	chain_read_row(st, 0, &r);
	if (r.seq > expect) {
		xasprintf(cause, "row %lld: missing (deleted); the next row "
		    "is %lld", (long long)expect, (long long)r.seq);
		return (-1);
	}
	if (r.seq < expect) {
		chain_name(&r, cause, "is older than the chain's anchor");
		return (-1);
	}
	ledger_row_hash(prev, &r, h);
	if (digest_from_hex(db_col_text(st, 12), stored) != 0 ||
	    memcmp(h, stored, DIGEST_LEN) != 0) {
		chain_name(&r, cause, "does not match its hash (changed, "
		    "moved or put in)");
		return (-1);
	}
	memcpy(prev, h, DIGEST_LEN);
	*ndays += ledger_day(r.end - 1) - ledger_day(r.start) + 1;
	for (day = ledger_day(r.start); day <= ledger_day(r.end - 1); day++) {
		if (ledger_rollup_add(l, &r, day, 1) != 0) {
			xasprintf(cause, "verify: %s", db_error(ledger_db(l)));
			return (-1);
		}
	}
	return (0);
}

static int
chain_check_head(struct ledger *l, int64_t last, const u_char *prev,
    char **cause)
{
	u_char	 head[DIGEST_LEN];
	char	*hex;
	int64_t	 seq;
	int	 rc;

	seq = ledger_meta_int(l, "head_seq");
	hex = ledger_meta_text(l, "head_hash");
	rc = digest_from_hex(hex, head);
	free(hex);
	if (seq > last) {
		xasprintf(cause, "row %lld: missing (deleted); the chain "
		    "ends at %lld", (long long)last + 1, (long long)seq);
		return (-1);
	}
	if (seq < last) {
		xasprintf(cause, "row %lld: after the recorded end of the "
		    "chain (%lld)", (long long)seq + 1, (long long)seq);
		return (-1);
	}
	if (rc != 0 || memcmp(head, prev, DIGEST_LEN) != 0) {
		xasprintf(cause, "row %lld: is not the recorded head of the "
		    "chain", (long long)last);
		return (-1);
	}
	return (0);
}

/*
 * The rollup must be exactly what the rows add up to (queries read it for
 * whole days), and the day index must list every day of every row and
 * nothing else: every entry valid, and as many as the rows span (entries
 * are unique).  Names the first UTC day that disagrees.
 */
static int
chain_check_derived(struct ledger *l, int64_t ndays, char **cause)
{
	struct dbstmt	*st;
	char		 d[16];
	int		 rc;

	st = db_prepare(ledger_db(l), "SELECT min(day), "
	    "(SELECT count(*) FROM ledger_day) FROM ("
	    "SELECT * FROM (SELECT * FROM temp.ledger_check "
	    "EXCEPT SELECT * FROM ledger_rollup) UNION ALL "
	    "SELECT * FROM (SELECT * FROM ledger_rollup "
	    "EXCEPT SELECT * FROM temp.ledger_check) UNION ALL "
	    "SELECT d.day, 0, 0, 0, 0, 0, 0, 0, 0 FROM ledger_day d "
	    "LEFT JOIN ledger l ON l.seq = d.seq WHERE l.seq IS NULL OR "
	    "d.day * 86400000 >= l.end_ms OR "
	    "(d.day + 1) * 86400000 <= l.start_ms)");
	if ((rc = db_step(st)) == -1)
		xasprintf(cause, "verify: %s", db_error(ledger_db(l)));
	else if (!db_col_null(st, 0)) {
		usage_format_day(db_col_int(st, 0), d);
		xasprintf(cause, "day %s: the rollup or the day index "
		    "disagrees with the rows", d);
		rc = -1;
	} else if (db_col_int(st, 1) != ndays) {
		xasprintf(cause, "the day index has %lld entries, the rows "
		    "span %lld days", (long long)db_col_int(st, 1),
		    (long long)ndays);
		rc = -1;
	}
	db_finalize(st);
	return (rc == -1 ? -1 : 0);
}

/*
 * Checks the whole chain from the anchor to the head, and the rollup
 * against the rows.  Returns 0 and the number of rows checked, or -1 with
 * a cause naming the first broken row.
 */
int
ledger_verify(struct ledger *l, int64_t *nrows, char **cause)
{
	struct db	*db = ledger_db(l);
	struct dbstmt	*st;
	u_char		 prev[DIGEST_LEN];
	int64_t		 expect, ndays = 0;
	int		 rc = -1, step;

	*nrows = 0;
	if (chain_anchor(l, &expect, prev) != 0) {
		xasprintf(cause, "the chain's anchor is damaged");
		return (-1);
	}
	if (db_exec(db, "CREATE TEMP TABLE IF NOT EXISTS ledger_check ("
	    "day, job, card, owner, vendor, ms, seat_ms, mem_hi, mem_lo, "
	    "PRIMARY KEY (day, job, card, owner, vendor)) WITHOUT ROWID;"
	    "DELETE FROM temp.ledger_check;", cause) != 0)
		return (-1);
	/* A read transaction: one snapshot, and no lock on writers. */
	if (db_exec(db, "BEGIN", cause) != 0)
		return (-1);
	st = db_prepare(db, "SELECT " LEDGER_ROW_COLS " FROM ledger "
	    "ORDER BY seq");
	while ((step = db_step(st)) == 1) {
		if (chain_check_row(l, st, ++expect, prev, &ndays,
		    cause) != 0)
			goto out;
		(*nrows)++;
	}
	if (step == -1) {
		xasprintf(cause, "verify: %s", db_error(db));
		goto out;
	}
	if (chain_check_head(l, expect, prev, cause) != 0 ||
	    chain_check_derived(l, ndays, cause) != 0)
		goto out;
	rc = 0;
out:
	db_finalize(st);
	db_exec(db, "DELETE FROM temp.ledger_check; COMMIT", NULL);
	return (rc);
}

/* The last row to prune: the end of the prefix that ended by before. */
static int64_t
chain_prune_end(struct ledger *l, int64_t before)
{
	struct dbstmt	*st;
	int64_t		 s;

	st = db_prepare(ledger_db(l), "SELECT min(seq) FROM ledger "
	    "WHERE end_ms > ?");
	db_bind_int(st, 1, before);
	if (db_step(st) == 1 && !db_col_null(st, 0))
		s = db_col_int(st, 0) - 1;
	else
		s = ledger_meta_int(l, "head_seq");
	db_finalize(st);
	return (s);
}

static void
chain_export_row(FILE *f, const struct ledger_row *r, const char *prev,
    const char *hash)
{
	fprintf(f, "%lld,%u,", (long long)r->seq, r->u.job);
	usage_csv_field(f, r->u.owner);
	fprintf(f, ",%u,", r->u.card);
	usage_csv_field(f, r->u.vendor);
	fputc(',', f);
	usage_csv_field(f, r->u.model);
	fprintf(f, ",%u,%u,%llu,", r->u.seats, r->u.ceiling,
	    (unsigned long long)r->u.mem);
	usage_csv_field(f, r->u.fence);
	fprintf(f, ",%lld,%lld,%s,%s\n", (long long)r->start,
	    (long long)r->end, prev, hash);
}

/* Writes rows (anchor, last] to f; leaves the last hash in prev. */
static int
chain_export_rows(struct ledger *l, FILE *f, int64_t last, char *prev)
{
	struct dbstmt		*st;
	struct ledger_row	 r;
	int			 rc;

	fprintf(f, "seq,job,owner,card,vendor,model,seats,ceiling,mem,fence,"
	    "start_ms,end_ms,prev_hash,hash\n");
	st = db_prepare(ledger_db(l), "SELECT " LEDGER_ROW_COLS " FROM ledger "
	    "WHERE seq <= ? ORDER BY seq");
	db_bind_int(st, 1, last);
	while ((rc = db_step(st)) == 1) {
		chain_read_row(st, 0, &r);
		chain_export_row(f, &r, prev, db_col_text(st, 12));
		snprintf(prev, DIGEST_HEX, "%s", db_col_text(st, 12));
	}
	db_finalize(st);
	return (rc == -1 ? -1 : 0);
}

/*
 * Writes the rows to prune to path as CSV: through a temporary file that
 * is synced, then renamed into place without replacing anything there.
 */
static int
chain_export(struct ledger *l, int64_t last, const char *path, char *prev,
    char **cause)
{
	FILE	*f = NULL;
	char	*tmp;
	int	 fd, rc = -1;

	xasprintf(&tmp, "%s.tmp-%ld", path, (long)getpid());
	if ((fd = open(tmp, O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0600)) == -1 ||
	    (f = fdopen(fd, "w")) == NULL) {
		xasprintf(cause, "%s: %s", tmp, strerror(errno));
		if (fd != -1)
			close(fd);
		free(tmp);
		return (-1);
	}
	if (chain_export_rows(l, f, last, prev) != 0)
		xasprintf(cause, "export: %s", db_error(ledger_db(l)));
	else if (fflush(f) != 0 || fsync(fileno(f)) != 0)
		xasprintf(cause, "%s: %s", tmp, strerror(errno));
	else if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path,
	    RENAME_NOREPLACE) != 0)
		xasprintf(cause, "%s: %s", path, strerror(errno));
	else
		rc = 0;
	if (fclose(f) != 0 && rc == 0) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		rc = -1;
	}
	if (rc != 0)
		unlink(tmp);
	free(tmp);
	return (rc);
}

/* Deletes rows up to last and rebuilds the rollup before day cd. */
static int
chain_delete(struct ledger *l, int64_t last, int64_t cd)
{
	struct db		*db = ledger_db(l);
	struct dbstmt		*st;
	struct ledger_row	 r;
	char			*sql;
	int			 rc;

	xasprintf(&sql, "DELETE FROM ledger_day WHERE day < %lld AND "
	    "seq <= %lld; DELETE FROM ledger WHERE seq <= %lld; "
	    "DELETE FROM ledger_rollup WHERE day < %lld;", (long long)cd,
	    (long long)last, (long long)last, (long long)cd);
	rc = db_exec(db, sql, NULL);
	free(sql);
	if (rc != 0)
		return (-1);
	st = db_prepare(db, "SELECT d.day, l.seq, job, owner, card, vendor, "
	    "model, seats, ceiling, mem, fence, start_ms, end_ms FROM "
	    "ledger_day d JOIN ledger l ON l.seq = d.seq WHERE d.day < ?");
	db_bind_int(st, 1, cd);
	while ((rc = db_step(st)) == 1) {
		chain_read_row(st, 1, &r);
		if ((rc = ledger_rollup_add(l, &r, db_col_int(st, 0), 0)) != 0)
			break;
	}
	db_finalize(st);
	return (rc == -1 ? -1 : 0);
}

/*
 * Prunes the closed intervals that ended by before: the longest prefix of
 * the chain that did (a row closed out of order stays, with those after
 * it).  They are exported to path first (CSV, 0600, never replacing a
 * file), then deleted; the last one's hash becomes the chain's anchor and
 * the rollup of the days they touched is rebuilt from the rows that
 * remain.  The all-time totals keep them (they are counters).
 */
int
ledger_prune(struct ledger *l, int64_t before, const char *path,
    int64_t *nrows, char **cause)
{
	u_char	 h[DIGEST_LEN];
	char	 prev[DIGEST_HEX];
	int64_t	 anchor, last;

	*nrows = 0;
	if (chain_anchor(l, &anchor, h) != 0) {
		xasprintf(cause, "the chain's anchor is damaged");
		return (-1);
	}
	hex_encode(h, DIGEST_LEN, prev);
	last = chain_prune_end(l, before);
	if (last < anchor)
		last = anchor;
	if (chain_export(l, last, path, prev, cause) != 0)
		return (-1);
	if (last == anchor)
		return (0);
	if (ledger_begin(l) != 0 ||
	    chain_delete(l, last, ledger_day(before - 1) + 1) != 0) {
		xasprintf(cause, "prune: %s", db_error(ledger_db(l)));
		ledger_rollback(l);
		return (-1);
	}
	if (ledger_meta_set(l, "anchor_seq", last, NULL) != 0 ||
	    ledger_meta_set(l, "anchor_hash", 0, prev) != 0) {
		xasprintf(cause, "prune: %s", db_error(ledger_db(l)));
		ledger_rollback(l);
		return (-1);
	}
	*nrows = last - anchor;
	log_debug("%s: %lld rows before %lld to %s", __func__,
	    (long long)*nrows, (long long)before, path);
	return (ledger_commit(l, cause));
}
