/*
 * server-api.c: the route table of the HTTP API and the helpers handlers
 * share.  Every route is written down in docs/api.md.  A pattern's "*"
 * matches one path segment, handed to the handler as its id.
 */

#include <sys/socket.h>

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "gmux.h"

#define API_MAX_BODY	(16 * 1024 * 1024)

struct route {
	enum evhttp_cmd_type	 method;
	const char		*pattern;
	void			(*fn)(struct evhttp_request *, const char *,
				    const struct api_who *);
};

static const struct route routes[] = {
	{ EVHTTP_REQ_GET, "/v1/version", api_version },
	{ EVHTTP_REQ_GET, "/v1/cards", api_cards_list },
	{ EVHTTP_REQ_GET, "/v1/jobs", api_jobs_list },
	{ EVHTTP_REQ_POST, "/v1/jobs", api_jobs_create },
	{ EVHTTP_REQ_GET, "/v1/jobs/*", api_job_get },
	{ EVHTTP_REQ_PATCH, "/v1/jobs/*", api_job_patch },
	{ EVHTTP_REQ_GET, "/v1/jobs/*/explain", api_job_explain },
	{ EVHTTP_REQ_POST, "/v1/jobs/*/stop", api_job_stop },
	{ EVHTTP_REQ_GET, "/v1/jobs/*/log", api_job_log },
	{ EVHTTP_REQ_GET, "/v1/jobs/*/status", api_job_status },
	{ EVHTTP_REQ_GET, "/v1/queue", api_queue_list },
	{ EVHTTP_REQ_GET, "/v1/usage", api_usage },
	{ EVHTTP_REQ_POST, "/v1/usage/prune", api_usage_prune },
	{ EVHTTP_REQ_GET, "/v1/usage/verify", api_usage_verify },
	{ EVHTTP_REQ_GET, "/metrics", api_metrics },
	/* remote runs (issue 7): docs/remote.md */
	{ EVHTTP_REQ_GET, "/v1/sync/manifest/*", api_sync_manifest_get },
	{ EVHTTP_REQ_POST, "/v1/sync/manifest", api_sync_manifest_post },
	{ EVHTTP_REQ_POST, "/v1/blobs", api_blobs_post },
	{ EVHTTP_REQ_PUT, "/v1/blobs/*", api_blob_put },
	{ EVHTTP_REQ_GET, "/v1/blobs/*", api_blob_get },
	{ EVHTTP_REQ_POST, "/v1/jobs/*/pull", api_job_pull },
	/* images that travel (issue 17): docs/containers.md */
	{ EVHTTP_REQ_GET, "/v1/images/*", api_image_get },
	{ EVHTTP_REQ_POST, "/v1/images", api_images_post },
	{ EVHTTP_REQ_GET, "/v1/tokens", api_tokens_list },
	{ EVHTTP_REQ_POST, "/v1/tokens", api_tokens_add },
	{ EVHTTP_REQ_POST, "/v1/tokens/*/revoke", api_token_revoke },
	{ EVHTTP_REQ_POST, "/v1/tokens/*/grant", api_token_grant },
	{ EVHTTP_REQ_POST, "/v1/join", api_join },
	/* tenants (issue 14): docs/tenants.md */
	{ EVHTTP_REQ_GET, "/v1/tenants", api_tenants_list },
	{ EVHTTP_REQ_PATCH, "/v1/tenants/*", api_tenant_quota },
	{ EVHTTP_REQ_DELETE, "/v1/tenants/*", api_tenant_rm },
	{ EVHTTP_REQ_PUT, "/v1/tenants/*/user", api_tenant_map },
	/* clusters (issue 15): docs/cluster.md */
	{ EVHTTP_REQ_GET, "/v1/cluster", api_cluster_get },
	{ EVHTTP_REQ_GET, "/v1/cluster/members", api_cluster_members },
	{ EVHTTP_REQ_GET, "/v1/cluster/leader", api_cluster_leader },
	{ EVHTTP_REQ_GET, "/v1/cluster/queue", api_cluster_queue },
	{ EVHTTP_REQ_GET, "/v1/cluster/jobs", api_cluster_jobs },
	{ EVHTTP_REQ_POST, "/v1/cluster/jobs", api_cluster_submit },
	{ EVHTTP_REQ_GET, "/v1/cluster/jobs/*", api_cluster_job },
	{ EVHTTP_REQ_POST, "/v1/cluster/jobs/*/stop", api_cluster_stop },
	{ EVHTTP_REQ_GET, "/v1/cluster/jobs/*/log", api_cluster_log },
	{ EVHTTP_REQ_GET, "/v1/cluster/jobs/*/terminal",
	    api_cluster_terminal },
	{ EVHTTP_REQ_GET, "/v1/cluster/jobs/*/port", api_cluster_port },
	/* tasks (issue 13): docs/tasks.md */
	{ EVHTTP_REQ_GET, "/v1/tasks/connect", api_tasks_connect },
	{ EVHTTP_REQ_GET, "/v1/tasks/peer-worker", api_tasks_peer_worker },
	{ EVHTTP_REQ_PUT, "/v1/tasks/values/*", api_task_value_put },
	{ EVHTTP_REQ_GET, "/v1/tasks/values/*", api_task_value_get },
	{ EVHTTP_REQ_GET, "/v1/workers", api_workers_list },
	/* terminals and ports (issue 17): docs/terminals.md */
	{ EVHTTP_REQ_GET, "/v1/jobs/*/terminal", api_job_terminal },
	{ EVHTTP_REQ_GET, "/v1/jobs/*/port", api_job_port },
	/* a workspace's images, remote owners' too (issue 17) */
	{ EVHTTP_REQ_POST, "/v1/jobs/*/save", api_job_save },
	{ EVHTTP_REQ_GET, "/v1/images", api_images_list },
	{ EVHTTP_REQ_POST, "/v1/builds", api_builds_post },
	/* the dashboard (issue 12): docs/ui.md */
	{ EVHTTP_REQ_GET, "/v1/events", api_events },
	{ EVHTTP_REQ_GET, "/v1/session", api_session },
	{ EVHTTP_REQ_GET, "/v1/usage/series", api_usage_series },
	{ EVHTTP_REQ_POST, "/ui/login", ui_login },
	{ EVHTTP_REQ_POST, "/ui/logout", ui_logout },
	{ EVHTTP_REQ_GET, "/ui", ui_get },
	{ EVHTTP_REQ_GET, "/ui/*", ui_get },
};

