/*
 * job-array-store.c: arrays in the daemon's records (state.db's arrays
 * table).  The request, with its payloads, is written once; afterwards
 * only how far the array has got (next, cancelled, skipped, ended), so an
 * element's start costs a small row, not the array again.  Its elements
 * are ordinary jobs: after a restart they are found among them.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "jobspec-int.h"

/* The positions stopped before they were made, as a JSON array. */
static char *
job_array_skipped(const struct job_array *a)
{
	json_t	*v;
	char	*s;
	u_int	 pos;

	if (a->nskipped == 0)
		return (NULL);
	v = json_array();
	for (pos = 0; pos < a->set.count; pos++) {
		if (a->st[pos] == ELEM_SKIPPED)
			json_array_append_new(v, json_integer(pos));
	}
	s = json_dumps(v, JSON_COMPACT);
	json_decref(v);
	return (s);
}

static void
job_array_step(struct db *db, struct dbstmt *st, const char *name)
{
	if (db_step(st) == -1)
		log_warnx("%s: %s: %s", __func__, name, db_error(db));
	db_finalize(st);
}

/* Saves the array: all of it (whole), or how far it has got. */
void
job_array_save(struct job_array *a, int whole)
{
	struct db	*db = state_database();
	struct dbstmt	*st;
	json_t		*req;
	char		*text = NULL, *skipped = job_array_skipped(a);

	if (whole) {
		st = db_prepare(db, "INSERT OR REPLACE INTO arrays VALUES "
		    "(?8,?1,?2,?3,?4,?5,?6,?7)");
		req = jobreq_to_json(&a->req);
		text = json_dumps(req, JSON_COMPACT);
		json_decref(req);
		db_bind_text(st, 1, a->owner);
		db_bind_text(st, 2, text);
	} else
		st = db_prepare(db, "UPDATE arrays SET next = ?3, cancelled = "
		    "?4, skipped = ?5, created = ?6, ended = ?7 WHERE id = ?8");
	db_bind_int(st, 3, a->next);
	db_bind_int(st, 4, a->cancelled);
	db_bind_text(st, 5, skipped != NULL ? skipped : "[]");
	db_bind_int(st, 6, a->created);
	db_bind_int(st, 7, a->ended);
	db_bind_int(st, 8, a->id);
	job_array_step(db, st, a->name);
	free(text);
	free(skipped);
}

/* An element found again: where it is in its array, and how it is. */
static void
job_array_adopt(struct job_array *a, struct job *j)
{
	int64_t	 pos = array_position(&a->set, j->req.spec.array_index);

	if (pos < 0 || a->st[pos] != ELEM_NONE)
		return;
	/* Made, but the daemon died before the array said so: never twice. */
	if ((u_int)pos >= a->next)
		a->next = (u_int)pos + 1;
	a->ids[pos] = j->id;
	if (job_ended(j))
		job_array_count_end(a, (u_int)pos, j);
	else if (j->state == JOB_RUNNING) {
		a->st[pos] = ELEM_RUNNING;
		a->nrunning++;
	} else {
		a->st[pos] = ELEM_QUEUED;
		a->nqueued++;
	}
}

static void
job_array_row(struct dbstmt *st)
{
	struct job_array	*a;
	struct jobreq		 r;
	json_t			*o, *skipped, *v;
	char			*cause = NULL;
	size_t			 i;

	jobreq_init(&r);
	o = json_loads(db_col_text(st, 2) ? db_col_text(st, 2) : "", 0, NULL);
	if (o == NULL || jobreq_from_saved(o, &r, &cause) != 0 ||
	    (a = job_array_new((u_int)db_col_int(st, 0), db_col_text(st, 1),
	    &r, &cause)) == NULL) {
		log_warnx("%s: array %lld: %s", __func__,
		    (long long)db_col_int(st, 0), cause ? cause : "bad JSON");
		free(cause);
		json_decref(o);
		jobreq_clear(&r);
		return;
	}
	json_decref(o);
	a->next = (u_int)db_col_int(st, 3);
	if (a->next > a->set.count)
		a->next = a->set.count;
	a->cancelled = (int)db_col_int(st, 4);
	skipped = json_loads(db_col_text(st, 5) ? db_col_text(st, 5) : "[]",
	    0, NULL);
	json_array_foreach(skipped, i, v) {
		if (json_is_integer(v) && json_integer_value(v) >= 0 &&
		    json_integer_value(v) < a->set.count &&
		    a->st[json_integer_value(v)] == ELEM_NONE) {
			a->st[json_integer_value(v)] = ELEM_SKIPPED;
			a->nskipped++;
		}
	}
	json_decref(skipped);
	a->created = db_col_int(st, 6);
	a->ended = db_col_int(st, 7);
}

/*
 * Loads every array, then finds its elements among the jobs (loaded
 * first); an array not ended goes on making them.
 */
void
job_array_load(void)
{
	struct dbstmt		*st;
	struct job_array	*a;
	struct job		*j;

	st = db_prepare(state_database(), "SELECT id, owner, req, next, "
	    "cancelled, skipped, created, ended FROM arrays ORDER BY id");
	while (db_step(st) == 1)
		job_array_row(st);
	db_finalize(st);
	if (TAILQ_EMPTY(&all_arrays))
		return;
	TAILQ_FOREACH(j, &all_jobs, entry) {
		if (j->req.spec.array_of == 0)
			continue;
		TAILQ_FOREACH(a, &all_arrays, entry) {
			if (a->id == j->req.spec.array_of) {
				job_array_adopt(a, j);
				break;
			}
		}
	}
	TAILQ_FOREACH(a, &all_arrays, entry) {
		if (a->ended == 0)
			job_array_kick(a);
	}
}

static void
job_array_free(struct job_array *a)
{
	TAILQ_REMOVE(&all_arrays, a, entry);
	jobreq_clear(&a->req);
	array_clear(&a->set);
	free(a->st);
	free(a->ids);
	free(a->owner);
	free(a);
}

/*
 * Forgets the arrays that ended before cutoff (retention: their elements,
 * ended no later, go as jobs do); returns how many went.
 */
u_int
job_array_prune(int64_t cutoff)
{
	struct job_array	*a, *next;
	struct dbstmt		*st;
	u_int			 n = 0;

	TAILQ_FOREACH_SAFE(a, &all_arrays, entry, next) {
		if (a->ended == 0 || a->ended >= cutoff)
			continue;
		log_debug("%s: %s ended %lld", __func__, a->name,
		    (long long)a->ended);
		st = db_prepare(state_database(),
		    "DELETE FROM arrays WHERE id = ?");
		db_bind_int(st, 1, a->id);
		job_array_step(state_database(), st, a->name);
		job_array_free(a);
		n++;
	}
	return (n);
}
