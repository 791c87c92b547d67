/*
 * card-amd.c: AMD cards, from amd-smi (ROCm 6 and later) or, where it is
 * missing, the older rocm-smi.  Both print JSON whose shape has changed
 * between versions; card-json.c absorbs the differences.  amd-smi's own
 * index ("gpu") is the card's vendor_index: its process and usage reports
 * name cards by it.
 */

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "card-int.h"

#define AMD_TOOL	"amd-smi"
#define ROCM_TOOL	"rocm-smi"
#define AMD_CUS_MAX	65535

static char *amd_static_argv[] = { AMD_TOOL, "static", "--json", NULL };
static char *amd_list_argv[] = { AMD_TOOL, "list", "--json", NULL };
static char *amd_process_argv[] = { AMD_TOOL, "process", "--json", NULL };
static char *amd_metric_argv[] = {
	AMD_TOOL, "metric", "--usage", "--mem-usage", "--json", NULL
};
static char *rocm_argv[] = {
	ROCM_TOOL, "--showproductname", "--showmeminfo", "vram",
	"--showuniqueid", "--showbus", "--json", NULL
};

typedef int (*amd_entry_cb)(json_t *, int, void *, char **);

/*
 * Runs cb on each GPU's object in amd-smi's output, with the GPU's index.
 * Stops at the first failure, with *cause naming the GPU.
 */
static int
amd_each(const char *text, const char *what, amd_entry_cb cb, void *arg,
    char **cause)
{
	json_t	*root, *list = NULL, *e;
	char	*why = NULL;
	size_t	 i;
	int	 gpu, rc = -1;

	if ((root = card_json_load(text, &why)) == NULL ||
	    (list = card_json_list(root, &why)) == NULL) {
		xasprintf(cause, "%s: %s", what, why);
		goto out;
	}
	json_array_foreach(list, i, e) {
		if (card_json_index(e, "gpu", &gpu) != 0) {
			xasprintf(cause, "%s: entry %zu has no GPU index", what,
			    i);
			goto out;
		}
		if (cb(e, gpu, arg, &why) != 0) {
			xasprintf(cause, "%s: GPU %d: %s", what, gpu, why);
			goto out;
		}
		free(why);
		why = NULL;
	}
	rc = 0;
out:
	free(why);
	json_decref(list);
	json_decref(root);
	return (rc);
}

/* Returns the AMD card with tool index gpu, from index first on. */
static struct card *
amd_find(struct cards *cs, u_int first, int gpu)
{
	u_int	 i;

	for (i = first; i < cs->n; i++) {
		if (cs->v[i].vendor == VENDOR_AMD &&
		    cs->v[i].vendor_index == gpu)
			return (&cs->v[i]);
	}
	return (NULL);
}

/* Adds an AMD card with tool index gpu, unless cs has it or is full. */
static struct card *
amd_add(struct cards *cs, u_int first, int gpu, const char *tool,
    char **why)
{
	struct card	*c;

	if (amd_find(cs, first, gpu) != NULL) {
		xasprintf(why, "listed twice");
		return (NULL);
	}
	if (card_room(cs, tool, why) != 0)
		return (NULL);
	c = cards_add(cs);
	c->vendor = VENDOR_AMD;
	c->vendor_index = gpu;
	return (c);
}

/* The marketing name, else the board's, else something. */
static char *
amd_model(json_t *e)
{
	char	*s;

	if ((s = card_json_text(card_json_get(e, "asic"), "market_name")))
		return (s);
	if ((s = card_json_text(card_json_get(e, "board"), "product_name")))
		return (s);
	return (xstrdup("AMD GPU"));
}

/* VRAM size: {"size": {"value": N, "unit": "MB"}}, "N MB" or N (MB). */
static uint64_t
amd_vram(json_t *e)
{
	json_t		*vram = card_json_get(e, "vram");
	uint64_t	 bytes;

	if (card_json_bytes(card_json_get(vram, "size"), "MB", &bytes) == 0 ||
	    card_json_bytes(card_json_get(vram, "vram_size"), "MB",
	    &bytes) == 0)
		return (bytes);
	return (0);
}

