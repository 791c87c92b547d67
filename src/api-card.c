/* api-card.c: the /v1/cards route. */

#include <stdlib.h>

#include "gmux.h"

/* GET /v1/cards: each card with what is free on it and its jobs. */
void
api_cards_list(struct evhttp_request *req, const char *id)
{
	struct sched_card	*sc;
	struct job		*j;
	json_t			*a, *o;
	u_int			 i, *njobs;

	sc = xcalloc(server_cards.n + 1, sizeof *sc);
	njobs = xcalloc(server_cards.n + 1, sizeof *njobs);
	server_card_usage(sc);
	TAILQ_FOREACH(j, &all_jobs, entry) {
		if (j->state == JOB_RUNNING && j->card >= 0 &&
		    (u_int)j->card < server_cards.n)
			njobs[j->card]++;
	}
	a = json_array();
	for (i = 0; i < server_cards.n; i++) {
		o = card_to_json(&server_cards.v[i]);
		json_object_set_new(o, "share_free", json_real(
		    (SEATS_PER_CARD - sc[i].seats_used) / 100.0));
		json_object_set_new(o, "mem_free", json_integer(
		    (json_int_t)(sc[i].memory - sc[i].mem_used)));
		json_object_set_new(o, "jobs", json_integer(njobs[i]));
		json_object_set_new(o, "guaranteed",
		    json_real(sc[i].seats_used / 100.0));
		json_object_set_new(o, "burst", json_real(0));
		json_object_set_new(o, "mem_used",
		    json_integer((json_int_t)sc[i].mem_used));
		json_object_set_new(o, "util", server_cards.v[i].fake ?
		    json_real(sc[i].seats_used > SEATS_PER_CARD ? 1.0 :
		    sc[i].seats_used / 100.0) : json_null());
		json_array_append_new(a, o);
	}
	api_reply(req, 200, a);
	json_decref(a);
	free(njobs);
	free(sc);
}
