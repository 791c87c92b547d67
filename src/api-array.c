/*
 * api-array.c: arrays through the /v1/jobs routes (GET, stop, the list),
 * GET /v1/jobs/ID/status (each element's state, host and result) and GET
 * /v1/queue (what waits, in order, and for what).
 */

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "gmux.h"
#include "jobspec-int.h"

#define RESULT_MAX_LOG	(8 * 1024 * 1024)	/* logs read for a result */

static const char *
job_array_state(const struct job_array *a)
{
	if (a->ended == 0)
		return (a->nrunning > 0 ? "running" : "queued");
	if (a->cancelled)
		return ("stopped");
	return (a->nfailed > 0 ? "failed" : "exited");
}

/* The first of its elements waiting in the queue, if one is. */
static struct job *
job_array_waiting(const struct job_array *a)
{
	u_int	 pos, found = 0, first = 0;

	for (pos = a->next; pos > 0 && found < a->nqueued; pos--) {
		if (a->st[pos - 1] == ELEM_QUEUED) {
			first = pos;
			found++;
		}
	}
	return (first != 0 ? job_find_id(a->ids[first - 1]) : NULL);
}

/* The array as the API shows it (like a job, and its counts). */
json_t *
api_array_json(const struct job_array *a)
{
	struct job	*w;
	json_t		*o, *info;
	char		*pending;

	o = jobreq_to_json(&a->req);
	json_object_del(o, "env");
	json_object_del(o, "payloads");
	json_object_set_new(o, "cmd", json_object_get(o, "argv") ?
	    json_incref(json_object_get(o, "argv")) : json_array());
	json_object_del(o, "argv");
	json_object_set_new(o, "id", json_string(a->name));
	json_object_set_new(o, "owner", json_string(a->owner));
	json_object_set_new(o, "state", json_string(job_array_state(a)));
	json_object_set_new(o, "card", json_null());
	json_object_set_new(o, "created", json_integer(a->created));
	json_object_set_new(o, "ended", a->ended ? json_integer(a->ended) :
	    json_null());
	json_object_set_new(o, "exit_code", a->ended && !a->cancelled ?
	    json_integer(a->max_exit) : json_null());
	pending = a->cancelled ? xstrdup("") : array_format(&a->set, a->next);
	json_object_set_new(o, "pending", json_string(pending));
	free(pending);
	json_object_set_new(o, "count", json_integer(a->set.count));
	json_object_set_new(o, "limit", a->set.limit ?
	    json_integer(a->set.limit) : json_null());
	json_object_set_new(o, "counts", json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}",
	    "pending", (json_int_t)(a->cancelled ? 0 : a->set.count - a->next),
	    "queued", (json_int_t)a->nqueued, "running",
	    (json_int_t)a->nrunning, "ended", (json_int_t)a->nended,
	    "failed", (json_int_t)a->nfailed, "skipped",
	    (json_int_t)a->nskipped));
	json_object_set_new(o, "position", json_null());
	json_object_set_new(o, "reason", json_null());
	if ((w = job_array_waiting(a)) != NULL) {
		info = job_info_json(w);
		json_object_set(o, "position", json_object_get(info,
		    "position"));
		json_object_set(o, "reason", json_object_get(info, "reason"));
		json_decref(info);
	}
	return (o);
}

/* Does id name an array who may see? */
int
api_array_mine(const char *id, const struct api_who *who)
{
	struct job_array	*a;

	return ((a = job_array_find(id)) != NULL && api_may(who, a->owner));
}

/*
 * GET /v1/jobs/ID for an array: 1 if id named one (answered), else 0.
 */
int
api_array_get(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct job_array	*a;
	json_t			*o;

	if ((a = job_array_find(id)) == NULL)
		return (0);
	if (!api_may(who, a->owner)) {
		api_error(req, 404, "no job %s", id);
		return (1);
	}
	o = api_array_json(a);
	api_reply(req, 200, o);
	json_decref(o);
	return (1);
}

/*
 * POST /v1/jobs/ID/stop for an array (every element, and no more made) or
 * an element not made yet: 1 if answered, else 0.
 */
int
api_array_stop(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct job_array	*a;
	json_t			*o;
	char			*cause = NULL;
	int64_t			 grace;
	int			 code, rc, wait;

	if ((a = job_array_find(id)) == NULL) {
		if ((rc = job_array_cancel(id, who->admin ? NULL : who->owner,
		    &code, &cause)) == 0)
			return (0);
		if (rc == -1)
			api_error(req, code, "%s", cause);
		else {
			o = json_pack("{s:s,s:s}", "id", id, "state",
			    "stopped");
			api_reply(req, 200, o);
			json_decref(o);
		}
		free(cause);
		return (1);
	}
	if (!api_may(who, a->owner)) {
		api_error(req, 404, "no job %s", id);
		return (1);
	}
	grace = a->req.grace_ms;
	if (api_stop_body(req, &grace, &wait, NULL) != 0)
		return (1);
	rc = job_array_stop(a, grace);
	o = api_array_json(a);
	api_reply(req, rc ? 200 : 202, o);
	json_decref(o);
	return (1);
}

