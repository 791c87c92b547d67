/* api-card.c: the /v1/cards route. */

#include <stdlib.h>

#include "gmux.h"

/* GET /v1/cards: each card with what is free on it and its jobs. */
void
api_cards_list(struct evhttp_request *req, const char *id)
{
	struct job	*j;
	json_t		*a, *o;
	u_int		 i, *njobs, seats, burst;
	uint64_t	 mem;

	njobs = xcalloc(server_cards.n + 1, sizeof *njobs);
	TAILQ_FOREACH(j, &all_jobs, entry) {
		for (i = 0; j->state == JOB_RUNNING && i < server_cards.n; i++)
			if (j->cards & (1ULL << i))
				njobs[i]++;
	}
	a = json_array();
	for (i = 0; i < server_cards.n; i++) {
		server_sched_card(i, &seats, &mem, &burst);
		/* A restart on smaller cards may leave more than fits. */
		if (seats > SEATS_PER_CARD)
			seats = SEATS_PER_CARD;
		if (mem > server_cards.v[i].memory)
			mem = server_cards.v[i].memory;
		o = card_to_json(&server_cards.v[i]);
		json_object_set_new(o, "share_free",
		    json_real((SEATS_PER_CARD - seats) / 100.0));
		json_object_set_new(o, "mem_free", json_integer(
		    (json_int_t)(server_cards.v[i].memory - mem)));
		json_object_set_new(o, "jobs", json_integer(njobs[i]));
		json_object_set_new(o, "guaranteed", json_real(seats / 100.0));
		json_object_set_new(o, "burst", json_real(burst / 100.0));
		json_object_set_new(o, "mem_used", json_integer((json_int_t)mem));
		json_object_set_new(o, "util", server_cards.v[i].fake ?
		    json_real(seats + burst > SEATS_PER_CARD ? 1.0 :
		    (seats + burst) / 100.0) : json_null());
		json_array_append_new(a, o);
	}
	api_reply(req, 200, a);
	json_decref(a);
	free(njobs);
}
