/*
 * cluster-usage.c: the books of every member, merged (docs/cluster.md).
 * Each member keeps its own ledger; GET /v1/usage on a member asks every
 * live member for its rows (a member's call, for the same owner, so each
 * applies its own owner filter), and answers them together, each row
 * with its member as "host", and the members that did not answer.
 */

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "cluster-int.h"

struct cu {
	struct evhttp_request	*req;
	struct usage		 u;	/* merged (by, since: the first's) */
	int			 any;	/* a member has answered */
	json_t			*missing;	/* [{"name", "error"}] */
	json_t			*answered;	/* [name] */
};

/* Adds a member's report to the merged one, its rows marked as its own. */
static void
cu_add(struct cu *cu, struct usage *m, const char *name)
{
	u_int	 i;

	if (!cu->any) {
		cu->u.by = m->by;
		cu->u.since = m->since;
		cu->u.until = m->until;
		cu->u.total.key = xstrdup("total");
		cu->any = 1;
	}
	cu->u.rows = xreallocarray(cu->u.rows, cu->u.nrows + m->nrows + 1,
	    sizeof *cu->u.rows);
	for (i = 0; i < m->nrows; i++) {
		free(m->rows[i].host);
		m->rows[i].host = xstrdup(name);
		cu->u.rows[cu->u.nrows++] = m->rows[i];
	}
	m->nrows = 0;		/* the rows are the merged report's now */
	cu->u.total.jobs += m->total.jobs;	/* a job runs on one member */
	cu->u.total.seat_ms += m->total.seat_ms;
	cu->u.total.mem_gib_hours += m->total.mem_gib_hours;
}

/* Every member has answered, or failed to: the merged report. */
static void
cu_reply(void *arg)
{
	struct cu	*cu = arg;
	json_t		*o;

	if (!cu->any) {
		api_error(cu->req, 502, "no member answered for its books");
		goto out;
	}
	o = usage_to_json(&cu->u);
	json_object_set_new(o, "members", json_pack("{s:O,s:O}", "answered",
	    cu->answered, "missing", cu->missing));
	api_reply(cu->req, 200, o);
	json_decref(o);
out:
	usage_free(&cu->u);
	json_decref(cu->answered);
	json_decref(cu->missing);
	free(cu);
}

/* Why a member's answer is not a report: its error, or the status. */
static char *
cu_why(int code, json_t *o, const char *err)
{
	const char	*e = json_string_value(json_object_get(o, "error"));
	char		*why;

	if (err != NULL)
		why = xstrdup(err);
	else if (e != NULL)
		xasprintf(&why, "%d: %s", code, e);
	else
		xasprintf(&why, "%d: not a usage report", code);
	return (why);
}

static void
cu_answer(const char *name, int code, struct evbuffer *body,
    const char *err, void *arg)
{
	struct cu	*cu = arg;
	struct usage	 m;
	json_t		*o = NULL;
	char		*why = NULL;

	if (err == NULL)
		o = json_loadb((const char *)evbuffer_pullup(body, -1),
		    evbuffer_get_length(body), 0, NULL);
	if (err != NULL || code != 200 || usage_from_json(o, &m, &why) != 0) {
		free(why);
		why = cu_why(code, o, err);
		json_array_append_new(cu->missing, json_pack("{s:s,s:s}",
		    "name", name, "error", why));
		free(why);
	} else {
		cu_add(cu, &m, name);
		usage_free(&m);
		json_array_append_new(cu->answered, json_string(name));
	}
	json_decref(o);
}

/*
 * GET /v1/usage on a member: the same question (its query, and here=1:
 * a member answers for its own books) of every live member, this one
 * included, for who.
 */
void
cluster_usage(struct evhttp_request *req, const struct api_who *who)
{
	const char	*q;
	struct cu	*cu;
	char		*uri;

	q = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
	xasprintf(&uri, "/v1/usage?here=1%s%s", q != NULL && *q != '\0' ?
	    "&" : "", q != NULL ? q : "");
	cu = xcalloc(1, sizeof *cu);
	cu->req = req;
	cu->missing = json_array();
	cu->answered = json_array();
	cluster_peer_each(uri, who, NULL, cu_answer, cu_reply, cu);
	free(uri);
}

/*
 * Does GET /v1/usage merge the members' books: on a member, unless a
 * member asks (a member's call) or the asker wants this one's (here=1).
 */
int
cluster_usage_merges(struct evhttp_request *req, const struct api_who *who)
{
	return (cluster != NULL && !who->proxied && !who->ungranted &&
	    !api_query_flag(req, "here"));
}