struct amd_static {
	struct cards	*cs;
	u_int		 first;
};

static int
amd_static_entry(json_t *e, int gpu, void *arg, char **why)
{
	struct amd_static	*st = arg;
	struct card		*c;
	uint64_t		 cus;

	if ((c = amd_add(st->cs, st->first, gpu, AMD_TOOL, why)) == NULL)
		return (-1);
	c->model = amd_model(e);
	c->memory = amd_vram(e);
	if (card_json_u64(card_json_get(card_json_get(e, "asic"),
	    "num_compute_units"), &cus) == 0 && cus <= AMD_CUS_MAX)
		c->cus = (u_int)cus;
	c->bus_id = card_json_text(card_json_get(e, "bus"), "bdf");
	c->uuid = card_json_text(e, "uuid");
	return (0);
}

/*
 * Adds the cards of `amd-smi static --json` to cs: model, memory, compute
 * units and bus address (the UUID comes from `amd-smi list`, see below).
 * Takes the list, the list under "gpu_data" and the lone object older
 * versions print for one GPU.  All or nothing.
 */
int
card_amd_parse_amdsmi(const char *text, struct cards *cs, char **cause)
{
	struct amd_static	 st = { cs, cs->n };

	if (amd_each(text, AMD_TOOL " static", amd_static_entry, &st,
	    cause) == 0)
		return (0);
	cards_truncate(cs, st.first);
	return (-1);
}

static int
amd_list_entry(json_t *e, int gpu, void *arg, char **why)
{
	struct amd_static	*st = arg;
	struct card		*c;
	char			*uuid;

	if ((c = amd_find(st->cs, st->first, gpu)) == NULL)
		return (0);
	if ((uuid = card_json_text(e, "uuid")) != NULL) {
		free(c->uuid);
		c->uuid = uuid;
	}
	if (c->bus_id == NULL)
		c->bus_id = card_json_text(e, "bdf");
	return (0);
}

/*
 * Gives the AMD cards of cs, from index first on, the UUIDs that `amd-smi
 * list --json` names them by.  GPUs it lists that cs lacks are ignored.
 */
int
card_amd_parse_amdsmi_list(const char *text, struct cards *cs, u_int first,
    char **cause)
{
	struct amd_static	 st = { cs, first };

	return (amd_each(text, AMD_TOOL " list", amd_list_entry, &st, cause));
}

/* The N of rocm-smi's "cardN" keys, in order; idx has room for all. */
static int
rocm_cards(json_t *root, int *idx, u_int *n, char **cause)
{
	const char	*k;
	json_t		*v;
	uint64_t	 num;
	u_int		 i, j;
	int		 t;

	*n = 0;
	json_object_foreach(root, k, v) {
		if (strncmp(k, "card", 4) != 0)
			continue;
		if (card_parse_u64(k + 4, &num) != 0 || num >= CARDS_MAX) {
			xasprintf(cause, ROCM_TOOL ": '%.32s' is not a card",
			    k);
			return (-1);
		}
		idx[(*n)++] = (int)num;
	}
	for (i = 1; i < *n; i++) {
		for (j = i; j > 0 && idx[j - 1] > idx[j]; j--) {
			t = idx[j];
			idx[j] = idx[j - 1];
			idx[j - 1] = t;
		}
	}
	return (0);
}

/* Card Series ("Card series" before ROCm 6), else a device name. */
static char *
rocm_model(json_t *o)
{
	char	*s;

	if ((s = card_json_text(o, "Card Series")) != NULL ||
	    (s = card_json_text(o, "Device Name")) != NULL ||
	    (s = card_json_text(o, "Card Model")) != NULL)
		return (s);
	return (xstrdup("AMD GPU"));
}

