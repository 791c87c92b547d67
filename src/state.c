/*
 * state.c: the daemon's records in SQLite (state.db, WAL).  Every change
 * of a job is written through at once, so a daemon killed at any moment
 * restarts with every job it had: queued ones in order, running ones to
 * re-adopt, ended ones with their exit codes.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"

static struct db	*state_db;
static struct dbstmt	*st_save;
static struct dbstmt	*st_next;
static u_int		 state_next;	/* the next id to hand out */
static u_int		 state_saved_next; /* what meta says */

static void	state_load_next(void);

static const char state_schema[] =
    "CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v INTEGER);"
    "INSERT OR IGNORE INTO meta VALUES ('next_id', 1);"
    "CREATE TABLE IF NOT EXISTS jobs ("
    " id INTEGER PRIMARY KEY, owner TEXT NOT NULL, req TEXT NOT NULL,"
    " state TEXT NOT NULL, reason TEXT, card INTEGER, seats INTEGER,"
    " mem INTEGER, exit_code INTEGER, created INTEGER, started INTEGER,"
    " ended INTEGER, keeper_pid INTEGER, pgid INTEGER, submit INTEGER,"
    " cards INTEGER, by_job INTEGER, by_card INTEGER);";

int
state_open(char **cause)
{
	if ((state_db = db_open(path_db(), cause)) == NULL)
		return (-1);
	if (db_exec(state_db, state_schema, cause) != 0)
		return (-1);
	st_save = db_prepare(state_db, "INSERT OR REPLACE INTO jobs VALUES "
	    "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
	st_next = db_prepare(state_db, "UPDATE meta SET v = ? "
	    "WHERE k = 'next_id'");
	state_load_next();
	return (0);
}

void
state_close(void)
{
	db_finalize(st_next);
	db_finalize(st_save);
	st_save = NULL;
	db_close(state_db);
	state_db = NULL;
}

static void
state_load_next(void)
{
	struct dbstmt	*st;

	st = db_prepare(state_db, "SELECT max((SELECT v FROM meta "
	    "WHERE k = 'next_id'), "
	    "coalesce((SELECT max(id) + 1 FROM jobs), 1))");
	if (db_step(st) == 1)
		state_next = (u_int)db_col_int(st, 0);
	db_finalize(st);
	if (state_next == 0)
		state_next = 1;
	state_saved_next = state_next;
}

/*
 * Hands out job ids; never reused, even after records are pruned.  The
 * counter is written with the job that takes the id (one transaction).
 */
u_int
state_next_id(void)
{
	return (state_next++);
}

/* The id the next job will get, without taking it. */
u_int
state_peek_id(void)
{
	return (state_next);
}

void
state_save_job(const struct job *j)
{
	json_t	*req;
	char	*text;

	req = jobreq_to_json(&j->req);
	text = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	db_bind_int(st_save, 1, j->id);
	db_bind_text(st_save, 2, j->owner);
	db_bind_text(st_save, 3, text);
	db_bind_text(st_save, 4, job_state_name(j->state));
	db_bind_text(st_save, 5, j->reason);
	db_bind_int(st_save, 6, j->card);
	db_bind_int(st_save, 7, j->seats);
	db_bind_int(st_save, 8, (int64_t)j->mem);
	db_bind_int(st_save, 9, j->exit_code);
	db_bind_int(st_save, 10, j->created);
	db_bind_int(st_save, 11, j->started);
	db_bind_int(st_save, 12, j->ended);
	db_bind_int(st_save, 13, j->keeper_pid);
	db_bind_int(st_save, 14, j->pgid);
	db_bind_int(st_save, 15, j->submit);
	db_bind_int(st_save, 16, (int64_t)j->cards);
	db_bind_int(st_save, 17, j->by);
	db_bind_int(st_save, 18, j->by_card);
	if (j->id >= state_saved_next) {
		db_begin(state_db);
		db_bind_int(st_next, 1, j->id + 1);
		if (db_step(st_next) == -1)
			log_warnx("%s: %s", __func__, db_error(state_db));
		db_reset(st_next);
		state_saved_next = j->id + 1;
	}
	if (db_step(st_save) == -1)
		log_warnx("%s: %s: %s", __func__, j->name, db_error(state_db));
	db_reset(st_save);
	if (db_in_transaction(state_db))
		db_commit(state_db);
	free(text);
}

/* Forgets a job's record (retention: its books stay in the ledger). */
void
state_delete_job(u_int id)
{
	struct dbstmt	*st;

	st = db_prepare(state_db, "DELETE FROM jobs WHERE id = ?");
	db_bind_int(st, 1, id);
	if (db_step(st) == -1)
		log_warnx("%s: j%u: %s", __func__, id, db_error(state_db));
	db_finalize(st);
}

static struct job *
state_row(struct dbstmt *st)
{
	struct jobreq	 req;
	struct job	*j;
	json_t		*o;
	char		*cause = NULL;
	const char	*text = db_col_text(st, 2);

	jobreq_init(&req);
	o = json_loads(text ? text : "", 0, NULL);
	if (o == NULL || jobreq_from_saved(o, &req, &cause) != 0) {
		log_warnx("%s: job %lld: %s", __func__,
		    (long long)db_col_int(st, 0), cause ? cause : "bad JSON");
		free(cause);
		json_decref(o);
		jobreq_clear(&req);
		return (NULL);
	}
	json_decref(o);
	j = job_create((u_int)db_col_int(st, 0), db_col_text(st, 1), &req);
	job_restore_state(j, db_col_text(st, 3));
	if (!db_col_null(st, 4))
		j->reason = xstrdup(db_col_text(st, 4));
	j->card = (int)db_col_int(st, 5);
	j->seats = (u_int)db_col_int(st, 6);
	j->mem = (uint64_t)db_col_int(st, 7);
	j->exit_code = (int)db_col_int(st, 8);
	j->created = db_col_int(st, 9);
	j->started = db_col_int(st, 10);
	j->ended = db_col_int(st, 11);
	j->keeper_pid = (pid_t)db_col_int(st, 12);
	j->pgid = (pid_t)db_col_int(st, 13);
	j->submit = db_col_int(st, 14);
	j->cards = (uint64_t)db_col_int(st, 15);
	j->by = (u_int)db_col_int(st, 16);
	j->by_card = (int)db_col_int(st, 17);
	return (j);
}

/* Loads every job, in id order (running ones are adopted afterwards). */
void
state_load_jobs(void)
{
	struct dbstmt	*st;
	struct job	*j, *next;

	st = db_prepare(state_db, "SELECT * FROM jobs ORDER BY id");
	while (db_step(st) == 1)
		state_row(st);
	db_finalize(st);
	TAILQ_FOREACH_SAFE(j, &all_jobs, entry, next) {
		if (j->card >= (int)server_cards.n || (server_cards.n < 64 &&
		    (j->cards >> server_cards.n) != 0)) {
			log_warnx("%s: its card is gone", j->name);
			j->card = -1;
			j->cards = 0;
		}
	}
}
