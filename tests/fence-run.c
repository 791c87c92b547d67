/*
 * fence-run: runs one command inside the network fence, the way the keeper
 * will, so the fence can be tested before the daemon runs jobs.
 *
 *   fence-run [-v] [-a SPEC]... [-d] [-H NAME=ADDR]... [-j JSON] [-C DIR]
 *       [-s STATS] [-w] [-B] -- COMMAND [ARG...]
 *
 * -a --allow, -d --deny-net, -H --add-host, -j a job request's JSON
 * (its "allow", "deny_net" and "add_host"), -C the working directory,
 * -s where to write the stats at the end, -w wait until every process in
 * the fence is gone (not only COMMAND), -B tests only: no connect rule in
 * the filter, to show the Landlock backstop.  With no policy the command
 * runs unfenced (the baseline).  Exits with the command's status.
 */

#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "fence-int.h"

extern char **environ;

static dead void
usage(void)
{
	fprintf(stderr, "usage: fence-run [-vdwB] [-a SPEC] [-H NAME=ADDR] "
	    "[-j JSON] [-C DIR] [-s STATS] -- COMMAND [ARG...]\n");
	exit(2);
}

static struct fence *
policy_json(const char *s)
{
	struct fence	*f;
	json_error_t	 jerr;
	json_t		*j;
	char		*cause;

	if ((j = json_loads(s, 0, &jerr)) == NULL)
		fatalx("-j: %s", jerr.text);
	if (fence_from_json(j, &f, &cause) != 0)
		fatalx("-j: %s", cause);
	json_decref(j);
	return (f);
}

/* The keeper's child: its own group, its directory, the fence, exec. */
static dead void
child(struct fence_job *fj, const char *cwd, char **argv, char **env)
{
	setpgid(0, 0);
	if (chdir(cwd) != 0) {
		perror("fence-run: chdir");
		_exit(126);
	}
	if (fj != NULL)
		fence_job_child(fj);
	closefrom(3);
	execvpe(argv[0], argv, env);
	perror("fence-run: exec");
	_exit(127);
}

/* The keeper's loop, reduced to the child and the fence. */
static int
supervise(struct fence_job *fj, pid_t pid, int wait_all)
{
	struct pollfd	 pfd[1 + FENCE_POLLFDS];
	u_int		 n;
	int		 pidfd, status = 0, exited = 0;

	if ((pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) == -1)
		fatal("pidfd_open");
	for (;;) {
		if (exited && (fj == NULL || !wait_all || fence_job_done(fj)))
			break;
		pfd[0].fd = exited ? -1 : pidfd;
		pfd[0].events = POLLIN;
		n = fj != NULL ? fence_job_pollfds(fj, pfd + 1) : 0;
		if (poll(pfd, 1 + n, -1) == -1) {
			if (errno == EINTR)
				continue;
			fatal("poll");
		}
		if (fj != NULL)
			fence_job_dispatch(fj, pfd + 1, n);
		if (!exited && (pfd[0].revents & POLLIN)) {
			if (waitpid(pid, &status, 0) == pid)
				exited = 1;
		}
	}
	close(pidfd);
	if (WIFSIGNALED(status))
		return (128 + WTERMSIG(status));
	return (WEXITSTATUS(status));
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "allow", required_argument, NULL, 'a' },
		{ "deny-net", no_argument, NULL, 'd' },
		{ "add-host", required_argument, NULL, 'H' },
		{ NULL, 0, NULL, 0 }
	};
	struct fence		*f = fence_create();
	struct fence_job	*fj = NULL;
	char			*cause, **env, cwd[4096];
	const char		*dir = NULL, *stats = NULL;
	int			 ch, wait_all = 0, bypass = 0, rc;
	pid_t			 pid;

	while ((ch = getopt_long(argc, argv, "+a:dH:j:C:s:vwB", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'a':
			if (fence_allow(f, optarg, &cause) != 0)
				fatalx("--allow %s", cause);
			break;
		case 'd':
			f->deny_net = 1;
			break;
		case 'H':
			if (fence_add_host(f, optarg, &cause) != 0)
				fatalx("--add-host %s", cause);
			break;
		case 'j':
			fence_free(f);
			f = policy_json(optarg);
			break;
		case 'C':
			dir = optarg;
			break;
		case 's':
			stats = optarg;
			break;
		case 'v':
			log_open(2, NULL);
			break;
		case 'w':
			wait_all = 1;
			break;
		case 'B':
			bypass = 1;
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc == 0)
		usage();
	if (dir == NULL)
		dir = getcwd(cwd, sizeof cwd);
	if (f != NULL && fence_check(f, &cause) != 0)
		fatalx("%s", cause);
	env = strv_copy(environ);
	if (f != NULL && (f->deny_net || f->nrules != 0)) {
		if ((fj = fence_job_create(f, dir, NULL, &cause)) == NULL)
			fatalx("fence: %s", cause);
		if (bypass)
			fence_job_test_bypass(fj);
		fence_job_env(fj, &env);
	}
	if ((pid = fork()) == -1)
		fatal("fork");
	if (pid == 0)
		child(fj, dir, argv, env);
	if (fj != NULL && fence_job_start(fj, &cause) != 0) {
		log_warnx("fence: %s", cause);	/* as the keeper must: */
		kill(pid, SIGKILL);		/* no job without its fence */
		waitpid(pid, NULL, 0);
		return (126);
	}
	rc = supervise(fj, pid, wait_all);
	if (fj != NULL && stats != NULL &&
	    fence_job_write_stats(fj, stats, &cause) != 0)
		log_warnx("%s", cause);
	fence_job_free(fj);
	fence_free(f);
	strv_free(env);
	return (rc);
}
