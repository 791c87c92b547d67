/* api-job.c: the /v1/jobs routes. */

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "gmux.h"

/*
 * GET /v1/jobs?all=1&arrays=1: the jobs not ended (all: every one), then
 * with arrays=1 the arrays.  Over TCP, only
 * those the token may act on: another owner's command line, directory and
 * reasons are not this token's to read (GET /v1/jobs/ID says 404).
 */
void
api_jobs_list(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct job	*j;
	json_t		*a;
	int		 all = api_query_flag(req, "all");

	a = json_array();
	TAILQ_FOREACH(j, &all_jobs, entry) {
		if ((all || !job_ended(j)) && api_may_job(who, j))
			json_array_append_new(a, job_to_json(j));
	}
	if (api_query_flag(req, "arrays"))
		api_array_list(a, all, who);
	api_reply(req, 200, a);
	json_decref(a);
}

/*
 * The job id names, if who may see it; else NULL, answered (400, 404).
 * Another owner's job is no job to who: 404, as if it were not there.
 */
struct job *
api_job_lookup(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct job	*j;

	if ((j = job_find(id)) == NULL && api_array_mine(id, who))
		api_error(req, 400, "%s is an array: name one of its elements "
		    "(%s_N)", id, id);
	else if (j == NULL || !api_may_job(who, j)) {
		api_error(req, 404, "no job %s", id);
		j = NULL;
	}
	return (j);
}

/* POST /v1/jobs with an array: one record, 201 and the array. */
static void
api_jobs_create_array(struct evhttp_request *req, struct jobreq *r,
    const struct api_who *who)
{
	json_t	*o;
	char	*cause = NULL;
	int	 code;

	if (api_query_flag(req, "attach"))
		api_error(req, 400, "array: an array's elements are followed "
		    "one by one (gmux logs ID_N); submit it detached");
	else if (job_array_create(r, who->owner, &o, &code, &cause) != 0)
		api_error(req, code, "%s", cause);
	else {
		api_reply(req, code, o);	/* 200: a retry's, by its key */
		json_decref(o);
	}
	free(cause);
}

/*
 * The job owner submitted with key before (a retry after a lost reply),
 * or NULL.  Ended jobs count until they are forgotten.
 */
static struct job *
api_job_by_key(const char *owner, const char *key)
{
	struct job	*j;

	TAILQ_FOREACH(j, &all_jobs, entry) {
		if (j->req.key != NULL && strcmp(j->req.key, key) == 0 &&
		    strcmp(j->owner, owner) == 0)
			return (j);
	}
	return (NULL);
}

/*
 * The idempotency key may come in the query too (the CLI's way: a daemon
 * older than the key ignores a query, where it refuses a field).
 */
static int
api_job_query_key(struct evhttp_request *req, struct jobreq *r,
    char **cause)
{
	const char	*k = api_query(req, "idempotency_key");

	if (k == NULL)
		return (0);
	if (!jobreq_key_ok(k)) {
		xasprintf(cause, "idempotency_key: must be %s",
		    JOBREQ_KEY_RULE);
		return (-1);
	}
	if (r->key != NULL && strcmp(r->key, k) != 0) {
		xasprintf(cause, "idempotency_key: the query's is not the "
		    "body's");
		return (-1);
	}
	free(r->key);
	r->key = xstrdup(k);
	return (0);
}

/* Answers a submission with its job: as made (201), or found again. */
static void
api_job_submitted(struct evhttp_request *req, struct job *j, int code)
{
	json_t	*o, *warn;

	if (api_query_flag(req, "attach")) {
		o = job_info_json(j);
		follow_start(j, req, 0, FOLLOW_LIVE, o);
	} else {
		o = job_to_json(j);
		if ((warn = api_remote_warnings(&j->req)) != NULL)
			json_object_set_new(o, "warnings", warn);
		api_reply(req, code, o);
	}
	json_decref(o);
}

/*
 * POST /v1/jobs: checks the request and submits it: it starts, or waits in
 * the queue.  422 if no card could ever hold it, 409 if it does not fit
 * now and may not wait (no_wait); with ?attach=1 the reply is the job's
 * output stream, else 201 and the job.  A request with the
 * idempotency_key of one this owner made before gets that job (200), not
 * a second one.
 */