/* Matches path against pattern; the "*" segment is copied to id. */
static int
api_match(const char *pattern, const char *path, char *id, size_t idlen)
{
	size_t	 n;

	while (*pattern != '\0') {
		if (*pattern == '*') {
			n = strcspn(path, "/");
			if (n == 0 || n >= idlen)
				return (0);
			memcpy(id, path, n);
			id[n] = '\0';
			path += n;
			pattern++;
			continue;
		}
		if (*pattern++ != *path++)
			return (0);
	}
	return (*path == '\0' || strcmp(path, "/") == 0);
}

static const struct {
	enum evhttp_cmd_type	 method;
	const char		*name;
} api_methods[] = {		/* in the order Allow names them */
	{ EVHTTP_REQ_GET, "GET" },
	{ EVHTTP_REQ_HEAD, "HEAD" },
	{ EVHTTP_REQ_POST, "POST" },
	{ EVHTTP_REQ_PUT, "PUT" },
	{ EVHTTP_REQ_PATCH, "PATCH" },
	{ EVHTTP_REQ_DELETE, "DELETE" },
	{ EVHTTP_REQ_OPTIONS, "OPTIONS" },
	{ EVHTTP_REQ_TRACE, "TRACE" },
	{ EVHTTP_REQ_CONNECT, "CONNECT" },
};

static const char *
api_method_name(enum evhttp_cmd_type m)
{
	u_int	 i;

	for (i = 0; i < nitems(api_methods); i++) {
		if (api_methods[i].method == m)
			return (api_methods[i].name);
	}
	return ("?");
}

/*
 * Sets Allow to the methods path has ("GET, HEAD, OPTIONS"); HEAD goes
 * with GET, OPTIONS with every path.
 */
