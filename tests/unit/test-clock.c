/* test-clock.c: the test clock, frozen or read from a file, and its guard. */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "unit.h"

static int64_t
real_ms(void)
{
	clock_set_test(-1);
	return (clock_ms());
}

static void
test_unit_clock(void)
{
	clock_set_test(1234);
	CHECK(clock_ms() == 1234);
	clock_set_test(-1);
	CHECK(clock_ms() > 1700000000000LL);
}

static void
test_env_frozen(void)
{
	setenv("GMUX_TEST_CLOCK", "1793491200000", 1);
	unsetenv("GMUX_TEST_CLOCK_OK");
	CHECK(real_ms() != 1793491200000LL);	/* not without the guard */
	setenv("GMUX_TEST_CLOCK_OK", "yes", 1);
	CHECK(real_ms() != 1793491200000LL);
	setenv("GMUX_TEST_CLOCK_OK", "1", 1);
	CHECK(real_ms() == 1793491200000LL);
	CHECK(clock_ms() == 1793491200000LL);
	unsetenv("GMUX_TEST_CLOCK");
	CHECK(real_ms() > 1700000000000LL && clock_ms() != 1793491200000LL);
}

static void
test_env_file(void)
{
	char	 path[] = "/tmp/gmux-test-clock.XXXXXX";
	int	 fd;

	fd = mkstemp(path);
	CHECK(fd != -1);
	CHECK(write(fd, "5000\n", 5) == 5);
	setenv("GMUX_TEST_CLOCK", path, 1);
	setenv("GMUX_TEST_CLOCK_OK", "1", 1);
	CHECK(real_ms() == 5000);
	CHECK(write_file_atomic(path, "6000", 4, 0600, NULL) == 0);
	CHECK(clock_ms() == 6000);			/* read on every call */
	CHECK(write_file_atomic(path, "garbage", 7, 0600, NULL) == 0);
	CHECK(clock_ms() == 6000);		/* keeps the last good one */
	unlink(path);
	CHECK(clock_ms() == 6000);
	close(fd);
	unsetenv("GMUX_TEST_CLOCK");
	unsetenv("GMUX_TEST_CLOCK_OK");
	CHECK(real_ms() > 1700000000000LL);
}

int
main(void)
{
	RUN(test_unit_clock);
	RUN(test_env_frozen);
	RUN(test_env_file);
	UNIT_EXIT();
}