/* Adds the arrays (not ended, or all) this request may see to list a. */
void
api_array_list(json_t *list, int all, const struct api_who *who)
{
	struct job_array	*a;

	TAILQ_FOREACH(a, &all_arrays, entry) {
		if ((all || a->ended == 0) && api_may(who, a->owner))
			json_array_append_new(list, api_array_json(a));
	}
}

/*
 * The result of a job: its last line on stdout, parsed as JSON; NULL if
 * it printed none that is (or its log is gone or too big to read).
 */
static json_t *
job_result(const struct job *j)
{
	struct frame	 f;
	json_t		*v = NULL;
	char		*path, *log, *cause = NULL;
	size_t		 len, off = 0, start = 0, lo, hi;
	ssize_t		 n;

	path = path_job_file(j->id, "log");
	log = read_file(path, RESULT_MAX_LOG, &len, &cause);
	free(path);
	free(cause);
	if (log == NULL)
		return (NULL);
	/* The stdout frames' bytes, moved together at the front. */
	while ((n = frame_parse(log + off, len - off, &f, &cause)) > 0) {
		if (f.type == FRAME_STDOUT) {
			memmove(log + start, f.data, f.len);
			start += f.len;
		}
		off += (size_t)n;
	}
	free(cause);
	for (hi = start; hi > 0 && (log[hi - 1] == '\n' ||
	    log[hi - 1] == '\r'); hi--)
		;
	for (lo = hi; lo > 0 && log[lo - 1] != '\n'; lo--)
		;
	if (hi > lo)
		v = json_loadb(log + lo, hi - lo, JSON_DECODE_ANY, NULL);
	free(log);
	return (v);
}

/* One element, as GET /v1/jobs/ID/status lists it. */
static json_t *
status_element(const char *name, u_int index, int st, const struct job *j)
{
	json_t	*o;

	o = json_pack("{s:s,s:I}", "id", name, "index", (json_int_t)index);
	if (j == NULL) {
		/* (an ended one whose record retention removed: "ended") */
		json_object_set_new(o, "state", json_string(st ==
		    ELEM_SKIPPED ? "stopped" : st == ELEM_ENDED ? "ended" :
		    "pending"));
		json_object_set_new(o, "host", json_null());
		json_object_set_new(o, "exit_code", json_null());
		json_object_set_new(o, "result", json_null());
		return (o);
	}
	json_object_set_new(o, "state", json_string(job_state_name(j->state)));
	json_object_set_new(o, "host", j->state == JOB_QUEUED ? json_null() :
	    json_string(jobspec_host_name()));
	json_object_set_new(o, "exit_code", job_ended(j) && j->exit_code >= 0 ?
	    json_integer(j->exit_code) : json_null());
	json_object_set_new(o, "reason", j->reason ? json_string(j->reason) :
	    json_null());
	if (job_ended(j))
		json_object_set_new(o, "result", job_result(j) ?: json_null());
	else
		json_object_set_new(o, "result", json_null());
	return (o);
}

static json_t *
status_array(const struct job_array *a)
{
	json_t		*o, *el;
	char		 name[48];
	u_int		 pos, index;

	o = api_array_json(a);
	el = json_array();
	for (pos = 0; pos < a->set.count; pos++) {
		index = array_index(&a->set, pos);
		snprintf(name, sizeof name, "%s_%u", a->name, index);
		json_array_append_new(el, status_element(name, index,
		    a->st[pos], a->ids[pos] ? job_find_id(a->ids[pos]) :
		    NULL));
	}
	json_object_set_new(o, "elements", el);
	return (o);
}

/*
 * GET /v1/jobs/ID/status: an array's elements (a job: itself) with their
 * state, host and result (the last line each printed, as JSON).
 */
void
api_job_status(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct job_array	*a;
	struct job		*j;
	json_t			*o;
	const char		*owner;

	if ((a = job_array_find(id)) != NULL)
		owner = a->owner;
	else if ((j = job_find(id)) != NULL)
		owner = j->owner;
	else {
		api_error(req, 404, "no job %s", id);
		return;
	}
	if (!api_may(who, owner)) {
		api_error(req, 404, "no job %s", id);
		return;
	}
	if (a != NULL)
		o = status_array(a);
	else {
		o = job_to_json(j);
		json_object_set_new(o, "count", json_integer(1));
		json_object_set_new(o, "elements", json_pack("[o]",
		    status_element(j->name, 0, ELEM_NONE, j)));
	}
	api_reply(req, 200, o);
	json_decref(o);
}
