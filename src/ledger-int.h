/*
 * ledger-int.h: what the books' files (ledger*.c) share only
 * among themselves; gmux.h keeps what crosses families.  The units that
 * test these pieces include it too.
 */

#ifndef LEDGER_INT_H
#define LEDGER_INT_H

#include "gmux.h"

/* An open interval in memory (for ledger*.c). */
struct ledger_iv {
	int64_t		 id;		/* its row in ledger_open */
	struct ledger_use u;		/* strings owned */
	int64_t		 start;
	int		 claimed;
};

/* The books; the rest of gmux holds a pointer only. */
struct ledger {
	struct db	*db;
	struct ledger_iv *open;
	u_int		 nopen;
	int64_t		 last_tick;
	int64_t		 head_seq;
	u_char		 head_hash[DIGEST_LEN];
	int		 swept;		/* the first tick has run */
	int		 batch;		/* inside ledger_begin */

	struct dbstmt	*st_open_ins;
	struct dbstmt	*st_open_del;
	struct dbstmt	*st_ins;
	struct dbstmt	*st_day;
	struct dbstmt	*st_rollup;
	struct dbstmt	*st_total;
	struct dbstmt	*st_meta_get;
	struct dbstmt	*st_meta_set;
	struct dbstmt	*st_tick;
	struct dbstmt	*st_check;	/* verify's rollup, made when needed */
};

/* ledger.c */
int		 ledger_begin(struct ledger *);
int		 ledger_commit(struct ledger *, char **);
void		 ledger_rollback(struct ledger *);
int		 ledger_check_time(int64_t, char **);
int		 ledger_txn_begin(struct ledger *);
int		 ledger_txn_end(struct ledger *, int, char **);
int		 ledger_fail(struct ledger *, char **);
struct db	*ledger_db(struct ledger *);
int64_t		 ledger_meta_int(struct ledger *, const char *);
char		*ledger_meta_text(struct ledger *, const char *);
int		 ledger_meta_set(struct ledger *, const char *, int64_t,
		     const char *);

/* ledger-interval.c: opening, continuing and closing intervals */
const struct ledger_use *ledger_open_interval(struct ledger *, u_int,
		     int64_t *);
void		 ledger_intervals_prepare(struct ledger *);
void		 ledger_intervals_free(struct ledger *);
int		 ledger_reload(struct ledger *);
int		 ledger_sweep(struct ledger *);
int		 ledger_rollup_add(struct ledger *, const struct ledger_row *,
		     int64_t, int);

/* ledger-chain.c: the hash chain, verification and pruning */
void		 ledger_row_hash(const u_char *, const struct ledger_row *,
		     u_char *);

/* ledger-query.c: integrating the books over a window */
int		 ledger_usage(struct ledger *, enum usage_by, int64_t, int64_t,
		     struct usage *, char **);

#endif /* LEDGER_INT_H */
