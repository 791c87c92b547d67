/*
 * card.c: the host's cards.  Detection asks each vendor's tool in turn;
 * fake cards from --fake are added after the real ones, so both can mix.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"

static const char *vendor_names[] = {
	[VENDOR_NONE] = "none",
	[VENDOR_NVIDIA] = "nvidia",
	[VENDOR_AMD] = "amd",
	[VENDOR_INTEL] = "intel",
};

const char *
vendor_name(enum vendor v)
{
	if ((u_int)v >= nitems(vendor_names))
		return ("none");
	return (vendor_names[v]);
}

int
vendor_from_name(const char *s, enum vendor *v)
{
	u_int	 i;

	for (i = 0; i < nitems(vendor_names); i++) {
		if (strcasecmp(s, vendor_names[i]) == 0) {
			*v = (enum vendor)i;
			return (0);
		}
	}
	return (-1);
}

/* The variable that names a job's card to the vendor's runtime. */
const char *
vendor_device_env(enum vendor v)
{
	switch (v) {
	case VENDOR_NVIDIA:
		return ("CUDA_VISIBLE_DEVICES");
	case VENDOR_AMD:
		return ("HIP_VISIBLE_DEVICES");
	case VENDOR_INTEL:
		return ("ZE_AFFINITY_MASK");
	default:
		return (NULL);
	}
}

/* Appends a zeroed card and returns it; the list owns it. */
struct card *
cards_add(struct cards *cs)
{
	struct card	*c;

	cs->v = xreallocarray(cs->v, cs->n + 1, sizeof *cs->v);
	c = &cs->v[cs->n];
	memset(c, 0, sizeof *c);
	c->index = cs->n++;
	c->vendor_index = -1;
	return (c);
}

void
cards_free(struct cards *cs)
{
	u_int	 i;

	for (i = 0; i < cs->n; i++) {
		free(cs->v[i].model);
		free(cs->v[i].uuid);
		free(cs->v[i].enforce.why);
	}
	free(cs->v);
	cs->v = NULL;
	cs->n = 0;
}

/*
 * Finds every card: the vendors' tools first, then the fake ones from spec
 * (may be NULL).  A missing tool is not an error; a bad spec is.
 */
int
cards_detect(struct cards *cs, const char *fake, char **cause)
{
	char	*why = NULL;

	if (getenv("GMUX_NO_DETECT") == NULL) {
		if (card_nvidia_detect(cs, &why) != 0)
			goto tool;
		if (card_amd_detect(cs, &why) != 0)
			goto tool;
		if (card_intel_detect(cs, &why) != 0)
			goto tool;
	}
	if (fake != NULL && card_fake_parse(fake, cs, cause) != 0)
		return (-1);
	return (0);
tool:
	log_warnx("card detection: %s", why);
	free(why);
	if (fake != NULL && card_fake_parse(fake, cs, cause) != 0)
		return (-1);
	return (0);
}

/* Finds a card by gmux index or UUID. */
struct card *
cards_find(struct cards *cs, const char *s)
{
	u_int	 i, idx;
	char	*cause;

	for (i = 0; i < cs->n; i++) {
		if (cs->v[i].uuid != NULL && strcmp(cs->v[i].uuid, s) == 0)
			return (&cs->v[i]);
	}
	if (parse_uint(s, 0, 1023, &idx, &cause) != 0) {
		free(cause);
		return (NULL);
	}
	return (idx < cs->n ? &cs->v[idx] : NULL);
}

/*
 * What the vendor's device variable gets: the tool's index for real cards
 * (stable within a boot), gmux's index for fake ones.  Caller frees.
 */
char *
card_device_id(const struct card *c)
{
	char	*s;

	if (!c->fake && c->vendor == VENDOR_NVIDIA && c->uuid != NULL)
		return (xstrdup(c->uuid));
	xasprintf(&s, "%d", c->fake || c->vendor_index < 0 ?
	    (int)c->index : c->vendor_index);
	return (s);
}

/* Returns the card's fixed facts; the caller owns the reference. */
json_t *
card_to_json(const struct card *c)
{
	json_t	*o, *e;

	o = json_object();
	json_object_set_new(o, "index", json_integer(c->index));
	json_object_set_new(o, "vendor", json_string(vendor_name(c->vendor)));
	json_object_set_new(o, "model", json_string(c->model ? c->model : ""));
	json_object_set_new(o, "uuid", json_string(c->uuid ? c->uuid : ""));
	json_object_set_new(o, "memory", json_integer((json_int_t)c->memory));
	json_object_set_new(o, "fake", json_boolean(c->fake));
	e = json_object();
	json_object_set_new(e, "memory", json_string(c->enforce.memory ?
	    c->enforce.memory : "none"));
	json_object_set_new(e, "compute", json_string(c->enforce.compute ?
	    c->enforce.compute : "none"));
	json_object_set_new(e, "live_memory",
	    json_boolean(c->enforce.live_memory));
	json_object_set_new(e, "live_compute",
	    json_boolean(c->enforce.live_compute));
	json_object_set_new(e, "why", c->enforce.why ?
	    json_string(c->enforce.why) : json_null());
	json_object_set_new(o, "enforce", e);
	return (o);
}