static int
rocm_card(json_t *root, int num, struct cards *cs, u_int first,
    char **why)
{
	json_t		*o;
	struct card	*c;
	char		 key[32], *e;
	uint64_t	 bytes;

	snprintf(key, sizeof key, "card%d", num);
	if (!json_is_object(o = json_object_get(root, key))) {
		xasprintf(why, ROCM_TOOL ": %s is not an object", key);
		return (-1);
	}
	if ((c = amd_add(cs, first, num, ROCM_TOOL, &e)) == NULL) {
		xasprintf(why, ROCM_TOOL ": %s: %s", key, e);
		free(e);
		return (-1);
	}
	c->model = rocm_model(o);
	if (card_json_bytes(card_json_get(o, "VRAM Total Memory (B)"), "B",
	    &bytes) == 0)
		c->memory = bytes;
	c->uuid = card_json_text(o, "Unique ID");
	c->bus_id = card_json_text(o, "PCI Bus");
	return (0);
}

/*
 * Adds the cards of `rocm-smi --showproductname --showmeminfo vram
 * --showuniqueid [--showbus] --json` to cs.  All or nothing.
 */
int
card_amd_parse_rocmsmi(const char *text, struct cards *cs, char **cause)
{
	json_t	*root;
	int	*idx = NULL;
	u_int	 n, i, first = cs->n;
	int	 rc = -1;
	char	*why;

	if ((root = card_json_load(text, &why)) == NULL) {
		xasprintf(cause, ROCM_TOOL ": %s", why);
		free(why);
		return (-1);
	}
	if (!json_is_object(root)) {
		xasprintf(cause, ROCM_TOOL ": expected an object of cards");
		goto out;
	}
	idx = xcalloc(json_object_size(root) + 1, sizeof *idx);
	if (rocm_cards(root, idx, &n, cause) != 0)
		goto out;
	for (i = 0; i < n; i++) {
		if (rocm_card(root, idx[i], cs, first, cause) != 0) {
			cards_truncate(cs, first);
			goto out;
		}
	}
	rc = 0;
out:
	free(idx);
	json_decref(root);
	return (rc);
}

/* The driver's view of a process: "process_info", or the entry itself. */
static json_t *
amd_proc_info(json_t *item)
{
	json_t	*info = card_json_get(item, "process_info");

	if (json_is_object(info))
		return (info);
	if (info == NULL && card_json_get(item, "pid") != NULL)
		return (item);
	return (NULL);	/* "No running processes detected" */
}

static int
amd_proc_entry(json_t *e, int gpu, void *arg, char **why)
{
	struct card_procs	*ps = arg;
	struct card_proc	*p;
	json_t			*list, *item, *info;
	size_t			 i;
	uint64_t		 pid, mem;

	list = card_json_get(e, "process_list");
	json_array_foreach(list, i, item) {
		if ((info = amd_proc_info(item)) == NULL)
			continue;
		if (card_json_u64(card_json_get(info, "pid"), &pid) != 0 ||
		    pid == 0 || pid > INT_MAX) {
			xasprintf(why, "process %zu: no process id", i);
			return (-1);
		}
		p = card_procs_add(ps);
		p->pid = (pid_t)pid;
		p->vendor = VENDOR_AMD;
		p->vendor_index = gpu;
		if (card_json_bytes(card_json_get(card_json_get(info,
		    "memory_usage"), "vram_mem"), "B", &mem) == 0)
			p->mem = mem;
	}
	return (0);
}

/*
 * Adds the processes of `amd-smi process --json` to ps, each with the
 * VRAM it holds.  Some versions list a process under every GPU it has
 * opened, with its total on each.  All or nothing.
 */
int
card_amd_parse_procs(const char *text, struct card_procs *ps, char **cause)
{
	u_int	 n = ps->n;

	if (amd_each(text, AMD_TOOL " process", amd_proc_entry, ps,
	    cause) == 0)
		return (0);
	card_procs_truncate(ps, n);
	return (-1);
}

