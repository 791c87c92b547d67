/*
 * job-array.c: array jobs (--array 0-15%4, or one element per payload).
 * An array is ONE record until its elements start: submitting 10,000 is
 * one row.  Elements are made in index order as there is room: at most
 * two of them wait in the scheduler's queue for the whole array (when one
 * starts, the next is made), and never more than the % limit live at
 * once.  Two, not one: the next is made on the loop's next turn, and an
 * element that ends before then must not hand its card to a job behind
 * the array while the array still has one waiting.  Each element is an
 * ordinary job named "j12_3"; the array keeps only what it needs to count
 * and to find them.
 */

#include <sys/stat.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "gmux.h"
#include "jobspec-int.h"

#define ARRAY_FILL_BATCH	64	/* elements made per turn of the loop */
#define ARRAY_QUEUED		2	/* elements waiting in the queue */

struct job_arrays	 all_arrays = TAILQ_HEAD_INITIALIZER(all_arrays);
static struct event	*array_fill_ev;


/* Finds an array by "j12" or "12". */
struct job_array *
job_array_find(const char *name)
{
	struct job_array	*a;
	u_int			 id;
	char			*cause = NULL;

	if (*name == 'j')
		name++;
	if (parse_uint(name, 1, UINT32_MAX - 1, &id, &cause) != 0) {
		free(cause);
		return (NULL);
	}
	TAILQ_FOREACH(a, &all_arrays, entry) {
		if (a->id == id)
			return (a);
	}
	return (NULL);
}

static struct job_array *
job_array_find_id(u_int id)
{
	struct job_array	*a;

	TAILQ_FOREACH(a, &all_arrays, entry) {
		if (a->id == id)
			return (a);
	}
	return (NULL);
}

/* Takes over req (checked, with its array) and id. */
struct job_array *
job_array_new(u_int id, const char *owner, struct jobreq *req, char **cause)
{
	struct job_array	*a;

	a = xcalloc(1, sizeof *a);
	if (array_parse(req->spec.array, &a->set, cause) != 0) {
		free(a);
		return (NULL);
	}
	a->id = id;
	snprintf(a->name, sizeof a->name, "j%u", id);
	a->owner = xstrdup(owner);
	a->req = *req;
	jobreq_init(req);
	a->st = xcalloc(a->set.count, 1);
	a->ids = xcalloc(a->set.count, sizeof *a->ids);
	a->created = clock_ms();
	TAILQ_INSERT_TAIL(&all_arrays, a, entry);
	return (a);
}

/*
 * How many elements may be live at once: the % limit; else, for elements
 * that take no card, as many as the host's CPUs hold (a card's elements
 * are held back by the scheduler itself).
 */
static u_int
job_array_limit(const struct job_array *a)
{
	long	 ncpu;
	u_int	 per = a->req.spec.cpus ? a->req.spec.cpus : 1;

	if (a->set.limit != 0)
		return (a->set.limit);
	if (a->req.seats != 0)
		return (0);
	if ((ncpu = sysconf(_SC_NPROCESSORS_ONLN)) < 1)
		ncpu = 1;
	return ((u_int)ncpu / per > 0 ? (u_int)ncpu / per : 1);
}

/* The element at position pos's request: the array's, one index of it. */
static int
job_array_element_req(struct job_array *a, u_int pos, struct jobreq *r,
    char **cause)
{
	json_t	*o;
	int	 rc;

	o = jobreq_to_json(&a->req);
	json_object_del(o, "array");
	json_object_del(o, "payloads");
	json_object_del(o, "idempotency_key");	/* the array's, not theirs */
	jobreq_init(r);
	rc = jobreq_from_saved(o, r, cause);
	json_decref(o);
	if (rc != 0)
		return (-1);
	r->spec.array_of = a->id;
	r->spec.array_index = array_index(&a->set, pos);
	r->spec.array_count = a->set.count;
	r->spec.stdin_file = a->req.spec.payloads != NULL;
	r->spec.array_submit = a->created;
	return (0);
}

/* Writes payload pos where the element reads its stdin. */
static int
job_array_payload(struct job_array *a, u_int pos, u_int id, char **cause)
{
	char	*dir, *path, *text;
	int	 rc;

	dir = path_job(id);
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		xasprintf(cause, "%s: %s", dir, strerror(errno));
		free(dir);
		return (-1);
	}
	free(dir);
	text = json_dumps(json_array_get(a->req.spec.payloads, pos),
	    JSON_COMPACT|JSON_ENCODE_ANY);
	path = path_job_file(id, "stdin");
	rc = write_file_atomic(path, text, strlen(text), 0600, cause);
	free(path);
	free(text);
	return (rc);
}

/* An element that could not even wait: it failed, and says why. */
static void
job_array_refused(struct job *j, u_int id, char *cause)
{
	job_set_id(j, id);
	server_sched_refused(j, cause);
	free(cause);
}

