/*
 * api-task.c: the task broker's routes (docs/tasks.md): a caller's
 * upgrade to its framed task stream, and the list of workers.
 */

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/bufferevent.h>
#include <event2/http.h>

#include "gmux.h"
#include "task-int.h"

/* GET /v1/tasks/connect?session=HEX with Upgrade: gmux-tasks/1 */
void
api_tasks_connect(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct evhttp_connection	*evcon;
	struct bufferevent		*bev;
	const char			*up, *session;
	char				*cause = NULL, *s;

	up = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "Upgrade");
	if (up == NULL || strcasecmp(up, "gmux-tasks/1") != 0) {
		api_error(req, 400, "Upgrade: gmux-tasks/1 is needed");
		return;
	}
	session = api_query(req, "session");
	if (session == NULL || !task_session_valid(session)) {
		api_error(req, 400, "session: 16 to 64 hex digits are needed");
		return;
	}
	if (task_conn_broker(&cause) == NULL) {
		api_error(req, 500, "tasks: %s", cause);
		free(cause);
		return;
	}
	if (!task_conn_session_ok(session, who->owner)) {
		api_error(req, 403, "session: another owner's");
		return;
	}
	evcon = evhttp_request_get_connection(req);
	bev = evhttp_connection_get_bufferevent(evcon);
	s = xstrdup(session);	/* the query's storage is the request's */
	task_conn_caller(bev, evcon, who->owner, s,
	    who->transport == API_TCP);
	free(s);
}

/* GET /v1/workers */
void
api_workers_list(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	json_t	*a;

	/* an admin (the Unix socket, the daemon's user's token) sees all */
	a = task_conn_workers(who->admin ? NULL : who->owner);
	api_reply(req, 200, a);
	json_decref(a);
}

/*
 * For POST /v1/jobs with "task_worker": a @mesh worker, which must reach
 * the broker's socket, whoever asked and whatever its fence.  A fenced
 * job (a remote one always is: an open fence if it asked for none) gets
 * that socket in its allow list, the one socket of the host's a jailed
 * job may then reach (fence-unix.c); GMUX_WORKER_SOCK says where it is.
 * The broker serves a worker only its own job's owner's tasks.
 */
int
task_worker_job(struct jobreq *r, char **cause)
{
	char	*rule;
	size_t	 n = 0, i, len = strlen("GMUX_WORKER_SOCK=");
	int	 rc = 0;

	if (r->confined && r->fence == NULL)
		r->fence = fence_open();
	if (r->fence != NULL) {
		xasprintf(&rule, "unix:%s", path_task_socket());
		rc = fence_allow(r->fence, rule, cause);
		free(rule);
		if (rc != 0)
			return (-1);
	}
	for (i = 0; r->env != NULL && r->env[i] != NULL; i++) {
		if (strncmp(r->env[i], "GMUX_WORKER_SOCK=", len) != 0)
			r->env[n++] = r->env[i];
		else
			free(r->env[i]);
	}
	r->env = xreallocarray(r->env, n + 2, sizeof *r->env);
	xasprintf(&r->env[n], "GMUX_WORKER_SOCK=%s", path_task_socket());
	r->env[n + 1] = NULL;
	return (0);
}
