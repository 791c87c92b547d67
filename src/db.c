/*
 * db.c: SQLite behind a small interface.  The only file that includes
 * sqlite3.h; everyone else prepares, binds, steps and reads columns through
 * these calls.  Databases are opened in WAL mode with synchronous=NORMAL:
 * a commit is durable against a process crash at once and against a power
 * loss at the next checkpoint.
 */

#include <sys/stat.h>

#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "gmux.h"

struct db {
	sqlite3		*h;
};

struct dbstmt {
	sqlite3_stmt	*s;
	struct db	*db;
};

/* Opens (creating, mode 0600) the database at path. */
struct db *
db_open(const char *path, char **cause)
{
	struct db	*db;
	sqlite3		*h = NULL;
	mode_t		 old;

	old = umask(077);
	if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE|
	    SQLITE_OPEN_CREATE|SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		umask(old);
		xasprintf(cause, "%s: %s", path, h ? sqlite3_errmsg(h) :
		    "cannot open");
		sqlite3_close(h);
		return (NULL);
	}
	umask(old);
	chmod(path, 0600);
	sqlite3_busy_timeout(h, 5000);
	db = xcalloc(1, sizeof *db);
	db->h = h;
	if (db_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
	    "PRAGMA foreign_keys=ON;", cause) != 0) {
		db_close(db);
		return (NULL);
	}
	return (db);
}

void
db_close(struct db *db)
{
	if (db == NULL)
		return;
	sqlite3_close_v2(db->h);
	free(db);
}

int
db_exec(struct db *db, const char *sql, char **cause)
{
	char	*err = NULL;

	if (sqlite3_exec(db->h, sql, NULL, NULL, &err) != SQLITE_OK) {
		if (cause != NULL)
			xasprintf(cause, "%s", err ? err : "sqlite error");
		sqlite3_free(err);
		return (-1);
	}
	return (0);
}

const char *
db_error(struct db *db)
{
	return (sqlite3_errmsg(db->h));
}

/* A statement that cannot be prepared is a bug in gmux: it is fatal. */
struct dbstmt *
db_prepare(struct db *db, const char *sql)
{
	struct dbstmt	*st;

	st = xcalloc(1, sizeof *st);
	st->db = db;
	if (sqlite3_prepare_v3(db->h, sql, -1, SQLITE_PREPARE_PERSISTENT,
	    &st->s, NULL) != SQLITE_OK)
		fatalx("db_prepare: %s: %s", sqlite3_errmsg(db->h), sql);
	return (st);
}

void
db_bind_int(struct dbstmt *st, int i, int64_t v)
{
	sqlite3_bind_int64(st->s, i, v);
}

void
db_bind_text(struct dbstmt *st, int i, const char *v)
{
	if (v == NULL)
		sqlite3_bind_null(st->s, i);
	else
		sqlite3_bind_text(st->s, i, v, -1, SQLITE_TRANSIENT);
}

int
db_step(struct dbstmt *st)
{
	switch (sqlite3_step(st->s)) {
	case SQLITE_ROW:
		return (1);
	case SQLITE_DONE:
		return (0);
	default:
		log_warnx("db_step: %s", sqlite3_errmsg(st->db->h));
		return (-1);
	}
}

int64_t
db_col_int(struct dbstmt *st, int i)
{
	return (sqlite3_column_int64(st->s, i));
}

const char *
db_col_text(struct dbstmt *st, int i)
{
	return ((const char *)sqlite3_column_text(st->s, i));
}

int
db_col_null(struct dbstmt *st, int i)
{
	return (sqlite3_column_type(st->s, i) == SQLITE_NULL);
}

void
db_reset(struct dbstmt *st)
{
	sqlite3_reset(st->s);
	sqlite3_clear_bindings(st->s);
}

void
db_finalize(struct dbstmt *st)
{
	if (st == NULL)
		return;
	sqlite3_finalize(st->s);
	free(st);
}

int
db_begin(struct db *db)
{
	return (db_exec(db, "BEGIN IMMEDIATE", NULL));
}

int
db_in_transaction(struct db *db)
{
	return (!sqlite3_get_autocommit(db->h));
}

int
db_commit(struct db *db)
{
	return (db_exec(db, "COMMIT", NULL));
}
