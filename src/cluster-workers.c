/*
 * cluster-workers.c: every member's @mesh workers, merged (docs/python.md,
 * "Across a cluster").  Each member's broker knows the workers that work
 * for it, wherever they run; GET /v1/workers on a member asks every live
 * member, this one included, for its own (here=1, a member's call for the
 * same owner, so each applies its own owner filter; this member's own
 * come from its broker, not over TLS) and answers them in
 * one array, each worker with its broker's member as "host", and a row
 * {"host", "state": "missing", "error"} for each member that did not
 * answer.
 */

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "cluster-int.h"

struct cw {
	struct evhttp_request	*req;
	json_t			*hosts;		/* name: [worker] or missing */
};

static int
cw_cmp(const void *a, const void *b)
{
	return (strcmp(*(const char *const *)a, *(const char *const *)b));
}

/*
 * Takes member name's answer into hosts ({name: [worker] or a missing
 * row}): its workers (objects only), each marked with name as its host,
 * or, for an error (err, a status other than 200, no array), the row
 * saying why.
 */
void
cluster_workers_take(json_t *hosts, const char *name, int code,
    const char *body, size_t len, const char *err)
{
	json_t		*o = NULL, *a, *w;
	const char	*e;
	char		*why;
	size_t		 i;

	if (err == NULL)
		o = json_loadb(body, len, 0, NULL);
	if (err == NULL && code == 200 && json_is_array(o)) {
		a = json_array();
		json_array_foreach(o, i, w) {
			if (!json_is_object(w))
				continue;
			json_object_set_new(w, "host", json_string(name));
			json_array_append(a, w);
		}
		json_object_set_new(hosts, name, a);
	} else {
		e = json_string_value(json_object_get(o, "error"));
		if (err != NULL)
			why = xstrdup(err);
		else
			xasprintf(&why, "%d: %s", code, e != NULL ? e :
			    "not a list of workers");
		json_object_set_new(hosts, name, json_pack("{s:s,s:s,s:s}",
		    "host", name, "state", "missing", "error", why));
		free(why);
	}
	json_decref(o);
}

/* The merged list (a new reference): by member's name, by worker. */
json_t *
cluster_workers_merge(json_t *hosts)
{
	const char	**names, *name;
	json_t		*out = json_array(), *v, *w;
	size_t		 n = 0, i, j;

	names = xcalloc(json_object_size(hosts) + 1, sizeof *names);
	json_object_foreach(hosts, name, v)
		names[n++] = name;
	qsort(names, n, sizeof *names, cw_cmp);
	for (i = 0; i < n; i++) {
		v = json_object_get(hosts, names[i]);
		if (!json_is_array(v)) {
			json_array_append(out, v);
			continue;
		}
		json_array_foreach(v, j, w)
			json_array_append(out, w);
	}
	free(names);
	return (out);
}

/* Every member has answered, or failed to. */
static void
cw_reply(void *arg)
{
	struct cw	*cw = arg;
	json_t		*out = cluster_workers_merge(cw->hosts);

	api_reply(cw->req, 200, out);
	json_decref(out);
	json_decref(cw->hosts);
	free(cw);
}

static void
cw_answer(const char *name, int code, struct evbuffer *body,
    const char *err, void *arg)
{
	struct cw	*cw = arg;

	if (err == NULL)
		cluster_workers_take(cw->hosts, name, code, (const char *)
		    evbuffer_pullup(body, -1), evbuffer_get_length(body), NULL);
	else
		cluster_workers_take(cw->hosts, name, code, NULL, 0, err);
}

/*
 * GET /v1/workers on a member: each live member's, for who; here is this
 * member's own (the merged answer takes the reference).
 */
void
cluster_workers(struct evhttp_request *req, const struct api_who *who,
    json_t *here)
{
	struct cw	*cw;
	json_t		*w;
	size_t		 i;

	cw = xcalloc(1, sizeof *cw);
	cw->req = req;
	cw->hosts = json_object();
	json_array_foreach(here, i, w) {
		json_object_set_new(w, "host",
		    json_string(cluster_peer_self()));
	}
	json_object_set_new(cw->hosts, cluster_peer_self(), here);
	cluster_peer_each("/v1/workers?here=1", who, cluster_peer_self(),
	    cw_answer, cw_reply, cw);
}
