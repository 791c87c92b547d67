/*
 * sched.c: scheduling policy, pure.  State in, decisions out: no I/O, no
 * SQL, no clock of its own.
 */

#include <stdlib.h>

#include "gmux.h"

/*
 * Chooses a card for a job of seats and mem (0: share x the card's memory):
 * the one with the most free seats that also fits the memory, or the
 * pinned one (pin >= 0).  Returns
 * 0 with *out set, 1 if it does not fit now, -1 if no card could ever hold
 * it; *cause says why for 1 and -1.
 */
int
sched_place(const struct sched_card *cs, u_int n, u_int seats, uint64_t mem,
    int pin, int *out, char **cause)
{
	u_int		 i, best_free = 0;
	int		 best = -1, ever = 0;
	uint64_t	 largest = 0, m;

	for (i = 0; i < n; i++) {
		if (pin >= 0 && (int)cs[i].index != pin)
			continue;
		if (cs[i].memory > largest)
			largest = cs[i].memory;
		m = mem != 0 ? mem : cs[i].memory * seats / SEATS_PER_CARD;
		if (m > cs[i].memory || seats > SEATS_PER_CARD)
			continue;
		ever = 1;
		if (SEATS_PER_CARD - cs[i].seats_used < seats ||
		    cs[i].memory - cs[i].mem_used < m)
			continue;
		if (best == -1 || SEATS_PER_CARD - cs[i].seats_used > best_free) {
			best = (int)cs[i].index;
			best_free = SEATS_PER_CARD - cs[i].seats_used;
		}
	}
	if (best != -1) {
		*out = best;
		return (0);
	}
	if (!ever) {
		char *need = format_size(mem), *have = format_size(largest);
		if (n == 0 || largest == 0)
			xasprintf(cause, "needs a card; this host has none");
		else
			xasprintf(cause, "needs %s of memory; the largest card "
			    "has %s", need, have);
		free(need);
		free(have);
		return (-1);
	}
	xasprintf(cause, "no card has %u%% of its compute and the memory free "
	    "now", seats);
	return (1);
}
