/*
 * card-intel.c: Intel cards, from xpu-smi.  `xpu-smi discovery -j` lists
 * the devices; most versions leave memory out of that list, so each card
 * without it is asked again with `xpu-smi discovery -d ID -j`, whose one
 * object has it.  The same parser reads both.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "card-int.h"

#define XPU_TOOL	"xpu-smi"

static char *xpu_list_argv[] = { XPU_TOOL, "discovery", "-j", NULL };

/* Says whether the list has a physical function (then VFs are skipped). */
static int
xpu_has_physical(json_t *list)
{
	json_t	*e;
	size_t	 i;
	char	*ft;
	int	 found = 0;

	json_array_foreach(list, i, e) {
		ft = card_json_text(e, "device_function_type");
		if (ft != NULL && strcasecmp(ft, "physical") == 0)
			found = 1;
		free(ft);
	}
	return (found);
}

/* Whether entry e is a card to keep: a GPU, and not a VF beside its PF. */
static int
xpu_wanted(json_t *e, int physical)
{
	char	*type, *ft;
	int	 wanted = 1;

	type = card_json_text(e, "device_type");
	ft = card_json_text(e, "device_function_type");
	if (type != NULL && strcasecmp(type, "GPU") != 0)
		wanted = 0;
	if (physical && ft != NULL && strcasecmp(ft, "virtual") == 0)
		wanted = 0;
	free(type);
	free(ft);
	return (wanted);
}

/* memory_physical_size_byte, or the older memory_physical_size in MiB. */
static uint64_t
xpu_memory(json_t *e)
{
	uint64_t	 bytes;

	if (card_json_bytes(card_json_get(e, "memory_physical_size_byte"), "B",
	    &bytes) == 0 ||
	    card_json_bytes(card_json_get(e, "memory_physical_size"), "MiB",
	    &bytes) == 0)
		return (bytes);
	return (0);
}

static int
xpu_card(json_t *e, struct cards *cs, u_int first, char **why)
{
	struct card	*c;
	uint64_t	 id;
	u_int		 i;

	if (!json_is_object(e) || card_json_u64(card_json_get(e, "device_id"),
	    &id) != 0 || id >= CARDS_MAX) {
		xasprintf(why, "a device without a device_id");
		return (-1);
	}
	for (i = first; i < cs->n; i++) {
		if (cs->v[i].vendor_index == (int)id) {
			xasprintf(why, "device %d is listed twice", (int)id);
			return (-1);
		}
	}
	if (card_room(cs, XPU_TOOL, why) != 0)
		return (-1);
	c = cards_add(cs);
	c->vendor = VENDOR_INTEL;
	c->vendor_index = (int)id;
	if ((c->model = card_json_text(e, "device_name")) == NULL)
		c->model = xstrdup("Intel GPU");
	c->uuid = card_json_text(e, "uuid");
	c->bus_id = card_json_text(e, "pci_bdf_address");
	c->memory = xpu_memory(e);
	return (0);
}

/* The devices of root: its "device_list", or root as one device. */
static json_t *
xpu_devices(json_t *root, char **why)
{
	json_t	*v, *a;
	char	*err;

	if ((err = card_json_text(root, "error")) != NULL) {
		xasprintf(why, "%s", err);
		free(err);
		return (NULL);
	}
	if (json_is_array(v = card_json_get(root, "device_list")))
		return (json_incref(v));
	if (card_json_get(root, "device_id") != NULL) {
		a = json_array();
		json_array_append(a, root);
		return (a);
	}
	xasprintf(why, "expected a device_list or one device");
	return (NULL);
}

/*
 * Adds the cards of `xpu-smi discovery -j` (a device_list) or of `xpu-smi
 * discovery -d ID -j` (one device) to cs.  Devices that are not GPUs are
 * skipped, as are virtual functions listed beside a physical one.  All or
 * nothing.
 */
int
card_intel_parse(const char *text, struct cards *cs, char **cause)
{
	json_t	*root, *list = NULL, *e;
	char	*why = NULL;
	size_t	 i;
	u_int	 first = cs->n;
	int	 physical, rc = -1;

	if ((root = card_json_load(text, &why)) == NULL ||
	    (list = xpu_devices(root, &why)) == NULL)
		goto out;
	physical = xpu_has_physical(list);
	json_array_foreach(list, i, e) {
		if (xpu_wanted(e, physical) &&
		    xpu_card(e, cs, first, &why) != 0) {
			cards_truncate(cs, first);
			goto out;
		}
	}
	rc = 0;
out:
	if (rc != 0)
		xasprintf(cause, XPU_TOOL " discovery: %s", why);
	free(why);
	json_decref(list);
	json_decref(root);
	return (rc);
}

/* Asks xpu-smi for one card's details, for the memory the list lacks. */
static void
xpu_detail(struct card *c)
{
	struct cards	 one = { NULL, 0 };
	char		 id[16], *argv[6], *out, *why = NULL;

	snprintf(id, sizeof id, "%d", c->vendor_index);
	argv[0] = XPU_TOOL;
	argv[1] = "discovery";
	argv[2] = "-d";
	argv[3] = id;
	argv[4] = "-j";
	argv[5] = NULL;
	if (card_tool_output(argv, &out, &why) == 0 && out != NULL &&
	    card_intel_parse(out, &one, &why) == 0 && one.n == 1 &&
	    one.v[0].vendor_index == c->vendor_index)
		c->memory = one.v[0].memory;
	if (why != NULL)
		log_warnx("%s: device %s: %s", __func__, id, why);
	free(why);
	free(out);
	cards_free(&one);
}

/* Adds the host's Intel cards to cs, if xpu-smi is installed. */
int
card_intel_detect(struct cards *cs, char **cause)
{
	u_int	 first = cs->n, i;
	int	 rc;

	if ((rc = card_tool_cards(xpu_list_argv, card_intel_parse, cs,
	    cause)) == 1)
		return (0);
	for (i = first; rc == 0 && i < cs->n; i++) {
		if (cs->v[i].memory == 0)
			xpu_detail(&cs->v[i]);
		if (cs->v[i].uuid == NULL)
			xasprintf(&cs->v[i].uuid, "INTEL-%d",
			    cs->v[i].vendor_index);
	}
	return (rc);
}
