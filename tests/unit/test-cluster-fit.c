/*
 * test-cluster-fit.c: a member's room for a job now (cluster-sched.c's
 * cluster_room_*), pure: --mode overcommit admitted on measured free (the
 * card's memory less what is measured in use, what is reserved there and
 * what overcommitted jobs asked), holding no seats and reserving nothing;
 * what it asked is not promised to a shared job placed after it; and a
 * card's memory in use as its member publishes it.
 */

#include "cluster-int.h"
#include "unit.h"

#define G(n)	((uint64_t)(n) << 30)

static struct cluster_card	 card = { "nvidia", "H100", G(80), 0 };

/* A member of one card of 80G, measured use in *used, nothing committed. */
static void
room_init(struct cluster_room *m, uint64_t used)
{
	memset(m, 0, sizeof *m);
	card.used = used;
	m->m.name = "a";
	m->m.cards = &card;
	m->m.ncards = 1;
	m->m.cpus = 8;
	m->m.ram = G(64);
}

static struct cluster_shape
shape(enum jobspec_mode mode, u_int seats, uint64_t mem)
{
	struct cluster_shape	 s;

	memset(&s, 0, sizeof s);
	s.mode = mode;
	s.seats = seats;
	s.mem = mem;
	s.ncards = 1;
	s.nodes = 1;
	return (s);
}

static u_int
fits(const struct cluster_room *m, const struct cluster_shape *s)
{
	u_int	 cards[CLUSTER_CARDS];

	return (cluster_room_cards(m, s, cards));
}

static void
charge(struct cluster_room *m, const struct cluster_shape *s, int sign)
{
	u_int	 c = 0;

	cluster_room_charge(m, s, &c, 1, sign);
}

/* Seats full: a shared job waits, an overcommitted one fits measured free. */
static void
test_overcommit_where_shared_waits(void)
{
	struct cluster_room	 m;
	struct cluster_shape	 a = shape(JOBSPEC_SHARED, 100, G(8));
	struct cluster_shape	 b = shape(JOBSPEC_SHARED, 25, G(8));
	struct cluster_shape	 o = shape(JOBSPEC_OVERCOMMIT, 25, G(8));
	u_int			 cards[CLUSTER_CARDS], left;

	room_init(&m, G(2));
	charge(&m, &a, 1);
	CHECK(fits(&m, &b) == 0);
	CHECK(fits(&m, &o) == 1);
	CHECK(cluster_room_fit(&m, &o, cards, &left) == 1 && left == 0);
	/* it holds no seats and reserves nothing: it counts its ask */
	charge(&m, &o, 1);
	CHECK(m.used[0] == 100 && m.mused[0] == G(8));
	CHECK(m.oused[0] == G(8) && m.over[0] == 1);
	/* 80 - 2 measured - 8 reserved - 8 asked: 62 free */
	CHECK(fits(&m, &o) == 1);
	o.mem = G(62);
	CHECK(fits(&m, &o) == 1);
	o.mem = G(63);
	CHECK(fits(&m, &o) == 0);
	o.mem = G(8);
	charge(&m, &o, -1);
	CHECK(m.oused[0] == 0 && m.over[0] == 0);
}

/* Measured use that grows takes the room away; unmeasured, there is none. */
static void
test_overcommit_measured_use_grows(void)
{
	struct cluster_room	 m;
	struct cluster_shape	 o = shape(JOBSPEC_OVERCOMMIT, 25, G(8));

	room_init(&m, G(2));
	charge(&m, &o, 1);
	CHECK(fits(&m, &o) == 1);
	card.used = G(64);		/* 80 - 64 - 8 asked = 8 */
	CHECK(fits(&m, &o) == 1);
	card.used = G(65);
	CHECK(fits(&m, &o) == 0);
	card.used = G(80);
	CHECK(fits(&m, &o) == 0);
	card.used = G(90);		/* a measure above the card's size */
	CHECK(fits(&m, &o) == 0);
	card.used = CARD_UNKNOWN;
	CHECK(fits(&m, &o) == 0);
	card.used = G(2);
	/* --vram is an ask too: the larger of the two */
	o.mem = 0;
	o.vram = G(70);
	CHECK(fits(&m, &o) == 1);
	o.vram = G(71);
	CHECK(fits(&m, &o) == 0);
}

/*
 * What an overcommitted job asked is not promised to a shared job placed
 * after it; an exclusive job waits for its card to have none; it never
 * goes on a card an exclusive job holds.
 */
static void
test_overcommit_and_the_others(void)
{
	struct cluster_room	 m;
	struct cluster_shape	 o = shape(JOBSPEC_OVERCOMMIT, 25, G(60));
	struct cluster_shape	 sh = shape(JOBSPEC_SHARED, 25, G(30));
	struct cluster_shape	 x = shape(JOBSPEC_EXCLUSIVE, 100, 0);
	struct cluster_shape	 z = shape(JOBSPEC_OVERCOMMIT, 25, 0);

	room_init(&m, 0);
	charge(&m, &o, 1);
	CHECK(fits(&m, &sh) == 0);
	sh.mem = G(20);
	CHECK(fits(&m, &sh) == 1);
	charge(&m, &o, -1);
	charge(&m, &z, 1);		/* asks nothing, still there */
	CHECK(fits(&m, &sh) == 1);
	CHECK(fits(&m, &x) == 0);
	charge(&m, &z, -1);
	CHECK(fits(&m, &x) == 1);
	charge(&m, &x, 1);
	CHECK(fits(&m, &z) == 0);
}

/* A card's use as published: rounded up, moved only past a step. */
static void
test_use_published_in_steps(void)
{
	uint64_t	 p;

	CHECK(cluster_use_step(CARD_UNKNOWN, CARD_UNKNOWN) == CARD_UNKNOWN);
	CHECK(cluster_use_step(G(3), CARD_UNKNOWN) == CARD_UNKNOWN);
	CHECK((p = cluster_use_step(CARD_UNKNOWN, G(2) + 1)) == G(3));
	CHECK(cluster_use_step(CARD_UNKNOWN, 0) == 0);
	/* a wobble about 2G and 3G: what was published stays */
	CHECK(cluster_use_step(p, G(2) - 1) == G(3));
	CHECK(cluster_use_step(p, G(4)) == G(3));
	CHECK(cluster_use_step(p, G(2)) == G(3));
	CHECK(cluster_use_step(p, G(1) + 1) == G(3));
	/* past a step either way: published again, rounded up */
	CHECK(cluster_use_step(p, G(4) + 1) == G(5));
	CHECK(cluster_use_step(p, G(1)) == G(1));
	CHECK(cluster_use_step(p, 0) == 0);
}

int
main(void)
{
	RUN(test_overcommit_where_shared_waits);
	RUN(test_overcommit_measured_use_grows);
	RUN(test_overcommit_and_the_others);
	RUN(test_use_published_in_steps);
	UNIT_EXIT();
}
