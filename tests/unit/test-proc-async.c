/*
 * test-proc-async.c: helper programs run on an event loop, which must keep
 * turning while they run, hang or print a lot.
 */

#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include <event2/event.h>

#include "gmux.h"
#include "unit.h"

static struct event_base	*base;

/* What a run handed to its callback. */
struct result {
	int	 called;
	char	*out;
	int	 status;
	int64_t	 at;		/* clock_mono_ms when it came */
};

static void
done(char *out, int status, void *arg)
{
	struct result	*r = arg;

	r->called++;
	free(r->out);
	r->out = out;
	r->status = status;
	r->at = clock_mono_ms();
}

/* A 5 ms heartbeat: the longest gap between beats shows a blocked loop. */
static int64_t	 beat_last, beat_gap;

static void
beat(evutil_socket_t fd, short events, void *arg)
{
	int64_t	 now = clock_mono_ms();

	if (beat_last != 0 && now - beat_last > beat_gap)
		beat_gap = now - beat_last;
	beat_last = now;
}

/* Turns the loop until r is called (or ms pass); returns the heartbeat. */
static int64_t
turn(struct result *r, int ms)
{
	struct event	*ev;
	struct timeval	 five = { 0, 5000 };
	int64_t		 end = clock_mono_ms() + ms;

	beat_last = beat_gap = 0;
	ev = event_new(base, -1, EV_PERSIST, beat, NULL);
	event_add(ev, &five);
	while ((r == NULL || !r->called) && clock_mono_ms() < end)
		event_base_loop(base, EVLOOP_ONCE);
	event_free(ev);
	return (beat_gap);
}

static int
start(const char *script, int ms, struct result *r)
{
	char	*argv[] = { "/bin/sh", "-c", (char *)script, NULL };
	char	*cause = NULL;
	int	 rc;

	memset(r, 0, sizeof *r);
	rc = proc_async_start(argv, ms, done, r, &cause);
	if (rc != 0) {
		fprintf(stderr, "proc_async_start: %s\n", cause);
		free(cause);
	}
	return (rc);
}

static void
test_output_and_status(void)
{
	struct result	 r;
	char		*argv[] = { "/nonexistent/tool", NULL }, *cause = NULL;

	CHECK(start("echo one; echo two; exit 3", 5000, &r) == 0);
	turn(&r, 5000);
	CHECK(r.called == 1 && r.status == 3);
	CHECK_STR(r.out, "one\ntwo\n");
	free(r.out);
	/* More than a pipe's worth, which must be read as it comes. */
	CHECK(start("head -c 300000 /dev/zero | tr '\\0' x", 5000, &r) == 0);
	turn(&r, 5000);
	CHECK(r.called == 1 && r.status == 0);
	CHECK(r.out != NULL && strlen(r.out) == 300000);
	free(r.out);
	CHECK(start("kill -9 $$", 5000, &r) == 0);
	turn(&r, 5000);
	CHECK(r.called == 1 && r.status == -1 && r.out != NULL);
	free(r.out);
	memset(&r, 0, sizeof r);
	CHECK(proc_async_start(argv, 5000, done, &r, &cause) == 0);
	turn(&r, 5000);
	CHECK(r.called == 1 && r.status == 127);
	free(r.out);
	CHECK(proc_async_count() == 0);
}

/* The loop keeps turning while a tool sleeps; the answer comes after. */
static void
test_loop_turns(void)
{
	struct result	 r;
	int64_t		 t0 = clock_mono_ms(), gap;

	CHECK(start("sleep 1; echo late", 5000, &r) == 0);
	gap = turn(&r, 5000);
	CHECK(r.called == 1 && r.status == 0);
	CHECK_STR(r.out, "late\n");
	CHECK(r.at - t0 >= 900);
	CHECK(gap < 500);	/* a blocked loop: ~1000 ms; a busy host: tens */
	if (gap >= 500)
		fprintf(stderr, "  the loop stopped for %lld ms\n",
		    (long long)gap);
	free(r.out);
}

