/*
 * test-keeper-link.c: the daemon's end of a keeper's link never waits.  A
 * keeper that stops reading (wedged, or stopped) fills its link; a stop
 * the cluster asks for on every tick is sent once, and a request to a full
 * link fails at once instead of holding the daemon's loop.
 */

#include <sys/socket.h>

#include <errno.h>
#include <unistd.h>

#include "gmux.h"
#include "unit.h"

static void
test_a_full_link_fails_a_request_at_once(void)
{
	int	 sv[2];
	u_int	 sent = 0;
	int64_t	 began;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	began = clock_mono_ms();
	while (keeper_send(sv[0], "stop 10000 stopped\n") == 0 &&
	    sent < 1000000)
		sent++;
	CHECK(sent > 0 && sent < 1000000);
	CHECK(clock_mono_ms() - began < 5000);
	/* its keeper reads again: the link takes requests again */
	{
		char	buf[65536];

		CHECK(read(sv[1], buf, sizeof buf) > 0);
	}
	CHECK(keeper_send(sv[0], "ping\n") == 0);
	close(sv[0]);
	/* a keeper gone: -1, and no SIGPIPE kills the test */
	CHECK(keeper_send(sv[1], "ping\n") == -1);
	close(sv[1]);
}

static u_int
lines_waiting(int fd)
{
	char	 buf[4096];
	ssize_t	 n;
	u_int	 lines = 0, i;

	while ((n = recv(fd, buf, sizeof buf, MSG_DONTWAIT)) > 0) {
		for (i = 0; i < (u_int)n; i++)
			lines += buf[i] == '\n';
	}
	return (lines);
}

static void
test_a_stop_asked_again_is_sent_once(void)
{
	struct job	 j;
	int		 sv[2];
	u_int		 i;

	memset(&j, 0, sizeof j);
	snprintf(j.name, sizeof j.name, "j1");
	j.state = JOB_RUNNING;
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	j.ctl_fd = sv[0];
	for (i = 0; i < 100; i++)
		CHECK(job_stop(&j, 10000, "stopped through the cluster") == 0);
	CHECK(lines_waiting(sv[1]) == 1);
	/* a stop with an earlier KILL goes: the keeper brings it forward */
	CHECK(job_stop(&j, 10, "stopped") == 0);
	CHECK(lines_waiting(sv[1]) == 1);
	CHECK(job_stop(&j, 10000, "stopped") == 0);
	CHECK(lines_waiting(sv[1]) == 0);
	/* withdrawn (gmux run's second Ctrl-C): the next stop goes again */
	CHECK(job_stop_cancel(&j) == 0);
	CHECK(lines_waiting(sv[1]) == 1);
	CHECK(job_stop(&j, 10000, "stopped") == 0);
	CHECK(lines_waiting(sv[1]) == 1);
	close(sv[0]);
	close(sv[1]);
}

int
main(void)
{
	RUN(test_a_full_link_fails_a_request_at_once);
	RUN(test_a_stop_asked_again_is_sent_once);
	UNIT_EXIT();
}