void
api_jobs_create(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct jobreq	 r;
	struct job	*j;
	struct prepare	*prep;
	json_t		*body;
	char		*cause = NULL;
	int		 code, rc;

	jobreq_init(&r);
	if ((body = api_body(req, &cause)) == NULL ||
	    container_config_template(body, &cause) != 0 ||
	    jobreq_from_json(body, &r, &cause) != 0 ||
	    api_job_query_key(req, &r, &cause) != 0) {
		api_error(req, 400, "%s", cause);
		goto out;
	}
	/*
	 * A job from another machine runs in a jail, or not at all unless
	 * the operator said so (docs/isolation.md); never as it asks.
	 */
	if (who->confined && jail_remote_job(&r.confined, &cause) != 0) {
		api_error(req, 403, "%s", cause);
		goto out;
	}
	if (r.confined && fence_has_unix(r.fence)) {
		api_error(req, 400, "allow: unix: names a socket of this "
		    "host's, which a remote job may not reach");
		goto out;
	}
	if ((r.flags & JOB_TASK_WORKER) && task_worker_job(&r, &cause) != 0) {
		api_error(req, 400, "%s", cause);
		goto out;
	}
	if (r.spec.image != NULL && container_check(&r, &code, &cause) != 0) {
		api_error(req, code, "%s", cause);
		goto out;
	}
	if (container_config_allowed(&r, &cause) != 0) {
		api_error(req, 403, "%s", cause);
		goto out;
	}
	if (workspace_mounts_check(&r, who->owner, &cause) != 0) {
		api_error(req, 400, "%s", cause);
		goto out;
	}
	if (r.spec.workspace &&
	    workspace_find_live(who->owner, r.spec.name) != NULL) {
		api_error(req, 409, "name: a workspace %s exists", r.spec.name);
		goto out;
	}
	if (r.spec.in_workspace != NULL) {
		if (workspace_shell_check(&r, who->owner, &code, &cause) != 0) {
			api_error(req, code, "%s", cause);
			goto out;
		}
		/* Its one shell: a second gmux shell NAME attaches to it. */
		if ((j = workspace_shell_live(who->owner,
		    r.spec.in_workspace)) != NULL) {
			api_job_submitted(req, j, 200);
			goto out;
		}
	}
	if (r.spec.array != NULL) {
		api_jobs_create_array(req, &r, who);
		goto out;
	}
	if (r.key != NULL &&
	    (j = api_job_by_key(who->owner, r.key)) != NULL) {
		log_debug("%s: %s again (key %s)", __func__, j->name, r.key);
		api_job_submitted(req, j, 200);
		goto out;
	}
	if (api_remote_job(req, who, &r, state_peek_id(), &prep) != 0)
		goto out;
	j = job_create(0, who->owner, &r);
	/* A synced tree is copied first, off the loop; then it is submitted. */
	if (prep != NULL)
		rc = prepare_submit(prep, j, state_peek_id(), &code, &cause);
	else
		rc = server_sched_submit(j, state_peek_id(), &code, &cause);
	if (rc != 0) {
		api_error(req, code, "%s", cause);
		job_free(j);
		api_remote_job_undo(state_peek_id());
		goto out;
	}
	state_next_id();
	api_job_submitted(req, j, 201);
out:
	free(cause);
	json_decref(body);
	jobreq_clear(&r);
}

/*
 * PATCH /v1/jobs/ID {"share": F, "mem": SIZE}: grows or shrinks a running
 * job.  Growing must fit now (409 with the reason); shrinking always
 * does.  A queued job keeps its place with its new request (refused only
 * if no card could ever hold it).  Without mem, a job whose cap was the
 * default keeps the default (share x the card's memory) and one with an
 * explicit cap keeps it.
 */
void
api_job_patch(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct jobreq	 r;
	struct job	*j;
	json_t		*body, *o, *v;
	char		*cause = NULL;
	uint64_t	 mem;

	if ((j = api_job_lookup(req, id, who)) == NULL)
		return;
	jobreq_init(&r);
	r.seats = j->req.seats;
	r.mem = j->req.mem;
	if ((body = api_body(req, &cause)) == NULL ||
	    jobreq_patch_from_json(body, &r, &cause) != 0) {
		api_error(req, 400, "%s", cause);
		goto out;
	}
	if (j->state != JOB_RUNNING && j->state != JOB_QUEUED) {
		api_error(req, 409, "%s is %s: only a running or queued job "
		    "can be resized", j->name, job_state_name(j->state));
		goto out;
	}
	v = json_object_get(body, "mem");
	mem = v != NULL ? r.mem : j->req.mem;
	if (server_sched_resize(j, r.seats, mem, &cause) != 0) {
		api_error(req, 409, "%s", cause);
		goto out;
	}
	o = job_to_json(j);
	api_reply(req, 200, o);
	json_decref(o);
out:
	free(cause);
	json_decref(body);
	jobreq_clear(&r);
}

/* GET /v1/jobs/ID/explain: why it waits, or where it runs and why. */
void
api_job_explain(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct job	*j;
	json_t		*o;
	char		*text = NULL;

	if ((j = api_job_lookup(req, id, who)) == NULL)
		return;
	if (!job_ended(j))
		text = sched_explain(server_sched, j->id, clock_ms());
	if (text == NULL && j->exit_code >= 0)
		xasprintf(&text, "%s %s with exit code %d", j->name,
		    job_state_name(j->state), j->exit_code);
	else if (text == NULL)
		xasprintf(&text, "%s %s%s%s", j->name, job_state_name(j->state),
		    j->reason ? ": " : "", j->reason ? j->reason : "");
	o = job_to_json(j);
	json_object_set_new(o, "explain", json_string(text));
	api_reply(req, 200, o);
	json_decref(o);
	free(text);
}

