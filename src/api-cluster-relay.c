/*
 * api-cluster-relay.c: a cluster job's output, terminal and published
 * ports, asked of any member (docs/cluster.md, "Members calling members"
 * and "Terminals and ports through any member"): served here if the job
 * runs here, else relayed from its member.
 */

#include <string.h>

#include <event2/http.h>

#include "cluster-int.h"
#include "api-cluster-int.h"

/* Who asked, again, valid while a is. */
static void
ac_who(const struct ac *a, struct api_who *who)
{
	memset(who, 0, sizeof *who);
	who->transport = a->transport;
	who->owner = a->owner;
	who->admin = a->admin;
	who->confined = a->confined;
	who->proxied = a->proxied;
}

/* Answers a->req about local job j here: its output, terminal or port. */
static void
ac_here(struct ac *a, struct job *j, const struct api_who *who)
{
	if (a->proto == NULL)
		api_job_log(a->req, j->name, who);
	else if (strcmp(a->proto, TERM_UPGRADE) == 0)
		api_job_terminal(a->req, j->name, who);
	else
		api_job_port(a->req, j->name, who);
}

/*
 * The job's record came: its output (terminal, port) is served here if
 * it runs here, else asked of its member (a member's own call is never
 * passed on again: the job moved meanwhile).
 */
static void
ac_log_cb(struct etcd_reply *r, const char *err, void *arg)
{
	struct ac		*a = arg;
	const struct etcd_kv	*kv;
	const char		*member, *id = json_string_value(a->body);
	const char		*uri = evhttp_request_get_uri(a->req);
	struct api_who		 who;
	struct job		*j;
	json_t			*o, *p;

	if (ac_failed(a, err))
		return;
	if ((o = ac_find(a, r, id, &kv, 1)) == NULL) {
		ac_free(a);
		return;
	}
	/* a gang's: its rank 0's (gmux run follows that one too) */
	if (kv == NULL && (p = ac_rank0(o)) != NULL) {
		json_incref(p);		/* o holds it */
		json_decref(o);
		o = p;
		id = json_string_value(json_object_get(o, "id"));
	}
	ac_who(a, &who);
	member = json_string_value(json_object_get(o, "member"));
	if (kv != NULL && kv->key[strlen(cluster->prefix)] == 'y')
		api_error(a->req, 400, "%s is an array: the output is its "
		    "elements' (%s_N)", id, id);	/* never a job's */
	else if (member == NULL && a->proto != NULL)	/* gmux shell waits */
		api_error(a->req, 409, "%s is queued: %s in the cluster", id,
		    json_string_value(json_object_get(o, "state")));
	else if (member == NULL)
		api_error(a->req, 409, "%s is %s: no output yet", id,
		    json_string_value(json_object_get(o, "state")));
	else if (strcmp(member, cluster->name) != 0 && a->proxied)
		api_error(a->req, 409, "%s runs on %s now", id, member);
	else if (strcmp(member, cluster->name) != 0 && a->proto == NULL)
		cluster_peer_relay(member, uri, &who, a->req);
	else if (strcmp(member, cluster->name) != 0)
		term_peer_relay(member, uri, &who, a->req, a->proto);
	else if ((j = cluster_job_local(id)) == NULL)
		api_error(a->req, 409, "%s has not started on %s yet", id,
		    member);
	else
		ac_here(a, j, &who);
	json_decref(o);
	ac_free(a);
}

/*
 * GET /v1/cluster/jobs/ID/log?from=N&follow=1: a cluster job's output,
 * asked of any member: read here, or relayed from the member that runs it
 * (docs/cluster.md, "Members calling members").
 */
void
api_cluster_log(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	struct ac	*a;

	if ((a = ac_job_request(req, id, who)) != NULL)
		etcd_range(cluster->etcd, cluster->prefix, 1, ac_log_cb, a);
}

/* A cluster job's upgrade to proto, served here or relayed. */
static void
ac_upgrade(struct evhttp_request *req, const char *id,
    const struct api_who *who, const char *proto)
{
	struct ac	*a;

	if ((a = ac_job_request(req, id, who)) == NULL)
		return;
	a->proto = proto;
	etcd_range(cluster->etcd, cluster->prefix, 1, ac_log_cb, a);
}

/*
 * GET /v1/cluster/jobs/ID/terminal and /port, upgraded: a cluster job's
 * terminal or published port, asked of any member, served here or
 * relayed from its member (docs/cluster.md, "Terminals and ports through
 * any member").
 */
void
api_cluster_terminal(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	ac_upgrade(req, id, who, TERM_UPGRADE);
}

void
api_cluster_port(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	ac_upgrade(req, id, who, PORT_UPGRADE);
}
