/*
 * test-cumask.c: CU masks spread over XCDs and shader engines.  The
 * driver's mapping of mask bits to (XCD, shader engine) is modelled here
 * as amdgpu does it, on each card's layout of CUs per shader engine.
 */

#include <string.h>

#include "gmux.h"
#include "unit.h"

struct layout {
	const char	*model;
	u_int		 xcds;
	/* shader engines per XCD, one array each */
	u_int		 ses;
	u_int		 per_se[8];	/* active CUs in each */
};

static const struct layout mi300x = { "MI300X", 8, 4, { 10, 10, 9, 9 } };
static const struct layout mi250x = { "MI250X", 1, 8,
    { 14, 14, 14, 14, 14, 14, 13, 13 } };
static const struct layout mi210 = { "MI210", 1, 8,
    { 13, 13, 13, 13, 13, 13, 13, 13 } };

/* The driver's walk: bit i to XCC i % n, then CU-major over the engines. */
static void
driver_map(const struct layout *l, const uint64_t *m, u_int counts[8][8])
{
	u_int	 x, cu, se, i;

	memset(counts, 0, sizeof (u_int) * 64);
	for (x = 0; x < l->xcds; x++) {
		i = x;
		for (cu = 0; cu < 16; cu++) {
			for (se = 0; se < l->ses; se++) {
				if (l->per_se[se] <= cu)
					continue;
				if ((m[i / 64] >> (i % 64)) & 1)
					counts[x][se]++;
				i += l->xcds;
			}
		}
	}
}

/* Checks one job's mask: equal on every XCD, engines within one. */
static u_int
check_spread(const struct layout *l, const uint64_t *m)
{
	u_int	 counts[8][8], x, se, lo, hi, total, per_xcd = 0;

	driver_map(l, m, counts);
	for (x = 0; x < l->xcds; x++) {
		lo = 99;
		hi = total = 0;
		for (se = 0; se < l->ses; se++) {
			lo = counts[x][se] < lo ? counts[x][se] : lo;
			hi = counts[x][se] > hi ? counts[x][se] : hi;
			total += counts[x][se];
		}
		CHECK(hi - lo <= 1);
		if (x == 0)
			per_xcd = total;
		CHECK(total == per_xcd);
	}
	return (per_xcd * l->xcds);
}

static void
card_of(const struct layout *l, struct card *c)
{
	memset(c, 0, sizeof *c);
	c->vendor = VENDOR_AMD;
	c->model = (char *)l->model;
}

/* Four quarter shares: disjoint, each spread, none above its share. */
static void
quarters(const struct layout *l, u_int cus)
{
	struct card		 c;
	struct cumask_geom	 g;
	uint64_t		 used[CUMASK_WORDS] = { 0 }, mine[CUMASK_WORDS];
	u_int			 j, w;
	int			 n;

	card_of(l, &c);
	CHECK(cumask_geometry(&c, &g) == 0);
	CHECK(g.cus == cus && g.xcds == l->xcds);
	for (j = 0; j < 4; j++) {
		n = cumask_pick(&g, used, 25, mine);
		CHECK(n > 0 && (u_int)n <= cus / 4);
		/* rounded down, by a group */
		CHECK((u_int)n + l->xcds > cus / 4);
		CHECK(check_spread(l, mine) == (u_int)n);
		for (w = 0; w < CUMASK_WORDS; w++) {
			CHECK((used[w] & mine[w]) == 0);
			used[w] |= mine[w];
		}
	}
	CHECK(cumask_pick(&g, used, 25, mine) == -1);
}

static void
test_mi300x(void)
{
	struct card		 c;
	struct cumask_geom	 g;
	uint64_t		 none[CUMASK_WORDS] = { 0 }, m[CUMASK_WORDS];
	char			*s;

	quarters(&mi300x, 304);
	card_of(&mi300x, &c);
	cumask_geometry(&c, &g);
	CHECK(cumask_pick(&g, none, 100, m) == 304);
	CHECK(check_spread(&mi300x, m) == 304);
	CHECK(cumask_pick(&g, none, 50, m) == 152);
	CHECK(check_spread(&mi300x, m) == 152);
	CHECK(cumask_pick(&g, none, 1, m) == 8);	/* one CU per XCD */
	s = cumask_format(m);
	CHECK_STR(s, "0:0-7");
	free(s);
	c.cus = 38;				/* CPX: one XCD a device */
	CHECK(cumask_geometry(&c, &g) == 0 && g.xcds == 1 && g.cus == 38);
}

static void
test_mi250x_gcd(void)
{
	quarters(&mi250x, 110);
}

static void
test_mi210(void)
{
	quarters(&mi210, 104);
}

static void
test_take_release(void)
{
	struct card	 c;
	char		*a, *b, *cause = NULL;

	card_of(&mi210, &c);
	a = cumask_take(1, &c, 50, &cause);
	b = cumask_take(2, &c, 50, &cause);
	CHECK_STR(a, "0:0-51");
	CHECK_STR(b, "0:52-103");
	CHECK(cumask_take(3, &c, 10, &cause) == NULL);
	CHECK(cause != NULL);
	free(cause);
	cause = NULL;
	cumask_release(1);
	free(a);
	a = cumask_take(3, &c, 10, &cause);
	CHECK_STR(a, "0:0-9");
	c.model = (char *)"Radeon-unknown";
	CHECK(cumask_take(4, &c, 10, &cause) == NULL);
	free(cause);
	free(a);
	free(b);
}

int
main(void)
{
	RUN(test_mi300x);
	RUN(test_mi250x_gcd);
	RUN(test_mi210);
	RUN(test_take_release);
	UNIT_EXIT();
}
