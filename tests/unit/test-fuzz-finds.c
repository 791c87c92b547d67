/*
 * test-fuzz-finds.c: what the fuzzers found outside the card parsers, kept
 * as regression tests (each failed before its fix).
 */

#include "gmux.h"
#include "unit.h"

/* fuzz-parse: nine fraction digits of a T overflowed frac * mult. */
static void
test_size_long_fraction(void)
{
	uint64_t	 v;
	char		*cause = NULL;

	CHECK(parse_size("0.999999999T", &v, &cause) == 0);
	CHECK(v > (1ULL << 40) - (2ULL << 20) && v < 1ULL << 40);
	CHECK(parse_size(".8000000000200000T", &v, &cause) == 0);
	CHECK(v == 879609302220ULL);	/* 0.8 TiB, rounded down */
	CHECK(parse_size("1.5G", &v, &cause) == 0 && v == 3ULL << 29);
}

/* fuzz-jobreq: a mem past INT64_MAX came back negative from to_json. */
static void
test_jobreq_huge_mem(void)
{
	struct jobreq	 r;
	json_t		*o;
	char		*cause = NULL;

	jobreq_init(&r);
	o = json_loads("{\"argv\":[\"x\"],\"share\":0.5,\"mem\":\"16000000T\"}",
	    0, NULL);
	CHECK(jobreq_from_json(o, &r, &cause) == -1);
	CHECK(cause != NULL && strstr(cause, "mem: larger than") != NULL);
	free(cause);
	json_decref(o);
	jobreq_clear(&r);
	o = json_loads("{\"argv\":[\"x\"],\"share\":0.5,\"mem\":\"8000000T\"}",
	    0, NULL);
	CHECK(jobreq_from_json(o, &r, &cause) == 0);
	json_decref(o);
	jobreq_clear(&r);
}

int
main(void)
{
	RUN(test_size_long_fraction);
	RUN(test_jobreq_huge_mem);
	UNIT_EXIT();
}