/*
 * Past its time the tool's whole group is killed (sh and its sleep, which
 * holds the pipe), and the answer comes at once, without output.
 */
static void
test_timeout(void)
{
	struct result	 r;
	char		*argv[] = { "/bin/sh", "-c", "true", NULL };
	char		*cause = NULL;
	int64_t		 t0 = clock_mono_ms();

	CHECK(start("echo partial; sleep 10; echo never", 300, &r) == 0);
	turn(&r, 5000);
	CHECK(r.called == 1 && r.status == PROC_ASYNC_TIMEOUT);
	CHECK(r.out == NULL);
	CHECK(r.at - t0 >= 280 && r.at - t0 < 1500);
	/* Until the killed one is reaped, the same program is not run again. */
	CHECK(proc_async_count() == 1);
	CHECK(proc_async_start(argv, 5000, done, &r, &cause) == -1);
	CHECK(cause != NULL && strstr(cause, "has not died yet") != NULL);
	free(cause);
	turn(NULL, 300);
	CHECK(proc_async_count() == 0);	/* killed and reaped */
	CHECK(start("exit 0", 5000, &r) == 0);
	turn(&r, 5000);
	CHECK(r.called == 1 && r.status == 0);
	free(r.out);
}

static void
test_too_much(void)
{
	struct result	 r;

	CHECK(start("exec cat /dev/zero", 20000, &r) == 0);
	turn(&r, 20000);
	CHECK(r.called == 1 && r.status == PROC_ASYNC_TOOBIG && r.out == NULL);
	turn(NULL, 200);
	CHECK(proc_async_count() == 0);
}

/*
 * A program that reaps every child with waitpid(-1) (the daemon, for its
 * keepers) hands over what it reaps; the run still ends with its status.
 */
static int	 others_reaped;

static void
reap_all(evutil_socket_t sig, short events, void *arg)
{
	pid_t	 pid;
	int	 ws;

	while ((pid = waitpid(-1, &ws, WNOHANG)) > 0) {
		if (!proc_async_reaped(pid, ws))
			others_reaped++;
	}
}

static void
test_handed_over(void)
{
	struct event	*ev;
	struct result	 r;
	pid_t		 pid;
	int		 i;

	ev = evsignal_new(base, SIGCHLD, reap_all, NULL);
	event_add(ev, NULL);
	for (i = 0; i < 5; i++) {
		if ((pid = fork()) == 0)
			_exit(0);
		CHECK(start("sleep 0.05; echo x; exit 4", 5000, &r) == 0);
		turn(&r, 5000);
		CHECK(r.called == 1 && r.status == 4);
		CHECK_STR(r.out, "x\n");
		free(r.out);
	}
	turn(NULL, 100);
	CHECK(others_reaped == 5);
	CHECK(proc_async_count() == 0);
	event_free(ev);
}

/* Shutdown kills what runs and still calls each callback once. */
static void
test_shutdown(void)
{
	struct result	 r1, r2;

	CHECK(start("sleep 10", 20000, &r1) == 0);
	CHECK(start("sleep 10", 20000, &r2) == 0);
	CHECK(proc_async_count() == 2);
	proc_async_shutdown();
	CHECK(r1.called == 1 && r1.status == PROC_ASYNC_CANCELLED);
	CHECK(r2.called == 1 && r2.out == NULL);
	CHECK(proc_async_count() == 0);
}

int
main(void)
{
	char	*argv[] = { "true", NULL }, *cause = NULL;

	CHECK(proc_async_start(argv, 100, done, NULL, &cause) == -1);
	free(cause);
	base = event_base_new();
	proc_async_init(base);
	RUN(test_output_and_status);
	RUN(test_loop_turns);
	RUN(test_timeout);
	RUN(test_too_much);
	RUN(test_handed_over);
	RUN(test_shutdown);
	proc_async_init(NULL);
	event_base_free(base);
	UNIT_EXIT();
}
