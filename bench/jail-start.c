/*
 * jail-start: what confining a remote job adds to starting it.  Starts
 * /bin/true as a keeper would, COUNT times each way, taking turns: plain
 * (vfork, exec), fenced with an open fence (what a remote job that asked
 * for no fence would get without the jail), and jailed (the jail's
 * ruleset and the open fence, as a remote job gets them).  Times each
 * start from before the set-up to the job's exit; prints the median and
 * p90 of each, and the set-up alone (jail_create and fence_job_create:
 * what the keeper does before fork()).
 *
 *   jail-start [-n COUNT]
 */

#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gmux.h"

enum { PLAIN, FENCED, JAILED, NWAYS };

static const char *const names[NWAYS] = { "plain", "fence (open)",
    "jail + open fence" };

static int64_t
now_ns(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ts.tv_sec * 1000000000LL + ts.tv_nsec);
}

static char	*argv_true[] = { (char *)"/bin/true", NULL };
static char	*envp_none[] = { NULL };

/* The job's child: as the keeper's, vfork() unless it is fenced. */
static pid_t
spawn(struct fence_job *fj)
{
	pid_t	 pid;

	pid = fj == NULL ? vfork() : fork();
	if (pid == 0) {
		if (fj != NULL)
			fence_job_child(fj);
		execve(argv_true[0], argv_true, envp_none);
		_exit(127);
	}
	return (pid);
}

/* One start; returns its time and, in *setup, the set-up's, in ns. */
static int64_t
start(int way, const char *dir, int64_t *setup)
{
	struct jail_spec js;
	struct jail	*j = NULL;
	struct fence	*open;
	struct fence_job *fj = NULL;
	char		*cause = NULL;
	int64_t		 t0 = now_ns();
	int		 status;
	pid_t		 pid;

	memset(&js, 0, sizeof js);
	js.work = js.tmp = (char *)dir;
	if (way == JAILED && (j = jail_create(&js, &cause)) == NULL)
		fatalx("%s", cause);
	if (way != PLAIN) {
		open = fence_open();
		if ((fj = fence_job_create(open, dir, j, &cause)) == NULL)
			fatalx("%s", cause);
		fence_free(open);
	}
	*setup = now_ns() - t0;
	if ((pid = spawn(fj)) == -1)
		fatal("fork");
	if (fj != NULL && fence_job_start(fj, &cause) != 0)
		fatalx("%s", cause);
	while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fatalx("the job failed (%d)", status);
	fence_job_free(fj);
	jail_free(j);
	return (now_ns() - t0);
}

static int
cmp(const void *a, const void *b)
{
	int64_t	 x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x < y ? -1 : x > y);
}

static void
report(const char *what, int64_t *t, int n)
{
	qsort(t, (size_t)n, sizeof *t, cmp);
	printf("%-20s median %8.1f us   p90 %8.1f us\n", what,
	    t[n / 2] / 1000.0, t[(n * 9) / 10] / 1000.0);
}

int
main(int argc, char **argv)
{
	int64_t	*t[NWAYS], *s[NWAYS], m[NWAYS];
	char	 dir[] = "/var/tmp/jail-start.XXXXXX";
	int	 ch, n = 200, i, w;

	while ((ch = getopt(argc, argv, "n:")) != -1) {
		if (ch != 'n') {
			fprintf(stderr, "usage: jail-start [-n COUNT]\n");
			return (2);
		}
		n = atoi(optarg);
	}
	if (n < 10)
		n = 10;
	if (mkdtemp(dir) == NULL)
		fatal("mkdtemp");
	for (w = 0; w < NWAYS; w++) {
		t[w] = xcalloc((size_t)n, sizeof *t[w]);
		s[w] = xcalloc((size_t)n, sizeof *s[w]);
		start(w, dir, &s[w][0]);	/* warm up */
	}
	for (i = 0; i < n; i++) {
		for (w = 0; w < NWAYS; w++)
			t[w][i] = start(w, dir, &s[w][i]);
	}
	rmdir(dir);
	for (w = 0; w < NWAYS; w++) {
		report(names[w], t[w], n);
		qsort(s[w], (size_t)n, sizeof *s[w], cmp);
		m[w] = t[w][n / 2];
	}
	printf("%-20s median %8.1f us (jail_create, fence_job_create)\n",
	    "set-up, jailed", s[JAILED][n / 2] / 1000.0);
	printf("%-20s median %8.1f us (fence_job_create)\n",
	    "set-up, fenced", s[FENCED][n / 2] / 1000.0);
	printf("jailed - plain: %.1f us; jailed - fenced: %.1f us\n",
	    (m[JAILED] - m[PLAIN]) / 1000.0, (m[JAILED] - m[FENCED]) / 1000.0);
	printf("ratio (medians): jailed/plain %.2f, jailed/fenced %.2f\n",
	    (double)m[JAILED] / (double)m[PLAIN],
	    (double)m[JAILED] / (double)m[FENCED]);
	return (0);
}
