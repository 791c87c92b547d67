/*
 * test-threads.c: forks beside helper threads that allocate (threads.c).
 * Under AddressSanitizer a child forked while a helper held the allocator's
 * lock waited forever in its first malloc; fork_quiet() forks only while
 * every helper is idle.  In a plain build glibc's malloc is safe after a
 * fork and these tests check that nothing waits.
 */

#include <sys/wait.h>

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "gmux.h"
#include "unit.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN	1
#else
#define UNDER_ASAN	0
#endif

static atomic_int	helpers_stop;

/* Allocates in bursts, idle between them, as prepare.c's thread does. */
static void *
allocating_helper(void *arg)
{
	void	*p[64];
	u_int	 i, round = 0;

	(void)arg;
	while (!atomic_load(&helpers_stop)) {
		for (i = 0; i < 64; i++)
			p[i] = xmalloc(16 + (i * 37 + round) % 2048);
		for (i = 0; i < 64; i++)
			free(p[i]);
		round++;
		thread_idle();
		sched_yield();
		thread_busy();
	}
	return (NULL);
}

/* Waits up to ms for pid; 0 if it exited 0, -1 if it did not end. */
static int
wait_child(pid_t pid, int64_t ms)
{
	int64_t	 end = clock_mono_ms() + ms;
	int	 st;

	while (clock_mono_ms() < end) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return (WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1);
		usleep(1000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return (-1);
}

static void
test_children_allocate_beside_allocating_helpers(void)
{
	pthread_t	 t[2];
	u_int		 i, k, hung = 0, bad = 0;
	pid_t		 pid;
	void		*p;

	atomic_store(&helpers_stop, 0);
	for (i = 0; i < 2; i++)
		CHECK(thread_start(&t[i], allocating_helper, NULL) == 0);
	for (i = 0; i < 300; i++) {
		if ((pid = fork_quiet()) == 0) {
			for (k = 0; k < 200; k++) {
				p = malloc(16 + (k * 53) % 4096);
				free(p);
			}
			_exit(0);
		}
		CHECK(pid > 0);
		switch (wait_child(pid, 10000)) {
		case -1:
			hung++;
			break;
		case 1:
			bad++;
			break;
		}
	}
	atomic_store(&helpers_stop, 1);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	CHECK(hung == 0);
	CHECK(bad == 0);
}

static void *
sleeping_helper(void *arg)
{
	(void)arg;
	while (!atomic_load(&helpers_stop))
		usleep(10000);
	return (NULL);
}

/* A helper that never goes idle delays a fork by at most FORK_QUIET_MS. */
static void
test_a_busy_helper_delays_a_fork_a_bounded_time(void)
{
	pthread_t	 t;
	int64_t		 began, took;
	pid_t		 pid;

	atomic_store(&helpers_stop, 0);
	CHECK(thread_start(&t, sleeping_helper, NULL) == 0);
	began = clock_mono_ms();
	if ((pid = fork_quiet()) == 0)
		_exit(0);
	took = clock_mono_ms() - began;
	CHECK(pid > 0 && wait_child(pid, 10000) == 0);
	atomic_store(&helpers_stop, 1);
	pthread_join(t, NULL);
	if (UNDER_ASAN)
		CHECK(took >= 4900 && took < 7000);
	else
		CHECK(took < 1000);
}

static atomic_int	ended;

static void *
ending_helper(void *arg)
{
	(void)arg;
	atomic_store(&ended, 1);
	return (NULL);
}

static u_int
tasks(void)
{
	DIR		*d;
	struct dirent	*e;
	u_int		 n = 0;

	if ((d = opendir("/proc/self/task")) == NULL)
		return (0);
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return (n);
}

/* A detached helper that has returned counts until its task is gone. */
static void
test_a_fork_waits_out_an_exiting_helper(void)
{
	pid_t	pid;

	atomic_store(&ended, 0);
	CHECK(thread_start_detached(ending_helper, NULL) == 0);
	while (!atomic_load(&ended))
		usleep(100);
	if ((pid = fork_quiet()) == 0)
		_exit(0);
	if (UNDER_ASAN)
		CHECK(tasks() == 1);
	CHECK(pid > 0 && wait_child(pid, 10000) == 0);
}

int
main(void)
{
	RUN(test_children_allocate_beside_allocating_helpers);
	RUN(test_a_busy_helper_delays_a_fork_a_bounded_time);
	RUN(test_a_fork_waits_out_an_exiting_helper);
	UNIT_EXIT();
}
