/* api-card.c: the /v1/cards route. */

#include <stdlib.h>

#include "gmux.h"

/*
 * A card's measured use, 0 to 1: the vendor tool's figure, or for a fake
 * card a synthetic load (its guarantees and burst ceilings, as if every
 * job used all it may); null when it is not known.
 */
double
card_util(const struct card *c, u_int seats)
{
	if (c->fake)
		return (seats > SEATS_PER_CARD ? 1.0 : seats / 100.0);
	return (c->util < 0 ? -1 : c->util / 100.0);
}

static json_t *
card_util_json(const struct card *c, u_int seats)
{
	double	 u = card_util(c, seats);

	return (u < 0 ? json_null() : json_real(u));
}

/*
 * Each card with what is free on it and its jobs, as GET /v1/cards (and
 * the dashboard's events) show them.  Returns a new reference.
 */
json_t *
api_cards_json(void)
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
		/* The host's, on each card: what a job with --image gets. */
		json_object_set_new(o, "containers", container_host_json());
		json_object_set_new(o, "burst", json_real(burst / 100.0));
		json_object_set_new(o, "mem_used",
		    json_integer((json_int_t)mem));
		if (server_cards.v[i].mem_measured != CARD_UNKNOWN)
			json_object_set_new(o, "mem_measured", json_integer(
			    (json_int_t)server_cards.v[i].mem_measured));
		json_object_set_new(o, "util", card_util_json(
		    &server_cards.v[i], seats + burst));
		json_array_append_new(a, o);
	}
	free(njobs);
	return (a);
}

/* GET /v1/cards */
void
api_cards_list(struct evhttp_request *req, const char *id,
    const struct api_who *who)
{
	json_t	*a = api_cards_json();

	api_reply(req, 200, a);
	json_decref(a);
}
