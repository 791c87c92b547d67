/* api-job.c: the /v1/jobs routes. */

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "gmux.h"

static int
job_listed(const struct job *j, int all)
{
	return (all || !job_ended(j));
}

void
api_jobs_list(struct evhttp_request *req, const char *id)
{
	struct job	*j;
	json_t		*a;
	int		 all = api_query_flag(req, "all");

	a = json_array();
	TAILQ_FOREACH(j, &all_jobs, entry) {
		if (job_listed(j, all))
			json_array_append_new(a, job_to_json(j));
	}
	api_reply(req, 200, a);
	json_decref(a);
}

static struct job *
api_job_lookup(struct evhttp_request *req, const char *id)
{
	struct job	*j;

	if ((j = job_find(id)) == NULL)
		api_error(req, 404, "no job %s", id);
	return (j);
}

/*
 * POST /v1/jobs: checks the request, places it and starts it.  422 if no
 * card could ever hold it, 409 if none can now; with ?attach=1 the reply is
 * the job's output stream, else 201 and the job.
 */
void
api_jobs_create(struct evhttp_request *req, const char *id)
{
	struct jobreq	 r;
	struct job	*j;
	json_t		*body, *o;
	char		*cause = NULL, *owner;
	int		 rc;

	jobreq_init(&r);
	if ((body = api_body(req, &cause)) == NULL ||
	    jobreq_from_json(body, &r, &cause) != 0) {
		api_error(req, 400, "%s", cause);
		goto out;
	}
	owner = api_owner(req);
	j = job_create(0, owner, &r);
	free(owner);
	if ((rc = server_place(j, &cause)) != 0) {
		api_error(req, rc == -1 ? 422 : 409, "%s", cause);
		job_free(j);
		goto out;
	}
	job_set_id(j, state_next_id());
	if (job_start(j, &cause) != 0) {
		j->state = JOB_FAILED;
		j->reason = xstrdup(cause);
		j->ended = clock_ms();
		state_save_job(j);
		api_error(req, 500, "%s", cause);
		goto out;
	}
	state_save_job(j);
	o = job_to_json(j);
	if (api_query_flag(req, "attach"))
		follow_start(j, req, 0, FOLLOW_LIVE, o);
	else
		api_reply(req, 201, o);
	json_decref(o);
out:
	free(cause);
	json_decref(body);
	jobreq_clear(&r);
}

void
api_job_get(struct evhttp_request *req, const char *id)
{
	struct job	*j;
	json_t		*o;

	if ((j = api_job_lookup(req, id)) == NULL)
		return;
	o = job_to_json(j);
	api_reply(req, 200, o);
	json_decref(o);
}

/* POST /v1/jobs/ID/stop {"grace_ms": N, "wait": bool} */
void
api_job_stop(struct evhttp_request *req, const char *id)
{
	struct job	*j;
	json_t		*body = NULL, *v, *o;
	json_int_t	 grace;
	char		*cause = NULL;
	int		 wait = 0;

	if ((j = api_job_lookup(req, id)) == NULL)
		return;
	grace = j->req.grace_ms;
	if (evbuffer_get_length(evhttp_request_get_input_buffer(req)) > 0) {
		if ((body = api_body(req, &cause)) == NULL ||
		    !json_is_object(body)) {
			api_error(req, 400, "%s", cause ? cause :
			    "the body must be a JSON object");
			goto out;
		}
		if ((v = json_object_get(body, "grace_ms")) != NULL) {
			if (!json_is_integer(v) || json_integer_value(v) < 0) {
				api_error(req, 400, "grace_ms: must be a "
				    "non-negative integer");
				goto out;
			}
			grace = json_integer_value(v);
		}
		wait = json_is_true(json_object_get(body, "wait"));
	}
	job_stop(j, grace, "stopped");
	if (wait && !job_ended(j)) {
		follow_start(j, req, 0, FOLLOW_WAIT, NULL);
		goto out;
	}
	o = job_to_json(j);
	api_reply(req, job_ended(j) ? 200 : 202, o);
	json_decref(o);
out:
	free(cause);
	json_decref(body);
}

/* GET /v1/jobs/ID/log?from=N&follow=1&raw=1 */
void
api_job_log(struct evhttp_request *req, const char *id)
{
	struct job	*j;
	const char	*from;
	uint64_t	 off = 0;
	char		*end;
	int		 flags = 0;

	if ((j = api_job_lookup(req, id)) == NULL)
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
	follow_start(j, req, off, flags, NULL);
}

void
api_version(struct evhttp_request *req, const char *id)
{
	json_t	*o;

	o = json_pack("{s:s,s:i}", "version", GMUX_VERSION, "api", 1);
	api_reply(req, 200, o);
	json_decref(o);
}
