/*
 * clock.c: wall and monotonic time.  Tests drive the wall clock with
 * GMUX_TEST_CLOCK, honoured only when GMUX_TEST_CLOCK_OK=1 is also set, so
 * it cannot be set by accident: either milliseconds since the epoch (a
 * frozen clock) or the path of a file holding them, read again on every
 * call, so that a test moves a running daemon's time by rewriting the file
 * (docs/testing.md).  The monotonic clock is never faked: timeouts and
 * grace periods stay real.
 */

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gmux.h"

static int64_t	 clock_test = -1;	/* a frozen clock, or -1 */
static int	 clock_env_read;
static char	*clock_file;		/* a file holding the time, or NULL */
static int64_t	 clock_file_last = -1;	/* its last good value */

/* Parses a whole non-negative number of ms, trailing white space allowed. */
static int64_t
clock_parse(const char *s)
{
	long long	 v;
	char		*end;

	if (!isdigit((u_char)*s))
		return (-1);
	errno = 0;
	v = strtoll(s, &end, 10);
	while (isspace((u_char)*end))
		end++;
	if (errno != 0 || *end != '\0')
		return (-1);
	return (v);
}

static void
clock_env(void)
{
	const char	*v, *ok;

	clock_env_read = 1;
	free(clock_file);
	clock_file = NULL;
	clock_file_last = -1;
	if ((v = getenv("GMUX_TEST_CLOCK")) == NULL || *v == '\0')
		return;
	ok = getenv("GMUX_TEST_CLOCK_OK");
	if (ok == NULL || strcmp(ok, "1") != 0) {
		log_warnx("GMUX_TEST_CLOCK ignored: GMUX_TEST_CLOCK_OK=1 is "
		    "not set");
		return;
	}
	if (isdigit((u_char)*v)) {
		if ((clock_test = clock_parse(v)) < 0)
			log_warnx("GMUX_TEST_CLOCK: '%s' is not a time", v);
	} else
		clock_file = xstrdup(v);
	log_info("using the test clock %s", v);
}

static int64_t
clock_read_file(void)
{
	char	 buf[32];
	ssize_t	 n;
	int	 fd;

	if ((fd = open(clock_file, O_RDONLY|O_CLOEXEC)) == -1)
		return (-1);
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return (-1);
	buf[n] = '\0';
	return (clock_parse(buf));
}

/*
 * Pins the wall clock at ms (a unit test's clock); -1 returns to the real
 * clock or to what the environment says, read again.
 */
void
clock_set_test(int64_t ms)
{
	clock_test = ms;
	if (ms < 0)
		clock_env_read = 0;
}

int64_t
clock_ms(void)
{
	struct timespec	 ts;
	int64_t		 t;

	if (!clock_env_read && clock_test < 0)
		clock_env();
	if (clock_test >= 0)
		return (clock_test);
	if (clock_file != NULL) {
		/* A file being rewritten keeps the last good time. */
		if ((t = clock_read_file()) >= 0)
			clock_file_last = t;
		if (clock_file_last >= 0)
			return (clock_file_last);
	}
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

/* Microseconds, for round trips shorter than a millisecond (loopback). */
int64_t
clock_mono_us(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
}
