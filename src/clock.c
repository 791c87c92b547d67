/*
 * clock.c: wall and monotonic time.  Tests can pin the wall clock with
 * GMUX_TEST_CLOCK (milliseconds since the epoch); it is honoured only when
 * GMUX_TEST_CLOCK_OK=1 is also set, so it cannot be set by accident.
 */

#include <stdlib.h>
#include <time.h>

#include "gmux.h"

static int64_t	clock_test = -1;

void
clock_set_test(int64_t ms)
{
	clock_test = ms;
}

int64_t
clock_ms(void)
{
	struct timespec	 ts;

	if (clock_test >= 0)
		return (clock_test);
	clock_gettime(CLOCK_REALTIME, &ts);
	return ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

int64_t
clock_mono_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}
