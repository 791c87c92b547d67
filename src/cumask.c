/*
 * cumask.c: an AMD job's share of compute as a CU mask (HSA_CU_MASK),
 * spread over every XCD and shader engine.
 *
 * The interleaving assumed is the amdgpu driver's (kfd_mqd_manager.c,
 * mqd_symmetrically_map_cu_mask, multi-XCC form): bit i of the mask a
 * process gives goes to XCC i % nxcc, as that XCC's (i / nxcc)-th CU, and
 * an XCC hands its CUs out round robin: first CU 0 of every shader engine
 * (and array), then CU 1 of each, and so on.  So a run of nxcc consecutive
 * bits is one CU on every XCD, and consecutive runs walk the shader
 * engines in turn.  A share is therefore given as whole groups of nxcc
 * bits, lowest free groups first: every XCD gets exactly the same number
 * of CUs and every shader engine within one of them at most one more than
 * another.  Rounding is down, so a job never gets more than its share.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"

#define CUMASK_CARDS	64
#define CUMASK_JOBS	256

/* CUs and XCDs by model, for cards whose tool did not say. */
static const struct {
	const char	*prefix;
	u_int		 cus;
	u_int		 cus_per_xcd;	/* 0: one XCD */
} cumask_models[] = {
	{ "MI355X", 256, 32 },
	{ "MI350X", 256, 32 },
	{ "MI325X", 304, 38 },
	{ "MI300X", 304, 38 },
	{ "MI300A", 228, 38 },
	{ "MI308X", 80, 20 },
	{ "MI250X", 110, 0 },		/* per GCD, each a device */
	{ "MI250", 104, 0 },
	{ "MI210", 104, 0 },
	{ "MI100", 120, 0 },
};

static struct {
	u_int		 job;		/* 0: free */
	u_int		 card;
	uint64_t	 bits[CUMASK_WORDS];
} taken[CUMASK_JOBS];

/*
 * The card's geometry: its CU count (the tool's, else the model's) and
 * how many XCDs the mask is spread over (a partitioned MI300 shows fewer
 * CUs, one XCD per 38).  Returns -1 if the CU count is unknown.
 */
int
cumask_geometry(const struct card *c, struct cumask_geom *g)
{
	u_int	 i, per = 0;

	memset(g, 0, sizeof *g);
	g->cus = c->cus;
	for (i = 0; c->model != NULL && i < nitems(cumask_models); i++) {
		if (strncmp(c->model, cumask_models[i].prefix,
		    strlen(cumask_models[i].prefix)) != 0)
			continue;
		if (g->cus == 0)
			g->cus = cumask_models[i].cus;
		per = cumask_models[i].cus_per_xcd;
		break;
	}
	if (g->cus == 0 || g->cus > CUMASK_WORDS * 64)
		return (-1);
	g->xcds = per != 0 && g->cus % per == 0 ? g->cus / per : 1;
	return (0);
}

static int
bit_get(const uint64_t *m, u_int i)
{
	return ((m[i / 64] >> (i % 64)) & 1);
}

static void
bit_set(uint64_t *m, u_int i)
{
	m[i / 64] |= 1ULL << (i % 64);
}

/*
 * Picks the CUs for a share of seats on a card of geometry g where used
 * are taken: whole groups of one CU per XCD, lowest first.  Sets them in
 * mine and returns how many, or -1 if not enough groups are free.
 */
int
cumask_pick(const struct cumask_geom *g, const uint64_t *used, u_int seats,
    uint64_t *mine)
{
	u_int	 ngroups = g->cus / g->xcds, want, got = 0, grp, b;

	want = seats * ngroups / SEATS_PER_CARD;
	if (want == 0)
		want = 1;
	memset(mine, 0, CUMASK_WORDS * sizeof *mine);
	for (grp = 0; grp < ngroups && got < want; grp++) {
		for (b = grp * g->xcds; b < (grp + 1) * g->xcds; b++) {
			if (bit_get(used, b))
				break;
		}
		if (b < (grp + 1) * g->xcds)
			continue;
		for (b = grp * g->xcds; b < (grp + 1) * g->xcds; b++)
			bit_set(mine, b);
		got++;
	}
	if (got < want)
		return (-1);
	return ((int)(got * g->xcds));
}

/* Writes mask bits as HSA_CU_MASK's value for device 0; caller frees. */
char *
cumask_format(const uint64_t *mine)
{
	char	*s = xstrdup("0:"), *t;
	u_int	 i, start;
	int	 first = 1;

	for (i = 0; i < CUMASK_WORDS * 64; i++) {
		if (!bit_get(mine, i))
			continue;
		for (start = i; i + 1 < CUMASK_WORDS * 64 &&
		    bit_get(mine, i + 1); i++)
			;
		if (start == i)
			xasprintf(&t, "%s%s%u", s, first ? "" : ",", i);
		else
			xasprintf(&t, "%s%s%u-%u", s, first ? "" : ",", start,
			    i);
		free(s);
		s = t;
		first = 0;
	}
	return (s);
}

/*
 * Gives job a mask on card c for seats, apart from every other job's on
 * that card.  Returns HSA_CU_MASK's value (caller frees), or NULL with
 * *cause if the card's CUs are unknown or taken.
 */
char *
cumask_take(u_int job, const struct card *c, u_int seats, char **cause)
{
	struct cumask_geom	 g;
	uint64_t		 used[CUMASK_WORDS] = { 0 };
	u_int			 i, w, slot = CUMASK_JOBS;

	if (cumask_geometry(c, &g) != 0) {
		xasprintf(cause, "card %u: compute units unknown", c->index);
		return (NULL);
	}
	cumask_release(job);
	for (i = 0; i < CUMASK_JOBS; i++) {
		if (taken[i].job == 0 && slot == CUMASK_JOBS)
			slot = i;
		if (taken[i].job == 0 || taken[i].card != c->index)
			continue;
		for (w = 0; w < CUMASK_WORDS; w++)
			used[w] |= taken[i].bits[w];
	}
	if (slot == CUMASK_JOBS ||
	    cumask_pick(&g, used, seats, taken[slot].bits) == -1) {
		xasprintf(cause, "card %u: not enough free compute units",
		    c->index);
		return (NULL);
	}
	taken[slot].job = job;
	taken[slot].card = c->index;
	return (cumask_format(taken[slot].bits));
}

void
cumask_release(u_int job)
{
	u_int	 i;

	for (i = 0; i < CUMASK_JOBS; i++) {
		if (taken[i].job == job)
			memset(&taken[i], 0, sizeof taken[i]);
	}
}
