/*
 * threads.c: the daemon's helper threads, and forks beside them.
 *
 * A child forked from a process with threads inherits whatever lock
 * another thread held at the fork, and nobody there will let it go.
 * glibc's malloc takes its own locks across fork(), so the code a keeper
 * runs after its fork (keeper.c) finds malloc usable; but the allocator of
 * GCC 12's AddressSanitizer does not (LLVM's does since its release 17),
 * and a keeper forked while a helper thread allocated waited forever in
 * its first malloc: its job never started, and the daemon, sending it a
 * stop on every tick, blocked on the full link (CI's test of a stop of an
 * array of 200 elements, with the cluster's port sampler starting a thread
 * each second).
 *
 * So every helper thread is counted busy from before its creation until it
 * has exited (its task gone, after the sanitizer's own teardown), except
 * while it says it waits idle (thread_idle .. thread_busy around a wait for
 * work: it holds no lock then).  fork_quiet() forks with every helper idle
 * or gone and keeps them so until fork() has returned; under ASan it waits
 * for that (at most FORK_QUIET_MS, then it forks anyway and says so).  In a
 * plain build it only counts, and never waits.
 */

#include <sys/syscall.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "gmux.h"

#if defined(__SANITIZE_ADDRESS__)
#define FORK_WAITS	1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FORK_WAITS	1
#endif
#endif
#ifndef FORK_WAITS
#define FORK_WAITS	0
#endif

#define FORK_QUIET_MS	5000
#define THREADS_EXITING	64

struct thread_start {
	void	*(*fn)(void *);
	void	 *arg;
};

static pthread_mutex_t	threads_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t	threads_cond = PTHREAD_COND_INITIALIZER;
static u_int		threads_busy;	/* helpers not idle nor exiting */
static int		threads_forking;
static pid_t		threads_exiting[THREADS_EXITING];
static u_int		threads_nexiting;

/* Forgets the exiting threads whose task is gone; how many are left. */
static u_int
threads_reap(void)
{
	u_int	i = 0;

	while (i < threads_nexiting) {
		if (syscall(SYS_tgkill, getpid(), threads_exiting[i], 0) ==
		    -1 && errno == ESRCH) {
			threads_nexiting--;
			threads_exiting[i] = threads_exiting[threads_nexiting];
		} else
			i++;
	}
	return (threads_nexiting);
}

static void *
threads_main(void *arg)
{
	struct thread_start	 ts = *(struct thread_start *)arg;
	void			*rv;

	free(arg);
	rv = ts.fn(ts.arg);
	pthread_mutex_lock(&threads_lock);
	threads_busy--;
	if (threads_reap() < THREADS_EXITING) {
		threads_exiting[threads_nexiting] = (pid_t)syscall(SYS_gettid);
		threads_nexiting++;
	}
	pthread_cond_broadcast(&threads_cond);
	pthread_mutex_unlock(&threads_lock);
	return (rv);
}

/*
 * Starts fn(arg) in a helper thread that takes no signal (they are the
 * loop's: libevent's handlers); joinable into *t, or detached if t is
 * NULL.  0, or the error pthread_create gave.
 */
int
thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	struct thread_start	*ts;
	pthread_attr_t		 attr;
	pthread_t		 th;
	sigset_t		 all, old;
	int			 e;

	ts = xmalloc(sizeof *ts);
	ts->fn = fn;
	ts->arg = arg;
	pthread_attr_init(&attr);
	if (t == NULL)
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_mutex_lock(&threads_lock);
	threads_busy++;
	pthread_mutex_unlock(&threads_lock);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	e = pthread_create(t != NULL ? t : &th, &attr, threads_main, ts);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (e != 0) {
		free(ts);
		pthread_mutex_lock(&threads_lock);
		threads_busy--;
		pthread_cond_broadcast(&threads_cond);
		pthread_mutex_unlock(&threads_lock);
	}
	return (e);
}

int
thread_start_detached(void *(*fn)(void *), void *arg)
{
	return (thread_start(NULL, fn, arg));
}

/* A helper thread is about to wait for work, holding no lock but its own. */
void
thread_idle(void)
{
	pthread_mutex_lock(&threads_lock);
	threads_busy--;
	pthread_cond_broadcast(&threads_cond);
	pthread_mutex_unlock(&threads_lock);
}

/* It has work again: it waits out a fork in progress first. */
void
thread_busy(void)
{
	pthread_mutex_lock(&threads_lock);
	while (threads_forking)
		pthread_cond_wait(&threads_cond, &threads_lock);
	threads_busy++;
	pthread_mutex_unlock(&threads_lock);
}

/* Waits (under ASan) until no helper is busy or exiting; locked. */
static void
fork_wait_quiet(void)
{
	struct timespec	 end;
	int64_t		 until;

	until = clock_mono_ms() + FORK_QUIET_MS;
	while (FORK_WAITS && (threads_busy > 0 || threads_reap() > 0)) {
		if (clock_mono_ms() >= until) {
			log_debug("%s: forking with %u helper threads busy, "
			    "%u exiting", __func__, threads_busy,
			    threads_nexiting);
			return;
		}
		/* exiting threads say nothing when they are gone: polled */
		clock_gettime(CLOCK_REALTIME, &end);
		end.tv_nsec += 2 * 1000 * 1000;
		if (end.tv_nsec >= 1000000000L) {
			end.tv_sec++;
			end.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&threads_cond, &threads_lock, &end);
	}
}

/*
 * fork(), for a child that runs more than system calls before its exec
 * (a keeper): with the helper threads idle (module comment).
 */
pid_t
fork_quiet(void)
{
	pid_t	pid;
	int	e;

	pthread_mutex_lock(&threads_lock);
	threads_forking = 1;
	fork_wait_quiet();
	pid = fork();
	e = errno;
	if (pid == 0) {
		/*
		 * The child's one thread: no helper came along, and the
		 * condition's waiters are the parent's (a broadcast here
		 * would wait for them forever), so both start anew.
		 */
		threads_busy = 0;
		threads_nexiting = 0;
		threads_forking = 0;
		threads_cond = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
		threads_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
		return (0);
	}
	threads_forking = 0;
	pthread_cond_broadcast(&threads_cond);
	pthread_mutex_unlock(&threads_lock);
	errno = e;
	return (pid);
}
