/*
 * task-broker.c: the pure part of the task broker (docs/tasks.md): tasks
 * queued per owner and pool, leased one at a time to the idle workers of
 * that pool in submission order, queued again when a worker is lost (at
 * most TASK_ATTEMPTS leases), failed past their deadline.  No I/O: the
 * connections (task-conn.c) and the spool (task-spool.c) act on what these
 * functions decide.
 */

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "task-int.h"

/* A pool key: 1-200 of [A-Za-z0-9._:=,-]. */
int
task_pool_valid(const char *s)
{
	size_t	 n = strlen(s);

	if (n == 0 || n > TASK_POOL_MAX)
		return (0);
	return (strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789._:=,-") == n);
}

/* A caller's session: 16-64 hex digits. */
int
task_session_valid(const char *s)
{
	size_t	 n = strlen(s);

	return (n >= TASK_SESSION_MIN && n <= TASK_SESSION_MAX &&
	    strspn(s, "0123456789abcdefABCDEF") == n);
}

/* A spool file's name: [A-Za-z0-9._-], not "." or "..", no directory. */
int
task_file_valid(const char *s)
{
	size_t	 n = strlen(s);

	if (n == 0 || n > 128 || s[0] == '.')
		return (0);
	return (strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789._-") == n);
}

/*
 * Splits a task frame's payload (docs/tasks.md): a 4-byte big-endian
 * header length, a JSON object, opaque bytes.  Returns the header (the
 * caller decrefs it) and the bytes in *data and *len (inside p), or NULL
 * if the payload is not of that shape.
 */
json_t *
task_payload_parse(const void *p, size_t n, const u_char **data, size_t *len)
{
	const u_char	*b = p;
	uint32_t	 hl;
	json_t		*hdr;

	if (n < 4)
		return (NULL);
	hl = ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) |
	    ((uint32_t)b[2] << 8) | b[3];
	if (hl > n - 4)
		return (NULL);
	hdr = json_loadb((const char *)b + 4, hl, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(hdr)) {
		json_decref(hdr);
		return (NULL);
	}
	*data = b + 4 + hl;
	*len = n - 4 - hl;
	return (hdr);
}

struct task_broker *
task_broker_create(void)
{
	struct task_broker	*b;

	b = xcalloc(1, sizeof *b);
	b->next_id = 1;
	b->next_worker = 1;
	TAILQ_INIT(&b->tasks);
	TAILQ_INIT(&b->pools);
	TAILQ_INIT(&b->workers);
	TAILQ_INIT(&b->idle);
	b->bykey = hmap_create();
	return (b);
}

static void
task_value_clear(struct task_value *v)
{
	free(v->data);
	free(v->file);
	memset(v, 0, sizeof *v);
}

/* Sets v to a copy of len bytes and file (the value takes file). */
void
task_value_set(struct task_value *v, const void *data, size_t len,
    char *file)
{
	task_value_clear(v);
	if (len != 0) {
		v->data = xmalloc(len);
		memcpy(v->data, data, len);
		v->len = len;
	}
	v->file = file;
}

static void
task_free(struct task *t)
{
	free(t->owner);
	free(t->session);
	free(t->key);
	free(t->pool);
	free(t->error);
	free(t->lost);
	task_value_clear(&t->call);
	task_value_clear(&t->out);
	free(t);
}

void
task_broker_free(struct task_broker *b)
{
	struct task		*t;
	struct task_pool	*p;
	struct task_worker	*w;

	if (b == NULL)
		return;
	while ((t = TAILQ_FIRST(&b->tasks)) != NULL) {
		TAILQ_REMOVE(&b->tasks, t, entry);
		task_free(t);
	}
	while ((w = TAILQ_FIRST(&b->workers)) != NULL) {
		TAILQ_REMOVE(&b->workers, w, entry);
		free(w->owner);
		free(w->device);
		free(w);
	}
	while ((p = TAILQ_FIRST(&b->pools)) != NULL) {
		TAILQ_REMOVE(&b->pools, p, entry);
		free(p->owner);
		free(p->pool);
		free(p);
	}
	hmap_free(b->bykey);
	free(b);
}

/* The pool of owner and key; made if create is set, else NULL if none. */
struct task_pool *
task_pool_find(struct task_broker *b, const char *owner, const char *pool,
    int create)
{
	struct task_pool	*p;

	TAILQ_FOREACH(p, &b->pools, entry) {
		if (strcmp(p->owner, owner) == 0 && strcmp(p->pool, pool) == 0)
			return (p);
	}
	if (!create)
		return (NULL);
	p = xcalloc(1, sizeof *p);
	p->owner = xstrdup(owner);
	p->pool = xstrdup(pool);
	TAILQ_INIT(&p->queue);
	TAILQ_INSERT_TAIL(&b->pools, p, entry);
	return (p);
}

/* The task a caller's session numbered cid, or NULL. */
struct task *
task_find(struct task_broker *b, const char *session, uint64_t cid)
{
	char	 key[TASK_SESSION_MAX + 32];

	snprintf(key, sizeof key, "%s:%" PRIu64, session, cid);
	return (hmap_get(b->bykey, key));
}

static void
task_enqueue(struct task_broker *b, struct task *t, int first)
{
	struct task_pool	*p;

	p = task_pool_find(b, t->owner, t->pool, 1);
	if (first)
		TAILQ_INSERT_HEAD(&p->queue, t, qentry);
	else
		TAILQ_INSERT_TAIL(&p->queue, t, qentry);
	p->nqueued++;
	t->state = TASK_QUEUED;
}

static void
task_dequeue(struct task_broker *b, struct task *t)
{
	struct task_pool	*p;

	if (t->state != TASK_QUEUED)
		return;
	p = task_pool_find(b, t->owner, t->pool, 1);
	TAILQ_REMOVE(&p->queue, t, qentry);
	p->nqueued--;
}

/*
 * Accepts a task, queued at the end of its pool; *isnew is 0 (and nothing
 * changes) if the session already has a task numbered cid.  The broker
 * owns the task; the caller fills its call.
 */
struct task *
task_submit(struct task_broker *b, const char *owner, const char *session,
    uint64_t cid, const char *pool, int64_t timeout_ms, int *isnew)
{
	struct task	*t;

	if ((t = task_find(b, session, cid)) != NULL) {
		*isnew = 0;
		return (t);
	}
	*isnew = 1;
	t = xcalloc(1, sizeof *t);
	t->id = b->next_id++;
	t->owner = xstrdup(owner);
	t->session = xstrdup(session);
	t->cid = cid;
	xasprintf(&t->key, "%s:%" PRIu64, session, cid);
	t->pool = xstrdup(pool);
	t->timeout_ms = timeout_ms > 0 ? timeout_ms : 0;
	TAILQ_INSERT_TAIL(&b->tasks, t, entry);
	hmap_put(b->bykey, t->key, t);
	task_enqueue(b, t, 0);
	return (t);
}

/* A worker of owner in pool, idle.  The broker owns it. */
struct task_worker *
task_worker_add(struct task_broker *b, const char *owner, const char *pool)
{
	struct task_worker	*w;

	w = xcalloc(1, sizeof *w);
	w->id = b->next_worker++;
	snprintf(w->name, sizeof w->name, "w%u", w->id);
	w->owner = xstrdup(owner);
	w->pool = task_pool_find(b, owner, pool, 1);
	w->pool->nworkers++;
	TAILQ_INSERT_TAIL(&b->workers, w, entry);
	TAILQ_INSERT_TAIL(&b->idle, w, ientry);
	return (w);
}

/*
 * Forgets a worker that went away; a task it held is lost (queued again,
 * or failed on its last attempt) for reason.  Returns that task if it
 * failed (its caller is owed the result), NULL otherwise.
 */
struct task *
task_worker_remove(struct task_broker *b, struct task_worker *w,
    const char *reason)
{
	struct task	*t = w->task, *failed = NULL;

	if (t != NULL && task_lose(b, t, reason))
		failed = t;
	TAILQ_REMOVE(&b->idle, w, ientry);	/* idle now, if not before */
	w->pool->nworkers--;
	TAILQ_REMOVE(&b->workers, w, entry);
	free(w->owner);
	free(w->device);
	free(w);
	return (failed);
}

/* The next task for an idle worker (leased to it), or NULL. */
struct task *
task_lease(struct task_broker *b, struct task_worker *w, int64_t now)
{
	struct task	*t;

	if (w->task != NULL || (t = TAILQ_FIRST(&w->pool->queue)) == NULL)
		return (NULL);
	task_dequeue(b, t);
	t->state = TASK_LEASED;
	t->attempts++;
	t->worker = w;
	t->deadline = t->timeout_ms > 0 ? now + t->timeout_ms : 0;
	snprintf(t->wname, sizeof t->wname, "%s", w->name);
	w->task = t;
	TAILQ_REMOVE(&b->idle, w, ientry);
	return (t);
}

/*
 * A task leaves its worker, which goes to the idle list's tail: the next
 * lease goes to the worker idle longest, which has had the most time to
 * get ready (a fork-server has forked its next child).
 */
static void
task_detach(struct task_broker *b, struct task *t)
{
	if (t->worker != NULL && t->worker->task == t) {
		t->worker->task = NULL;
		TAILQ_INSERT_TAIL(&b->idle, t->worker, ientry);
	}
	t->worker = NULL;
	t->deadline = 0;
}

/* The worker's result for task id: the task, done; NULL if stale. */
struct task *
task_complete(struct task_broker *b, struct task_worker *w, uint64_t id)
{
	struct task	*t = w->task;

	if (t == NULL || t->id != id)
		return (NULL);
	task_detach(b, t);
	t->state = TASK_DONE;
	t->ended = clock_mono_ms();
	w->done++;
	return (t);
}

/*
 * A leased task's worker or its child died: queued again at the head of
 * its pool, or failed if that was its last attempt.  Returns 1 if failed.
 */
int
task_lose(struct task_broker *b, struct task *t, const char *reason)
{
	task_detach(b, t);
	free(t->lost);
	t->lost = xstrdup(reason);
	if (t->attempts >= TASK_ATTEMPTS) {
		task_fail(b, t, "lost %u times: %s", t->attempts, reason);
		return (1);
	}
	task_enqueue(b, t, 1);
	return (0);
}

void
task_fail(struct task_broker *b, struct task *t, const char *fmt, ...)
{
	va_list	 ap;

	task_dequeue(b, t);
	task_detach(b, t);
	free(t->error);
	va_start(ap, fmt);
	xvasprintf(&t->error, fmt, ap);
	va_end(ap);
	t->state = TASK_FAILED;
	t->ended = clock_mono_ms();
}

/* A leased task past its deadline at now, or NULL. */
struct task *
task_expired(struct task_broker *b, int64_t now)
{
	struct task_worker	*w;

	TAILQ_FOREACH(w, &b->workers, entry) {
		if (w->task != NULL && w->task->deadline != 0 &&
		    w->task->deadline <= now)
			return (w->task);
	}
	return (NULL);
}

/*
 * The caller of session takes back its next task still queued in owner's
 * pool: failed with why (which the caller gave: no worker of that pool
 * could start), never to be leased.  Returns it (its caller is owed the
 * result), or NULL when none is left; a leased task is not taken back.
 */
struct task *
task_withdraw(struct task_broker *b, const char *owner, const char *session,
    const char *pool, const char *why)
{
	struct task_pool	*p;
	struct task		*t;

	if ((p = task_pool_find(b, owner, pool, 0)) == NULL)
		return (NULL);
	TAILQ_FOREACH(t, &p->queue, qentry) {
		if (strcmp(t->session, session) == 0) {
			task_fail(b, t, "%.*s", TASK_ERROR_MAX, why);
			return (t);
		}
	}
	return (NULL);
}

/* Forgets a task (its result was acked, or nobody came for it). */
void
task_drop(struct task_broker *b, struct task *t)
{
	task_dequeue(b, t);
	task_detach(b, t);
	hmap_del(b->bykey, t->key);
	TAILQ_REMOVE(&b->tasks, t, entry);
	task_free(t);
}