/* Makes the element at the next position, and submits it. */
static void
job_array_make(struct job_array *a)
{
	struct jobreq	 r;
	struct job	*j;
	u_int		 pos = a->next++, id;
	char		*cause = NULL;
	int		 code;

	if (a->st[pos] == ELEM_SKIPPED)
		return;
	id = state_next_id();
	if (job_array_element_req(a, pos, &r, &cause) != 0 ||
	    (r.spec.stdin_file && job_array_payload(a, pos, id, &cause) != 0)) {
		log_warnx("%s: %s: %s", __func__, a->name, cause);
		jobreq_clear(&r);
		jobreq_init(&r);
		r.argv = strv_copy(a->req.argv);
		r.spec.array_of = a->id;
		r.spec.array_index = array_index(&a->set, pos);
	}
	j = job_create(0, a->owner, &r);
	a->ids[pos] = id;
	a->st[pos] = ELEM_QUEUED;
	a->nqueued++;
	if (cause != NULL)
		job_array_refused(j, id, cause);
	else if (server_sched_submit(j, id, &code, &cause) != 0)
		job_array_refused(j, id, cause);
}

/* Whether every element has ended (or will never be made). */
static void
job_array_check_end(struct job_array *a)
{
	if (a->ended != 0 || a->nqueued + a->nrunning != 0)
		return;
	if (!a->cancelled && a->next < a->set.count)
		return;
	a->ended = clock_ms();
	/* The callers' environment is no longer needed. */
	strv_free(a->req.env);
	a->req.env = NULL;
	job_array_save(a, 1);
	log_debug("%s: %s ended", __func__, a->name);
}

static void
job_array_fill(struct job_array *a)
{
	u_int	 limit = job_array_limit(a), made = 0, was = a->next;

	a->dirty = 0;
	while (!a->cancelled && a->next < a->set.count &&
	    a->nqueued < ARRAY_QUEUED &&
	    (limit == 0 || a->nqueued + a->nrunning < limit)) {
		if (made++ == ARRAY_FILL_BATCH) {
			a->dirty = 1;	/* the loop serves others first */
			break;
		}
		job_array_make(a);
	}
	if (a->next != was)
		job_array_save(a, 0);
	job_array_check_end(a);
}

static void
job_array_fill_cb(evutil_socket_t fd, short events, void *arg)
{
	struct job_array	*a;
	struct timeval		 tv = { 0, 0 };
	int			 again = 0;

	TAILQ_FOREACH(a, &all_arrays, entry) {
		if (a->dirty)
			job_array_fill(a);
		again |= a->dirty;
	}
	if (again)
		evtimer_add(array_fill_ev, &tv);
}

/* Elements are made on the next turn of the loop, never in a callback. */
void
job_array_kick(struct job_array *a)
{
	struct timeval	 tv = { 0, 0 };

	a->dirty = 1;
	if (array_fill_ev == NULL)
		array_fill_ev = evtimer_new(server_base, job_array_fill_cb,
		    NULL);
	evtimer_add(array_fill_ev, &tv);
}

/* The array and position of an element; NULL if it has none. */
static struct job_array *
job_array_of(const struct job *j, u_int *pos)
{
	struct job_array	*a;
	int64_t			 p;

	if ((a = job_array_find_id(j->req.spec.array_of)) == NULL)
		return (NULL);
	if ((p = array_position(&a->set, j->req.spec.array_index)) < 0 ||
	    a->ids[p] != j->id)
		return (NULL);
	*pos = (u_int)p;
	return (a);
}

/* An element started: the next one may be made. */
void
job_array_started(struct job *j)
{
	struct job_array	*a;
	u_int			 pos;

	if ((a = job_array_of(j, &pos)) == NULL || a->st[pos] != ELEM_QUEUED)
		return;
	a->st[pos] = ELEM_RUNNING;
	a->nqueued--;
	a->nrunning++;
	job_array_kick(a);
}

/* Counts element j, at pos, as ended. */
void
job_array_count_end(struct job_array *a, u_int pos, const struct job *j)
{
	a->st[pos] = ELEM_ENDED;
	a->nended++;
	if (j->state != JOB_EXITED || j->exit_code != 0)
		a->nfailed++;
	if (j->exit_code > a->max_exit)
		a->max_exit = j->exit_code;
}

/* An element ended (or was refused, or stopped while it waited). */
void
job_array_ended(struct job *j)
{
	struct job_array	*a;
	u_int			 pos;

	if ((a = job_array_of(j, &pos)) == NULL)
		return;
	if (a->st[pos] == ELEM_QUEUED)
		a->nqueued--;
	else if (a->st[pos] == ELEM_RUNNING)
		a->nrunning--;
	else
		return;
	job_array_count_end(a, pos, j);
	job_array_kick(a);
}

