/*
 * fuzz-parse.c: parse_size, parse_share, parse_duration and parse_uint,
 * which read every size, share and time a user types.  What they accept
 * must be worth what it says, and format and parse back.
 * seeds: tests/fuzz/seeds/parse/
 */

#include <ctype.h>
#include <math.h>

#include "fuzz.h"

/*
 * What s should be worth, in long double, and its unit in *unit: parse_size
 * reads six fraction digits, so it may be short by a millionth of that.
 */
static long double
size_oracle(const char *s, long double *unit)
{
	const char	*units = "BKMGT";
	const char	*u;
	char		*end;
	long double	 v;

	v = strtold(s, &end);
	*unit = 1;
	if (*end != '\0' &&
	    (u = strchr(units, toupper((u_char)*end))) != NULL)
		*unit = powl(2, 10 * (u - units));
	return (v * *unit);
}

static void
check_size(const char *s)
{
	uint64_t	 v, back;
	long double	 want, unit;
	char		*cause = NULL, *f;

	if (parse_size(s, &v, &cause) != 0) {
		FUZZ_ASSERT(cause != NULL);
		free(cause);
		return;
	}
	want = size_oracle(s, &unit);
	if (fabsl((long double)v - want) > unit / 1e6L + want * 1e-15L + 1) {
		fprintf(stderr, "'%s' gave %llu, not %.0Lf\n", s,
		    (unsigned long long)v, want);
		FUZZ_ASSERT(0);
	}
	/* Sizes gmux carries (at most INT64_MAX) must format and read back. */
	f = format_size(v);
	if (v <= INT64_MAX && parse_size(f, &back, &cause) != 0) {
		fprintf(stderr, "'%s' -> %llu -> '%s' refused\n", s,
		    (unsigned long long)v, f);
		FUZZ_ASSERT(0);
	}
	free(f);
}

static void
check_share(const char *s)
{
	u_int	 seats, back;
	char	*cause = NULL, *f;

	if (parse_share(s, &seats, &cause) != 0) {
		FUZZ_ASSERT(cause != NULL);
		free(cause);
		return;
	}
	FUZZ_ASSERT(seats <= SEATS_PER_CARD);
	f = format_share(seats);
	FUZZ_ASSERT(parse_share(f, &back, &cause) == 0 && back == seats);
	free(f);
}

static void
check_duration(const char *s)
{
	int64_t	 ms;
	char	*cause = NULL;

	if (parse_duration(s, &ms, &cause) != 0) {
		FUZZ_ASSERT(cause != NULL);
		free(cause);
		return;
	}
	FUZZ_ASSERT(ms >= 0 && ms <= 1000000000000000LL);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	*s = fuzz_text(data, size), *cause = NULL;
	u_int	 v;

	check_size(s);
	check_share(s);
	check_duration(s);
	if (parse_uint(s, 0, 1000, &v, &cause) == 0)
		FUZZ_ASSERT(v <= 1000);
	free(cause);
	free(s);
	return (0);
}
