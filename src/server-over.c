/*
 * server-over.c: --mode overcommit on this host (docs/scheduling.md,
 * "Overcommit").  Admitted on the cards' measured memory in use, with
 * nothing reserved for it: the scheduler sees a job of no card, and the
 * cards, its cap and its ceiling are set here when it is admitted.
 */

#include <stdlib.h>

#include "gmux.h"

/*
 * The least a card must have free by measure (a card held whole keeps the
 * few bytes its share does not round to); the cluster's leader asks it too.
 */
#define SERVER_OVER_MIN	(1ULL << 30)

/* What an overcommitted job asks free on each card: --mem, else --vram. */
static uint64_t
server_over_ask(const struct job *j)
{
	return (j->req.mem > j->req.spec.vram ? j->req.mem : j->req.spec.vram);
}

/* Whether j is overcommitted (the scheduler holds nothing for it). */
int
server_over_is(const struct job *j)
{
	return (j->req.spec.mode == JOBSPEC_OVERCOMMIT && j->req.seats > 0 &&
	    j->req.ncards > 0);
}

/* Overcommitted jobs whose asks the scheduler withholds (few: a list). */
struct server_over_held {
	u_int		 id;
	uint64_t	 cards;
	uint64_t	 ask;
};
static struct server_over_held	*held;
static u_int			 nheld;

/*
 * Withholds j's ask on its cards from what the scheduler may promise (a
 * shared job admitted after it is not promised what it was admitted on),
 * once; or gives it back (sign -1), once.
 */
static void
server_over_hold(const struct job *j, int sign)
{
	uint64_t	 m;
	u_int		 i;

	for (i = 0; i < nheld && held[i].id != j->id; i++)
		;
	if ((i < nheld) == (sign > 0))
		return;
	if (sign > 0) {
		held = xreallocarray(held, nheld + 1, sizeof *held);
		held[nheld++] = (struct server_over_held){ j->id, j->cards,
		    server_over_ask(j) };
		i = nheld - 1;
	}
	for (m = held[i].cards; m != 0; m &= m - 1)
		sched_withhold(server_sched, __builtin_ctzll(m), held[i].ask,
		    sign);
	if (sign < 0)
		held[i] = held[--nheld];
}

/* j ends: the scheduler may promise what it asked again. */
void
server_over_release(const struct job *j)
{
	server_over_hold(j, -1);
}

/* After a restart: a running overcommitted job's ask is withheld again. */
void
server_over_restore(const struct job *j)
{
	if (server_over_is(j) && j->state == JOB_RUNNING && j->cards != 0)
		server_over_hold(j, 1);
}

/*
 * Card c's measured free: its memory less what is measured in use and
 * what the scheduler's jobs reserve there or it withholds for other
 * overcommitted jobs (the measure may not show them yet).  0 if not
 * measured.
 */
static uint64_t
server_over_free(u_int c, uint64_t *reserved)
{
	const struct card	*k = &server_cards.v[c];
	uint64_t		 taken;
	u_int			 seats, burst;

	server_sched_card(c, &seats, reserved, &burst);
	if (k->mem_measured == CARD_UNKNOWN)
		return (0);
	taken = k->mem_measured + *reserved;
	return (taken < k->memory ? k->memory - taken : 0);
}

/*
 * Picks j's cards: of those it may have, the ones with the most measured
 * free, each holding its ask.  Returns their mask, or 0 with *cause and
 * *never set if no card it may have measures its use.
 */
static uint64_t
server_over_pick(const struct job *j, int *never, char **cause)
{
	uint64_t	 only = jobspec_host_cards(&j->req.spec), pick = 0;
	uint64_t	 room, best_free, reserved, ask = server_over_ask(j);
	u_int		 n, c, best, measured = 0;
	char		*need;

	for (n = 0; n < j->req.ncards; n++) {
		best = UINT32_MAX;
		best_free = 0;
		for (c = 0; c < server_cards.n && c < SCHED_CARDS_MAX; c++) {
			if ((only != 0 && !(only & (1ULL << c))) ||
			    (pick & (1ULL << c)))
				continue;
			measured += server_cards.v[c].mem_measured !=
			    CARD_UNKNOWN;
			room = server_over_free(c, &reserved);
			if (room >= SERVER_OVER_MIN && room >= ask &&
			    room > best_free) {
				best = c;
				best_free = room;
			}
		}
		if (best == UINT32_MAX)
			break;
		pick |= 1ULL << best;
	}
	if (n == j->req.ncards)
		return (pick);
	need = format_size(ask > SERVER_OVER_MIN ? ask : SERVER_OVER_MIN);
	if ((*never = measured == 0))
		xasprintf(cause, "mode: overcommit admits on measured memory "
		    "use, and no card here measures it (fake cards do not)");
	else
		xasprintf(cause, "mode: overcommit: %u card%s with %s free by "
		    "measure needed, %u now", j->req.ncards,
		    j->req.ncards == 1 ? "" : "s", need, n);
	free(need);
	return (0);
}

/*
 * Whether j, overcommitted, would be admitted now: 0, or -1 with *code
 * (409: it does not fit now, and it never waits; 422: no card it may have
 * measures its use) and *cause.
 */
int
server_over_check(const struct job *j, int *code, char **cause)
{
	int	 never = 0;

	if (!server_over_is(j) || server_over_pick(j, &never, cause) != 0)
		return (0);
	*code = never ? 422 : 409;
	return (-1);
}

/*
 * Puts j on its cards: no guarantee, the seats nobody is guaranteed there
 * as its ceiling, and as its cap its --mem, else the card's memory less
 * what the scheduler's jobs reserve there (their promise stays whole);
 * its ask withheld from what the scheduler may promise after it.
 * Returns -1 with *cause if its cards are not free by measure now.
 */
int
server_over_admit(struct job *j, char **cause)
{
	uint64_t	 cards, reserved, cap;
	u_int		 c, seats, burst;
	int		 never;

	if ((cards = server_over_pick(j, &never, cause)) == 0)
		return (-1);
	j->cards = cards;
	j->seats = 0;
	j->card = __builtin_ctzll(cards);
	for (c = 0; c < server_cards.n; c++) {
		if ((cards & (1ULL << c)) == 0)
			continue;
		server_sched_card(c, &seats, &reserved, &burst);
		cap = j->req.mem;
		if (cap == 0)
			cap = server_cards.v[c].memory > reserved ?
			    server_cards.v[c].memory - reserved : 0;
		job_set_terms(j, c, seats < SEATS_PER_CARD ? SEATS_PER_CARD -
		    seats : 1, cap);
	}
	server_over_hold(j, 1);
	log_debug("%s: %s on cards %llx", __func__, j->name,
	    (unsigned long long)cards);
	return (0);
}