/* What an element learns of its array: gmux's names and Slurm's. */
void
job_array_env(const struct job *j, char ***envp)
{
	const struct jobspec	*s = &j->req.spec;
	const struct job_array	*a = job_array_find_id(s->array_of);

	job_env_set(envp, "GMUX_ARRAY_JOB_ID=j%u", s->array_of);
	job_env_set(envp, "GMUX_ARRAY_INDEX=%u", s->array_index);
	job_env_set(envp, "GMUX_ARRAY_COUNT=%u", s->array_count);
	job_env_set(envp, "SLURM_ARRAY_JOB_ID=%u", s->array_of);
	job_env_set(envp, "SLURM_ARRAY_TASK_ID=%u", s->array_index);
	job_env_set(envp, "SLURM_ARRAY_TASK_COUNT=%u", s->array_count);
	if (a == NULL)
		return;
	job_env_set(envp, "SLURM_ARRAY_TASK_MIN=%u", a->set.v[0].lo);
	job_env_set(envp, "SLURM_ARRAY_TASK_MAX=%u",
	    a->set.v[a->set.n - 1].hi);
	if (a->set.n == 1)
		job_env_set(envp, "SLURM_ARRAY_TASK_STEP=%u", a->set.v[0].step);
}

/*
 * Stops an array: no element is made any more, and those queued or running
 * are stopped (each with grace).  Returns 1 once it has ended, else 0.
 */
int
job_array_stop(struct job_array *a, int64_t grace)
{
	struct job	*j;
	u_int		 pos;

	if (a->ended == 0 && !a->cancelled) {
		a->cancelled = 1;
		job_array_save(a, 0);
	}
	for (pos = 0; pos < a->next; pos++) {
		if ((a->st[pos] == ELEM_QUEUED || a->st[pos] == ELEM_RUNNING) &&
		    (j = job_find_id(a->ids[pos])) != NULL)
			job_stop(j, grace, "stopped");
	}
	job_array_check_end(a);
	return (a->ended != 0);
}

/*
 * A new array from a checked request (taken over): refused at once if no
 * element could ever run here (422) or it asks what an array cannot do;
 * else one record, and its elements follow on the loop's next turn.
 * *out gets the array as the API shows it.
 */
int
job_array_create(struct jobreq *r, const char *owner, json_t **out,
    int *code, char **cause)
{
	struct job_array	*a;
	struct jobreq		 probe;
	struct job		*j;
	json_t			*o;
	int			 rc;

	/* A retry after a lost reply gets the array the first try made. */
	TAILQ_FOREACH(a, &all_arrays, entry) {
		if (r->key != NULL && a->req.key != NULL &&
		    strcmp(a->req.key, r->key) == 0 &&
		    strcmp(a->owner, owner) == 0) {
			*out = api_array_json(a);
			*code = 200;
			return (0);
		}
	}
	*code = 422;
	if (r->manifest != NULL || r->confined) {
		xasprintf(cause, "array: an array runs on the host's own "
		    "files; submit it on the host (a remote array is not "
		    "supported yet)");
		return (-1);
	}
	o = jobreq_to_json(r);
	json_object_del(o, "array");
	json_object_del(o, "payloads");
	json_object_del(o, "idempotency_key");
	jobreq_init(&probe);
	rc = jobreq_from_json(o, &probe, cause);
	json_decref(o);
	if (rc != 0) {
		jobreq_clear(&probe);
		return (-1);
	}
	j = job_create(0, owner, &probe);
	rc = server_sched_check(j, state_peek_id(), code, cause);
	job_free(j);
	if (rc != 0)
		return (-1);
	if ((a = job_array_new(state_next_id(), owner, r, cause)) == NULL)
		return (-1);
	job_array_save(a, 1);
	job_array_kick(a);
	*out = api_array_json(a);
	*code = 201;
	log_debug("%s: %s: %u elements", __func__, a->name, a->set.count);
	return (0);
}

/*
 * Stops one element that has not been made yet ("j12_7"): it never will
 * be.  1 if done, 0 if name is no such element (made already, or not an
 * array's, or not of owner's array unless owner is NULL), -1 with *code
 * and *cause if its array has no such index.
 */
int
job_array_cancel(const char *name, const char *owner, int *code,
    char **cause)
{
	struct job_array	*a;
	char			*base, *us;
	u_int			 index;
	int64_t			 pos;
	int			 rc;

	base = xstrdup(name);
	if ((us = strchr(base, '_')) == NULL) {
		free(base);
		return (0);
	}
	*us++ = '\0';
	a = job_array_find(base);
	rc = parse_uint(us, 0, ARRAY_MAX_INDEX, &index, cause);
	free(base);
	if (a == NULL || rc != 0 || (owner != NULL &&
	    strcmp(a->owner, owner) != 0)) {
		free(*cause);
		*cause = NULL;
		return (0);
	}
	if ((pos = array_position(&a->set, index)) < 0) {
		*code = 404;
		xasprintf(cause, "%s has no index %u (its indices: %s)",
		    a->name, index, a->req.spec.array);
		return (-1);
	}
	if (a->st[pos] == ELEM_SKIPPED)
		return (1);	/* (stopped again: as a job's second stop) */
	if (a->st[pos] != ELEM_NONE)
		return (0);
	a->st[pos] = ELEM_SKIPPED;
	a->nskipped++;
	job_array_save(a, 0);
	job_array_kick(a);
	return (1);
}