void
api_job_get(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct job	*j;
	json_t		*o;

	if (api_array_get(req, id, who))
		return;
	if ((j = api_job_lookup(req, id, who)) == NULL)
		return;
	o = job_to_json(j);
	api_reply(req, 200, o);
	json_decref(o);
}

/* {"cancel": true}: the user's stop is withdrawn before its KILL. */
static void
api_job_stop_cancel(struct evhttp_request *req, struct job *j, json_t *v)
{
	json_t	*o;

	if (!json_is_boolean(v)) {
		api_error(req, 400, "cancel: must be true or false");
		return;
	}
	if (json_is_true(v) && job_stop_cancel(j) != 0) {
		api_error(req, 409, "no stop of %s is pending (nothing to "
		    "cancel)", j->name);
		return;
	}
	o = job_to_json(j);
	api_reply(req, 200, o);
	json_decref(o);
}

/*
 * A stop's body, if it has one: {"grace_ms": N, "wait": bool} into *grace
 * (left as it is without one) and *wait; with cancel, also its "cancel"
 * (a new reference, or NULL).  -1 once it has answered 400.
 */
int
api_stop_body(struct evhttp_request *req, int64_t *grace, int *wait,
    json_t **cancel)
{
	json_t	*body, *v;
	char	*cause = NULL;
	int	 rc = -1;

	*wait = 0;
	if (cancel != NULL)
		*cancel = NULL;
	if (evbuffer_get_length(evhttp_request_get_input_buffer(req)) == 0)
		return (0);
	if ((body = api_body(req, &cause)) == NULL || !json_is_object(body)) {
		api_error(req, 400, "%s", cause ? cause :
		    "the body must be a JSON object");
		goto out;
	}
	if ((v = json_object_get(body, "grace_ms")) != NULL) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > 86400000) {
			api_error(req, 400, "grace_ms: must be an integer "
			    "from 0 to 86400000");
			goto out;
		}
		*grace = json_integer_value(v);
	}
	*wait = json_is_true(json_object_get(body, "wait"));
	if (cancel != NULL && (v = json_object_get(body, "cancel")) != NULL)
		*cancel = json_incref(v);
	rc = 0;
out:
	free(cause);
	json_decref(body);
	return (rc);
}

/*
 * POST /v1/jobs/ID/stop {"grace_ms": N, "wait": bool} or {"cancel": true}
 */
void
api_job_stop(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct job	*j;
	json_t		*o, *cancel;
	int64_t		 grace;
	int		 wait;

	if (api_array_stop(req, id, who))
		return;
	if ((j = api_job_lookup(req, id, who)) == NULL)
		return;
	grace = j->req.grace_ms;
	if (api_stop_body(req, &grace, &wait, &cancel) != 0)
		return;
	if (cancel != NULL) {
		api_job_stop_cancel(req, j, cancel);
		json_decref(cancel);
		return;
	}
	job_stop(j, grace, "stopped");
	if (wait && !job_ended(j)) {
		follow_start(j, req, 0, FOLLOW_WAIT, NULL);
		return;
	}
	o = job_to_json(j);
	api_reply(req, job_ended(j) ? 200 : 202, o);
	json_decref(o);
}

/* GET /v1/jobs/ID/log?from=N&follow=1&raw=1 */
void
api_job_log(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct job	*j;
	json_t		*info;
	const char	*from;
	uint64_t	 off = 0;
	char		*end;
	int		 flags = 0;

	if ((j = api_job_lookup(req, id, who)) == NULL)
		return;
	if ((from = api_query(req, "from")) != NULL) {
		off = strtoull(from, &end, 10);
		if (*from == '\0' || *end != '\0' || *from == '-') {
			api_error(req, 400, "from: must be a byte offset");
			return;
		}
	}
	if (api_query_flag(req, "follow"))
		flags |= FOLLOW_LIVE;
	if (api_query_flag(req, "raw"))
		flags |= FOLLOW_RAW;
	/* A job that waits says so first: it may have queued meanwhile. */
	info = (flags & FOLLOW_LIVE) && j->state == JOB_QUEUED ?
	    job_info_json(j) : NULL;
	follow_start(j, req, off, flags, info);
	json_decref(info);
}

void
api_version(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	json_t	*o;

	o = json_pack("{s:s,s:i}", "version", GMUX_VERSION, "api", 1);
	api_reply(req, 200, o);
	json_decref(o);
}
