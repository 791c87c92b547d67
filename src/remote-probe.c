/*
 * remote-probe.c: what each configured host says of itself, asked of all
 * at once with a listing's deadlines (hosts-slow.c): its version, its
 * cards (what is free on them), and the round trip of one request on the
 * connection the first made.  gmux remote ls and gmux version show it.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"

/* Asks rv's hosts path, each on its kept connection if there is one. */
static void
probe_ask(struct remote_probe *p, u_int n, const char *path, int which)
{
	struct client_req	 q[REMOTES_MAX];
	u_int			 i, k = 0, map[REMOTES_MAX];

	for (i = 0; i < n; i++) {
		if (p[i].error != NULL)
			continue;
		client_req_init(&q[k], &p[i].rm->target, "GET", path);
		hosts_slow_deadlines(p[i].rm, &q[k]);
		map[k++] = i;
	}
	if (k == 0)
		return;
	client_multi(q, k, 0);
	for (i = 0; i < k; i++) {
		hosts_slow_heard(p[map[i]].rm, &q[i]);
		if (q[i].reply.status != 200 || q[i].reply.error != NULL) {
			xasprintf(&p[map[i]].error, "%s", q[i].reply.error ?
			    q[i].reply.error : "no answer");
		} else if (which == 0) {
			p[map[i]].version = json_incref(q[i].reply.body);
		} else if (which == 1) {
			p[map[i]].cards = json_incref(q[i].reply.body);
			p[map[i]].rtt_us = q[i].took_us;
		}
		client_reply_clear(&q[i].reply);
	}
}

/*
 * Probes n hosts (p[i].rm set by the caller): the version first (which
 * connects), then, with cards, the cards on that connection, whose time
 * is the round trip.  A host that does not answer gets p[i].error.
 */
void
remote_probe(struct remote_probe *p, u_int n, int cards)
{
	probe_ask(p, n, "/v1/version", 0);
	if (cards)
		probe_ask(p, n, "/v1/cards", 1);
}

/* What is free on a probed host's cards, summed. */
void
remote_probe_free(const struct remote_probe *p, struct remote_free *f)
{
	json_t	*c;
	size_t	 i;

	memset(f, 0, sizeof *f);
	json_array_foreach(p->cards, i, c) {
		f->cards++;
		f->share_free += json_number_value(json_object_get(c,
		    "share_free"));
		f->mem_free += (uint64_t)json_integer_value(json_object_get(c,
		    "mem_free"));
		f->memory += (uint64_t)json_integer_value(json_object_get(c,
		    "memory"));
		f->jobs += (u_int)json_integer_value(json_object_get(c,
		    "jobs"));
	}
}

void
remote_probe_clear(struct remote_probe *p, u_int n)
{
	u_int	 i;

	for (i = 0; i < n; i++) {
		free(p[i].error);
		json_decref(p[i].version);
		json_decref(p[i].cards);
		memset(&p[i], 0, sizeof p[i]);
	}
}
