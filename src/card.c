/*
 * card.c: the host's cards.  Detection asks each vendor's tool in turn;
 * fake cards from --fake are added after the real ones, so both can mix.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "card-int.h"

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
	c->util = -1;
	c->mem_measured = CARD_UNKNOWN;
	return (c);
}

/* Drops the cards from index n on (a parser undoing what it added). */
void
cards_truncate(struct cards *cs, u_int n)
{
	u_int	 i;

	for (i = n; i < cs->n; i++) {
		free(cs->v[i].model);
		free(cs->v[i].uuid);
		free(cs->v[i].bus_id);
		free(cs->v[i].enforce.why);
	}
	if (n < cs->n)
		cs->n = n;
}

void
cards_free(struct cards *cs)
{
	cards_truncate(cs, 0);
	free(cs->v);
	cs->v = NULL;
	cs->n = 0;
}

/* Says, with *cause naming the tool, when cs cannot take another card. */
int
card_room(const struct cards *cs, const char *tool, char **cause)
{
	if (cs->n < CARDS_MAX)
		return (0);
	xasprintf(cause, "%s: more than %d cards", tool, CARDS_MAX);
	return (-1);
}

static const struct {
	const char	*vendor;
	int		(*detect)(struct cards *, char **);
} card_detectors[] = {
	{ "nvidia", card_nvidia_detect },
	{ "amd", card_amd_detect },
	{ "intel", card_intel_detect },
};

/*
 * Finds every card: the vendors' tools first, then the fake ones from spec
 * (may be NULL).  A missing tool is not an error, nor is one that fails:
 * that is logged and the other vendors are still asked.  A bad spec is.
 */
int
cards_detect(struct cards *cs, const char *fake, char **cause)
{
	char	*why;
	u_int	 i, n;

	if (getenv("GMUX_NO_DETECT") == NULL) {
		for (i = 0; i < nitems(card_detectors); i++) {
			why = NULL;
			if (card_detectors[i].detect(cs, &why) == 0)
				continue;
			log_warnx("card detection (%s): %s",
			    card_detectors[i].vendor, why);
			free(why);
		}
	}
	n = cs->n;
	if (fake != NULL && card_fake_parse(fake, cs, cause) != 0) {
		cards_truncate(cs, n);
		return (-1);
	}
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
	json_object_set_new(o, "bus_id", c->bus_id != NULL ?
	    json_string(c->bus_id) : json_null());
	if (c->cus != 0)
		json_object_set_new(o, "cus", json_integer(c->cus));
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

/*
 * Parses a whole string as an unsigned number, decimal or 0x hex, without
 * overflow.  Returns -1 if it is not one.
 */
int
card_parse_u64(const char *s, uint64_t *out)
{
	uint64_t	 v = 0, base = 10;
	u_int		 d;
	const char	*p = s;

	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	}
	if (*p == '\0')
		return (-1);
	for (; *p != '\0'; p++) {
		if (*p >= '0' && *p <= '9')
			d = (u_int)(*p - '0');
		else if (base == 16 && *p >= 'a' && *p <= 'f')
			d = (u_int)(*p - 'a' + 10);
		else if (base == 16 && *p >= 'A' && *p <= 'F')
			d = (u_int)(*p - 'A' + 10);
		else
			return (-1);
		if (v > (UINT64_MAX - d) / base)
			return (-1);
		v = v * base + d;
	}
	*out = v;
	return (0);
}

/*
 * Says whether a tool's value means "no value": nvidia-smi's "[N/A]",
 * "[Not Supported]" and other bracketed words, the AMD and Intel tools'
 * "N/A", "unknown", or nothing at all.
 */
int
card_na(const char *s)
{
	size_t	 n = strlen(s);

	if (n == 0 || (s[0] == '[' && s[n - 1] == ']'))
		return (1);
	return (strcasecmp(s, "N/A") == 0 || strcasecmp(s, "NA") == 0 ||
	    strcasecmp(s, "unknown") == 0);
}

/*
 * Says whether a name from a tool may be kept: valid UTF-8 (it goes out as
 * JSON), no control characters, not absurdly long.
 */
int
card_text_ok(const char *s)
{
	const u_char	*p;
	json_t		*j;

	if (strlen(s) > 255)
		return (0);
	for (p = (const u_char *)s; *p != '\0'; p++) {
		if (*p < 0x20 || *p == 0x7f)
			return (0);
	}
	if ((j = json_string(s)) == NULL)
		return (0);
	json_decref(j);
	return (1);
}

/* Appends a zeroed process entry and returns it; the list owns it. */
struct card_proc *
card_procs_add(struct card_procs *ps)
{
	struct card_proc	*p;

	ps->v = xreallocarray(ps->v, ps->n + 1, sizeof *ps->v);
	p = &ps->v[ps->n++];
	memset(p, 0, sizeof *p);
	p->card = -1;
	p->vendor_index = -1;
	p->mem = CARD_UNKNOWN;
	return (p);
}

/* Drops the entries from index n on. */
void
card_procs_truncate(struct card_procs *ps, u_int n)
{
	u_int	 i;

	for (i = n; i < ps->n; i++)
		free(ps->v[i].uuid);
	if (n < ps->n)
		ps->n = n;
}

void
card_procs_free(struct card_procs *ps)
{
	card_procs_truncate(ps, 0);
	free(ps->v);
	ps->v = NULL;
}

/* Appends a usage entry, all unknown, and returns it; the list owns it. */
struct card_usage *
card_usages_add(struct card_usages *us)
{
	struct card_usage	*u;

	us->v = xreallocarray(us->v, us->n + 1, sizeof *us->v);
	u = &us->v[us->n++];
	memset(u, 0, sizeof *u);
	u->card = -1;
	u->vendor_index = -1;
	u->util = -1;
	u->mem_used = CARD_UNKNOWN;
	return (u);
}

void
card_usages_truncate(struct card_usages *us, u_int n)
{
	if (n < us->n)
		us->n = n;
}

void
card_usages_free(struct card_usages *us)
{
	free(us->v);
	us->v = NULL;
	us->n = 0;
}