static void
api_allow(struct evhttp_request *req, const char *path)
{
	char		 id[128], allow[128] = "";
	int		 has = EVHTTP_REQ_OPTIONS;
	size_t		 at = 0;
	u_int		 i;

	for (i = 0; i < nitems(routes); i++) {
		if (api_match(routes[i].pattern, path, id, sizeof id))
			has |= routes[i].method;
	}
	if (has & EVHTTP_REQ_GET)
		has |= EVHTTP_REQ_HEAD;
	for (i = 0; i < nitems(api_methods); i++) {
		if (!(has & api_methods[i].method))
			continue;
		at += (size_t)snprintf(allow + at, sizeof allow - at, "%s%s",
		    at != 0 ? ", " : "", api_methods[i].name);
	}
	evhttp_add_header(evhttp_request_get_output_headers(req), "Allow",
	    allow);
}

/*
 * A request whose length is told twice is refused (400, and the
 * connection closed): a proxy in front may have read the other one, and
 * what follows the body would be read as another request.
 */
static int
api_length_twice(struct evhttp_request *req)
{
	struct evkeyvalq	*h = evhttp_request_get_input_headers(req);
	struct evkeyval		*kv;
	u_int			 n = 0;

	TAILQ_FOREACH(kv, h, next) {
		if (strcasecmp(kv->key, "Content-Length") == 0)
			n++;
	}
	if (n < 2)
		return (0);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Connection", "close");
	api_error(req, 400, "Content-Length: given more than once");
	return (1);
}

/*
 * Runs the route for req as who: the one place a request's who-and-how
 * reaches its handler (the TCP listener resolves its token first).
 * HEAD runs GET's (libevent sends no body for it); OPTIONS answers 204
 * with Allow, as every 405 does.
 */
void
api_dispatch(struct evhttp_request *req, const struct api_who *who)
{
	const struct evhttp_uri	*uri = evhttp_request_get_evhttp_uri(req);
	const char		*path = evhttp_uri_get_path(uri);
	enum evhttp_cmd_type	 m = evhttp_request_get_command(req), as;
	char			 id[128];
	u_int			 i;
	int			 path_known = 0;

	if (path == NULL)
		path = "/";
	log_debug("%s: %s %s as %s%s", __func__, api_method_name(m), path,
	    who->owner, who->transport == API_TCP ? " over TCP" : "");
	if (api_length_twice(req))
		return;
	as = m == EVHTTP_REQ_HEAD ? EVHTTP_REQ_GET : m;
	for (i = 0; i < nitems(routes); i++) {
		if (!api_match(routes[i].pattern, path, id, sizeof id))
			continue;
		path_known = 1;
		if (routes[i].method != as)
			continue;
		routes[i].fn(req, id, who);
		return;
	}
	if (!path_known) {
		api_error(req, 404, "no such route: %s", path);
		return;
	}
	api_allow(req, path);
	if (m == EVHTTP_REQ_OPTIONS)
		evhttp_send_reply(req, 204, "No Content", NULL);
	else
		api_error(req, 405, "%s is not allowed on %s",
		    api_method_name(m), path);
}

/*
 * A request on the Unix socket: its owner is the peer's user, from the
 * kernel (a client cannot claim to be someone else).  Only the daemon's
 * own user reaches the socket, so it may act on every job.
 */
static void
api_dispatch_local(struct evhttp_request *req, void *arg)
{
	struct evhttp_connection	*evcon;
	struct bufferevent		*bev;
	struct api_who			 who;
	struct ucred			 cred;
	socklen_t			 len = sizeof cred;
	char				*owner = NULL;
	int				 fd;

	evcon = evhttp_request_get_connection(req);
	bev = evhttp_connection_get_bufferevent(evcon);
	fd = bev != NULL ? bufferevent_getfd(bev) : -1;
	if (fd != -1 && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred,
	    &len) == 0 && cred.uid != getuid())
		owner = user_name(cred.uid);
	memset(&who, 0, sizeof who);
	who.transport = API_UNIX;
	who.owner = owner != NULL ? owner : api_me();
	who.admin = 1;
	api_dispatch(req, &who);
	free(owner);
}

/* The daemon's own user's name, looked up once. */
const char *
api_me(void)
{
	static char	*me;

	if (me == NULL)
		me = user_name(getuid());
	return (me);
}

