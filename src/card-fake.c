/*
 * card-fake.c: pretend cards, so the whole system runs with no GPU.  A spec
 * is a comma-separated list of COUNTxMODEL:MEMORY, for example
 * "2xH100:80G,1xMI300X:192G,1xMax1550:128G"; the vendor follows from the
 * model's name, or is given as VENDOR/MODEL ("nvidia/T4:16G").
 */

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "card-int.h"

#define FAKE_MAX_CARDS	64

static const struct {
	const char	*prefix;
	enum vendor	 vendor;
} fake_models[] = {
	{ "MI", VENDOR_AMD },
	{ "RX", VENDOR_AMD },
	{ "Radeon", VENDOR_AMD },
	{ "Max", VENDOR_INTEL },
	{ "Flex", VENDOR_INTEL },
	{ "Arc", VENDOR_INTEL },
	{ "A", VENDOR_NVIDIA },		/* A100, A10, A6000 */
	{ "B", VENDOR_NVIDIA },		/* B200, B300 */
	{ "H", VENDOR_NVIDIA },		/* H100, H200 */
	{ "L", VENDOR_NVIDIA },		/* L4, L40S */
	{ "T", VENDOR_NVIDIA },		/* T4 */
	{ "V", VENDOR_NVIDIA },		/* V100 */
	{ "GB", VENDOR_NVIDIA },
	{ "RTX", VENDOR_NVIDIA },
	{ "GTX", VENDOR_NVIDIA },
};

static int
fake_vendor(const char *model, enum vendor *v)
{
	size_t	 i, len;

	for (i = 0; i < nitems(fake_models); i++) {
		len = strlen(fake_models[i].prefix);
		if (strncmp(model, fake_models[i].prefix, len) == 0 &&
		    (isdigit((u_char)model[len]) || len > 1)) {
			*v = fake_models[i].vendor;
			return (0);
		}
	}
	return (-1);
}

static int
fake_one(char *item, struct cards *cs, char **cause)
{
	char		*x, *colon, *model, *slash, *why;
	u_int		 count = 1, i;
	uint64_t	 mem;
	enum vendor	 v;
	struct card	*c;

	model = item;
	if ((x = strchr(item, 'x')) != NULL && x != item &&
	    strspn(item, "0123456789") == (size_t)(x - item)) {
		*x = '\0';
		if (parse_uint(item, 1, FAKE_MAX_CARDS, &count, &why) != 0)
			goto bad_why;
		model = x + 1;
	}
	if ((colon = strrchr(model, ':')) == NULL) {
		xasprintf(cause, "'%s': needs a memory size (like H100:80G)",
		    model);
		return (-1);
	}
	*colon = '\0';
	if (parse_size(colon + 1, &mem, &why) != 0)
		goto bad_why;
	if (mem < (1ULL << 20)) {
		xasprintf(cause, "'%s': memory below 1M", model);
		return (-1);
	}
	if ((slash = strchr(model, '/')) != NULL) {
		*slash = '\0';
		if (vendor_from_name(model, &v) != 0 || v == VENDOR_NONE) {
			xasprintf(cause, "'%s': unknown vendor", model);
			return (-1);
		}
		model = slash + 1;
	} else if (fake_vendor(model, &v) != 0) {
		xasprintf(cause, "'%s': unknown model; write VENDOR/%s "
		    "(nvidia, amd or intel)", model, model);
		return (-1);
	}
	if (*model == '\0' || strlen(model) > 63) {
		xasprintf(cause,
		    "a model name of 1 to 63 characters is needed");
		return (-1);
	}
	if (cs->n + count > FAKE_MAX_CARDS) {
		xasprintf(cause, "more than %d cards", FAKE_MAX_CARDS);
		return (-1);
	}
	for (i = 0; i < count; i++) {
		c = cards_add(cs);
		c->vendor = v;
		c->model = xstrdup(model);
		c->memory = mem;
		c->fake = 1;
		xasprintf(&c->uuid, "FAKE-%s-%08x-%04u", vendor_name(v),
		    0x9e3779b9U * (c->index + 1), c->index);
	}
	return (0);
bad_why:
	xasprintf(cause, "%s", why);
	free(why);
	return (-1);
}

/* Adds the cards of spec to cs.  Returns -1 with *cause on a bad spec. */
int
card_fake_parse(const char *spec, struct cards *cs, char **cause)
{
	char	*copy, *item, *next;
	int	 rc = 0;

	if (*spec == '\0') {
		xasprintf(cause, "an empty card list");
		return (-1);
	}
	copy = xstrdup(spec);
	for (item = copy; item != NULL && rc == 0; item = next) {
		if ((next = strchr(item, ',')) != NULL)
			*next++ = '\0';
		if (*item == '\0') {
			xasprintf(cause, "an empty item in the card list");
			rc = -1;
		} else
			rc = fake_one(item, cs, cause);
	}
	free(copy);
	return (rc);
}