static int
amd_usage_entry(json_t *e, int gpu, void *arg, char **why)
{
	struct card_usages	*us = arg;
	struct card_usage	*u;
	uint64_t		 v;

	u = card_usages_add(us);
	u->vendor = VENDOR_AMD;
	u->vendor_index = gpu;
	if (card_json_u64(card_json_get(card_json_get(e, "usage"),
	    "gfx_activity"), &v) == 0 && v <= 100)
		u->util = (int)v;
	if (card_json_bytes(card_json_get(card_json_get(e, "mem_usage"),
	    "used_vram"), "MB", &v) == 0)
		u->mem_used = v;
	return (0);
}

/*
 * Adds the measured use of `amd-smi metric --usage --mem-usage --json` to
 * us: GFX activity and VRAM in use.  All or nothing.
 */
int
card_amd_parse_usage(const char *text, struct card_usages *us, char **cause)
{
	u_int	 n = us->n;

	if (amd_each(text, AMD_TOOL " metric", amd_usage_entry, us,
	    cause) == 0)
		return (0);
	card_usages_truncate(us, n);
	return (-1);
}

/* Cards the tools could not give a UUID get one from their bus address. */
static void
amd_fill_uuids(struct cards *cs, u_int first)
{
	struct card	*c;
	u_int		 i;

	for (i = first; i < cs->n; i++) {
		c = &cs->v[i];
		if (c->uuid != NULL)
			continue;
		if (c->bus_id != NULL)
			xasprintf(&c->uuid, "AMD-%s", c->bus_id);
		else
			xasprintf(&c->uuid, "AMD-%d", c->vendor_index);
	}
}

/*
 * Tries amd-smi: static for the cards, then list for their UUIDs (if that
 * fails, the cards are kept without).  Returns 1 if it is not installed.
 */
static int
amd_try_amdsmi(struct cards *cs, char **cause)
{
	char	*list, *why = NULL;
	u_int	 first = cs->n;
	int	 rc;

	if ((rc = card_tool_cards(amd_static_argv, card_amd_parse_amdsmi, cs,
	    cause)) != 0)
		return (rc);
	if (card_tool_output(amd_list_argv, &list, &why) == 0 && list != NULL)
		card_amd_parse_amdsmi_list(list, cs, first, &why);
	if (why != NULL)
		log_warnx("%s: no UUIDs: %s", __func__, why);
	free(why);
	free(list);
	amd_fill_uuids(cs, first);
	return (0);
}

/* Tries rocm-smi; returns 1 if it is not installed. */
static int
amd_try_rocmsmi(struct cards *cs, char **cause)
{
	u_int	 first = cs->n;
	int	 rc;

	rc = card_tool_cards(rocm_argv, card_amd_parse_rocmsmi, cs, cause);
	if (rc == 0)
		amd_fill_uuids(cs, first);
	return (rc);
}

/*
 * Adds the host's AMD cards to cs: from amd-smi if it is installed and
 * works, else from rocm-smi.  When both fail, *cause is amd-smi's reason.
 */
int
card_amd_detect(struct cards *cs, char **cause)
{
	char	*why_amd = NULL, *why_rocm = NULL;
	int	 amd, rocm;

	if ((amd = amd_try_amdsmi(cs, &why_amd)) == 0)
		return (0);
	rocm = amd_try_rocmsmi(cs, &why_rocm);
	if (rocm == 0 || (amd == 1 && rocm == 1)) {
		free(why_amd);
		return (0);
	}
	if (amd == -1) {
		*cause = why_amd;
		free(why_rocm);
	} else
		*cause = why_rocm;
	return (-1);
}

/*
 * The amd-smi command for q (card_amd_parse_procs or _usage reads it);
 * rocm-smi has no process or usage report that is read.
 */
char *const *
card_amd_argv(enum card_query q)
{
	return (q == CARD_QUERY_PROCS ? amd_process_argv : amd_metric_argv);
}