/*
 * May who act on what owner made?  Its owner may, and an admin (the
 * daemon's own user, on its socket or with its token) may.
 */
int
api_may(const struct api_who *who, const char *owner)
{
	return (who->admin || strcmp(who->owner, owner) == 0);
}

/*
 * May who see and act on job j?  As api_may, and not a cluster's job for
 * a token that cluster is not granted (cluster-grant.c).
 */
int
api_may_job(const struct api_who *who, const struct job *j)
{
	return (api_may(who, j->owner) && !cluster_grant_hides(who, j));
}

void
api_setup(struct evhttp *http)
{
	int	 all = 0;
	u_int	 i;

	for (i = 0; i < nitems(api_methods); i++)
		all |= api_methods[i].method;
	evhttp_set_allowed_methods(http, all);
	evhttp_set_max_body_size(http, API_MAX_BODY);
	evhttp_set_max_headers_size(http, 64 * 1024);
	evhttp_set_timeout(http, 3600);
	evhttp_set_gencb(http, api_dispatch_local, NULL);
}

/* Parses the request's JSON body; NULL with *cause if it is not JSON. */
json_t *
api_body(struct evhttp_request *req, char **cause)
{
	struct evbuffer	*b = evhttp_request_get_input_buffer(req);
	size_t		 len = evbuffer_get_length(b);
	json_error_t	 err;
	json_t		*o;

	if (len == 0) {
		xasprintf(cause, "a JSON body is needed");
		return (NULL);
	}
	o = json_loadb((const char *)evbuffer_pullup(b, -1), len,
	    JSON_REJECT_DUPLICATES, &err);
	if (o == NULL)
		xasprintf(cause, "malformed JSON at line %d: %s", err.line,
		    err.text);
	return (o);
}

/*
 * Sends b (may be NULL) with code.  A HEAD gets GET's headers with the
 * length of the body it would have had, and no body: libevent would send
 * it (and no Content-Length) otherwise.
 */
void
api_send(struct evhttp_request *req, int code, struct evbuffer *b)
{
	char	 len[32];

	if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {
		snprintf(len, sizeof len, "%zu", b != NULL ?
		    evbuffer_get_length(b) : 0);
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Content-Length", len);
		if (b != NULL)
			evbuffer_drain(b, evbuffer_get_length(b));
	}
	evhttp_send_reply(req, code, code < 400 ? "OK" : "Error", b);
}

/* Replies with a JSON body (may be NULL: an empty object). */
void
api_reply(struct evhttp_request *req, int code, json_t *o)
{
	struct evbuffer	*b;
	char		*text;

	/* 15 digits: a share of 0.1 is 0.1, not 0.10000000000000001. */
	b = evbuffer_new();
	text = o != NULL ? json_dumps(o, JSON_COMPACT|JSON_ENCODE_ANY|
	    JSON_REAL_PRECISION(15)) : NULL;
	evbuffer_add_printf(b, "%s\n", text != NULL ? text : "{}");
	free(text);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "application/json");
	api_send(req, code, b);
	evbuffer_free(b);
}

void
api_error(struct evhttp_request *req, int code, const char *fmt, ...)
{
	va_list	 ap;
	char	*msg;
	json_t	*o;

	va_start(ap, fmt);
	xvasprintf(&msg, fmt, ap);
	va_end(ap);
	log_debug("%s: %d %s", __func__, code, msg);
	o = json_pack("{s:s}", "error", msg);
	api_reply(req, code, o);
	json_decref(o);
	free(msg);
}

/* Returns a query parameter's value, or NULL; valid during the request. */
const char *
api_query(struct evhttp_request *req, const char *name)
{
	static struct evkeyvalq	 q;
	static int		 have;
	const char		*query;

	if (have)
		evhttp_clear_headers(&q);
	have = 0;
	TAILQ_INIT(&q);
	query = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
	if (query == NULL || evhttp_parse_query_str(query, &q) != 0)
		return (NULL);
	have = 1;
	return (evhttp_find_header(&q, name));
}

/* Is a query flag such as ?all=1 set? */
int
api_query_flag(struct evhttp_request *req, const char *name)
{
	const char	*v = api_query(req, name);

	return (v != NULL && (strcmp(v, "1") == 0 || strcmp(v, "true") == 0));
}
