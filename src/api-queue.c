/*
 * api-queue.c: GET /v1/queue, what waits and in what order: each queued
 * job's place, its priority and what waiting has added to it (one level
 * per SCHED_AGE_MS), and what it waits for; an array's elements not made
 * yet wait behind its elements in the queue, or for its % limit.
 */

#include <stdlib.h>
#include <string.h>

#include <event2/http.h>

#include "gmux.h"
#include "jobspec-int.h"

static json_t *
queue_entry(const struct job *j, int64_t now)
{
	json_t	*o;
	char	*why = NULL;
	u_int	 pos = 0;
	int64_t	 waited = now - j->submit;

	if (waited < 0)
		waited = 0;
	o = json_pack("{s:s,s:s,s:I,s:I,s:f}", "id", j->name, "owner",
	    j->owner, "priority", (json_int_t)j->req.priority, "waited_ms",
	    (json_int_t)waited, "effective_priority", j->req.priority +
	    (double)waited / SCHED_AGE_MS);
	if (server_sched_where(j, &pos, &why) == 0) {
		json_object_set_new(o, "position", json_integer(pos));
		json_object_set_new(o, "reason", json_string(why));
	} else {
		json_object_set_new(o, "position", json_null());
		json_object_set_new(o, "reason", j->reason ?
		    json_string(j->reason) : json_null());
	}
	free(why);
	json_object_set_new(o, "share", json_real(j->req.seats / 100.0));
	json_object_set_new(o, "cards", json_integer(j->req.seats ?
	    j->req.ncards : 0));
	json_object_set_new(o, "name", j->req.spec.name ?
	    json_string(j->req.spec.name) : json_null());
	return (o);
}

/* Orders entries by position; those without one (arrays) last. */
static int
queue_cmp(const void *a, const void *b)
{
	json_t	*x = *(json_t *const *)a, *y = *(json_t *const *)b;
	json_t	*px = json_object_get(x, "position");
	json_t	*py = json_object_get(y, "position");

	if (json_is_integer(px) && json_is_integer(py))
		return (json_integer_value(px) < json_integer_value(py) ? -1 :
		    json_integer_value(px) > json_integer_value(py));
	return (json_is_integer(px) ? -1 : json_is_integer(py));
}

/* An array's elements not made yet: what they wait for. */
static json_t *
queue_array(const struct job_array *a, int64_t now)
{
	json_t	*o;
	char	*pending, *why;

	pending = array_format(&a->set, a->next);
	if (a->nqueued > 0)
		xasprintf(&why, "behind its elements in the queue");
	else if (a->set.limit != 0 && a->nrunning >= a->set.limit)
		xasprintf(&why, "its limit: %u running at once", a->set.limit);
	else
		xasprintf(&why, "to be made (the next turn of the loop)");
	o = json_pack("{s:s,s:s,s:s,s:I,s:I,s:f,s:n,s:s,s:I}", "id", a->name,
	    "owner", a->owner, "pending", pending, "priority",
	    (json_int_t)a->req.priority, "waited_ms", (json_int_t)(now -
	    a->created), "effective_priority", (double)a->req.priority,
	    "position", "reason", why, "elements",
	    (json_int_t)(a->set.count - a->next));
	free(pending);
	free(why);
	return (o);
}

/* GET /v1/queue: the queued jobs this request may see, in order. */
void
api_queue_list(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct job_array	*a;
	struct job		*j;
	json_t			*list, **v = NULL;
	size_t			 n = 0, i;
	int64_t			 now = clock_ms();

	TAILQ_FOREACH(j, &all_jobs, entry) {
		if (j->state != JOB_QUEUED || !api_may_job(who, j))
			continue;
		v = xreallocarray(v, n + 1, sizeof *v);
		v[n++] = queue_entry(j, now);
	}
	TAILQ_FOREACH(a, &all_arrays, entry) {
		if (a->ended != 0 || a->cancelled || a->next >= a->set.count ||
		    !api_may(who, a->owner))
			continue;
		v = xreallocarray(v, n + 1, sizeof *v);
		v[n++] = queue_array(a, now);
	}
	if (n > 1)
		qsort(v, n, sizeof *v, queue_cmp);
	list = json_array();
	for (i = 0; i < n; i++)
		json_array_append_new(list, v[i]);
	free(v);
	api_reply(req, 200, list);
	json_decref(list);
}
