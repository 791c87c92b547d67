/*
 * api-task.c: the task broker's routes (docs/tasks.md): a caller's
 * upgrade to its framed task stream, and the list of workers.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/bufferevent.h>
#include <event2/http.h>

#include "gmux.h"
#include "task-int.h"

/*
 * A task stream's request: its upgrade asked for, the broker there.  -1
 * if not (the request is answered).
 */
static int
task_upgrade(struct evhttp_request *req)
{
	const char	*up;
	char		*cause = NULL;

	up = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "Upgrade");
	if (up == NULL || strcasecmp(up, "gmux-tasks/1") != 0) {
		api_error(req, 400, "Upgrade: gmux-tasks/1 is needed");
		return (-1);
	}
	if (task_conn_broker(&cause) == NULL) {
		api_error(req, 500, "tasks: %s", cause);
		free(cause);
		return (-1);
	}
	return (0);
}

/* GET /v1/tasks/connect?session=HEX with Upgrade: gmux-tasks/1 */
void
api_tasks_connect(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct evhttp_connection	*evcon;
	struct bufferevent		*bev;
	const char			*session;
	char				*s;

	if (task_upgrade(req) != 0)
		return;
	session = api_query(req, "session");
	if (session == NULL || !task_session_valid(session)) {
		api_error(req, 400, "session: 16 to 64 hex digits are needed");
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

/*
 * What a peer worker's member says of its job there, for the listing:
 * seats (0-100), card (0-63) and mem_mb, each optional.  -1 if one is
 * bad (the request is answered, naming it).
 */
static int
task_peer_shape(struct evhttp_request *req, struct task_peer *pw)
{
	static const char *const names[] = { "seats", "card", "mem_mb" };
	static const u_int	 max[] = { 100, 63, INT32_MAX };
	int			 out[3];
	u_int			 v, i;
	const char		*s;
	char			*cause = NULL;

	for (i = 0; i < nitems(names); i++) {
		out[i] = -1;
		if ((s = api_query(req, names[i])) == NULL)
			continue;
		if (parse_uint(s, 0, max[i], &v, &cause) != 0) {
			api_error(req, 400, "%s: %s", names[i], cause);
			free(cause);
			return (-1);
		}
		out[i] = (int)v;
	}
	pw->seats = out[0];
	pw->card = out[1];
	pw->mem = out[2] >= 0 ? (int64_t)out[2] << 20 : -1;
	return (0);
}

/*
 * GET /v1/tasks/peer-worker?job=ID with Upgrade: gmux-tasks/1: a @mesh
 * worker that runs on another member for this one's broker, relayed by
 * its member (task-peer.c), ID its cluster job.  Taken only as a member's
 * call: the owner is the one X-Gmux-Peer-Owner names, believed only from
 * a live member's certificate (server-tls.c); the worker is leased that
 * owner's tasks of its pool only, and sends values inline only.
 */
void
api_tasks_peer_worker(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct evhttp_connection	*evcon;
	struct bufferevent		*bev;
	struct task_peer		 pw;
	const char			*job, *member;

	evcon = evhttp_request_get_connection(req);
	bev = evhttp_connection_get_bufferevent(evcon);
	if (!who->proxied || (member = cluster_peer_conn(bev)) == NULL) {
		api_error(req, 403, "tasks/peer-worker: only a member of this "
		    "cluster relays its workers");
		return;
	}
	if (task_upgrade(req) != 0 || task_peer_shape(req, &pw) != 0)
		return;
	job = api_query(req, "job");
	if (job == NULL || !task_pool_valid(job)) {
		api_error(req, 400, "job: a cluster job's id is needed");
		return;
	}
	/* the mirror's, the query's (the last asked): copied at once */
	pw.owner = who->owner;
	pw.member = member;
	pw.job = job;
	task_conn_peer(bev, evcon, &pw);
}

/* GET /v1/workers[?here=1]: on a member, every member's (here: its own) */
void
api_workers_list(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	json_t	*a;

	/* an admin (the Unix socket, the daemon's user's token) sees all */
	a = task_conn_workers(who->admin ? NULL : who->owner);
	if (cluster_usage_merges(req, who)) {	/* as the books merge */
		cluster_workers(req, who, a);
		return;
	}
	api_reply(req, 200, a);
	json_decref(a);
}

/*
 * Which model each card of this host is, GMUX_CARD_MODELS=0=H100,...: a
 * worker names its device from it (the caller's cards, when the caller
 * is on another host, are not this host's).
 */
static void
task_worker_models(struct jobreq *r)
{
	char	*v = xstrdup(""), *next;
	u_int	 i;

	for (i = 0; i < server_cards.n; i++) {
		xasprintf(&next, "%s%s%u=%s", v, i == 0 ? "" : ",",
		    server_cards.v[i].index, server_cards.v[i].model);
		free(v);
		v = next;
	}
	job_env_set(&r->env, "GMUX_CARD_MODELS=%s", v);
	free(v);
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

	if (task_conn_broker(cause) == NULL)	/* its socket, before it */
		return (-1);
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
	if (cluster_peer_self() != NULL)	/* which member's it is */
		job_env_set(&r->env, "GMUX_CLUSTER_MEMBER=%s",
		    cluster_peer_self());
	task_worker_models(r);
	return (0);
}
