/*
 * fence-connect: what the network fence adds to a connect().  A client
 * makes 2,000 TCP connects to a loopback listener (100 more per run warm up),
 * once unfenced and once fenced (--allow 127.0.0.1:PORT, the fence set up
 * as the keeper does it), and times each connect() call.  Prints the
 * median and p99 of both, the difference and the ratio; the target is at
 * most 50 us added at the median (DESIGN.md).  The two take turns in four
 * rounds, so that drift on a shared machine hits both alike.  -R times
 * refused connects instead (the fence allows another port).
 *
 *   fence-connect [-R] [-n COUNT] [-m blocking|nonblocking]
 */

#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gmux.h"

#define WARMUP	100	/* connects not timed, each run */
#define ROUNDS	4	/* unfenced and fenced runs take turns */

static int64_t
now_ns(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ts.tv_sec * 1000000000LL + ts.tv_nsec);
}

static void *
acceptor(void *arg)
{
	int	 l = *(int *)arg, c;

	for (;;) {
		if ((c = accept(l, NULL, NULL)) >= 0)
			close(c);
	}
	return (NULL);
}

/* The job: n timed connects; the times go to stdout, in ns. */
static int	refused;	/* -R: the fence refuses every connect */

static int
client(uint16_t port, int n, int nonblock)
{
	struct sockaddr_in	 sin;
	int64_t			*t, t0;
	int			 i, s, rc;

	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	t = xcalloc((size_t)n, sizeof *t);
	for (i = -WARMUP; i < n; i++) {
		s = socket(AF_INET, SOCK_STREAM|SOCK_CLOEXEC|
		    (nonblock ? SOCK_NONBLOCK : 0), 0);
		t0 = now_ns();
		rc = connect(s, (struct sockaddr *)&sin, sizeof sin);
		if (i >= 0)
			t[i] = now_ns() - t0;
		if (rc != 0 && !(nonblock && errno == EINPROGRESS) &&
		    !(refused && errno == ECONNREFUSED))
			fatal("connect");
		close(s);
	}
	if (write_all(1, t, (size_t)n * sizeof *t) == -1)
		fatal("write");
	return (0);
}

static int
cmp(const void *a, const void *b)
{
	int64_t	 x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x < y ? -1 : x > y);
}

/* Runs the client as the keeper would run a job: fenced or not. */
static void
run(const char *self, uint16_t port, int n, const char *mode, int fenced,
    int64_t *t)
{
	struct fence		*f = fence_create();
	struct fence_job	*fj = NULL;
	char			*cause, spec[32], num[16], ps[8];
	char			*argv[] = { (char *)self, "-c", ps, "-n", num,
				    "-m", (char *)mode, refused ? "-R" : NULL,
				    NULL };
	int			 p[2], status;
	size_t			 got = 0, want = (size_t)n * sizeof *t;
	ssize_t			 r;
	pid_t			 pid;

	snprintf(spec, sizeof spec, "127.0.0.1:%u", refused ? port + 1 : port);
	snprintf(ps, sizeof ps, "%u", port);
	snprintf(num, sizeof num, "%d", n);
	if (fenced && (fence_allow(f, spec, &cause) != 0 ||
	    (fj = fence_job_create(f, "/", NULL, &cause)) == NULL))
		fatalx("%s", cause);
	if (pipe2(p, O_CLOEXEC) != 0 || (pid = fork()) == -1)
		fatal("fork");
	if (pid == 0) {
		dup2(p[1], 1);
		if (fj != NULL)
			fence_job_child(fj);
		closefrom(3);
		execv(self, argv);
		_exit(127);
	}
	close(p[1]);
	if (fj != NULL && fence_job_start(fj, &cause) != 0)
		fatalx("%s", cause);
	while (got < want) {
		struct pollfd	 fds[1 + FENCE_POLLFDS];
		u_int		 k;

		k = fj != NULL ? fence_job_pollfds(fj, fds + 1) : 0;
		fds[0].fd = p[0];
		fds[0].events = POLLIN;
		if (poll(fds, 1 + k, -1) == -1 && errno != EINTR)
			fatal("poll");
		if (fj != NULL)
			fence_job_dispatch(fj, fds + 1, k);
		if (fds[0].revents & (POLLIN|POLLHUP)) {
			if ((r = read(p[0], (char *)t + got, want - got)) <= 0)
				fatalx("the client failed");
			got += (size_t)r;
		}
	}
	waitpid(pid, &status, 0);
	close(p[0]);
	fence_job_free(fj);
	fence_free(f);
}

static void
stats(int64_t *t, int n, double *median, double *p99)
{
	qsort(t, (size_t)n, sizeof *t, cmp);
	*median = t[n / 2] / 1000.0;
	*p99 = t[(n * 99) / 100] / 1000.0;
}

int
main(int argc, char **argv)
{
	struct sockaddr_in	 sin;
	socklen_t		 len = sizeof sin;
	pthread_t		 th;
	const char		*mode = "blocking";
	int64_t			*t0, *t1;
	double			 m0, p0, m1, p1;
	int			 ch, n = 2000, l, port = 0, i;

	while ((ch = getopt(argc, argv, "c:n:m:R")) != -1) {
		switch (ch) {
		case 'R':
			refused = 1;
			break;
		case 'c':
			port = atoi(optarg);
			break;
		case 'n':
			n = atoi(optarg);
			break;
		case 'm':
			mode = optarg;
			break;
		default:
			fprintf(stderr, "usage: fence-connect [-R] [-n COUNT] "
			    "[-m blocking|nonblocking]\n");
			return (2);
		}
	}
	if (n < 4 * ROUNDS)
		n = 4 * ROUNDS;
	if (port != 0)
		return (client((uint16_t)port, n, strcmp(mode, "blocking")));
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((l = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    bind(l, (struct sockaddr *)&sin, sizeof sin) != 0 ||
	    listen(l, 4096) != 0 ||
	    getsockname(l, (struct sockaddr *)&sin, &len) != 0)
		fatal("listen");
	pthread_create(&th, NULL, acceptor, &l);
	t0 = xcalloc((size_t)n, sizeof *t0);
	t1 = xcalloc((size_t)n, sizeof *t1);
	for (i = 0; i < ROUNDS; i++) {	/* interleaved: drift hits both */
		run(argv[0], ntohs(sin.sin_port), n / ROUNDS, mode, 0,
		    t0 + i * (n / ROUNDS));
		run(argv[0], ntohs(sin.sin_port), n / ROUNDS, mode, 1,
		    t1 + i * (n / ROUNDS));
	}
	n = (n / ROUNDS) * ROUNDS;
	stats(t0, n, &m0, &p0);
	stats(t1, n, &m1, &p1);
	printf("fence-connect: %d %s TCP connects each (%d rounds) to "
	    "127.0.0.1:%u%s\n", n, mode, ROUNDS, ntohs(sin.sin_port),
	    refused ? ", all refused" : "");
	printf("  unfenced  median %7.1f us  p99 %7.1f us\n", m0, p0);
	printf("  fenced    median %7.1f us  p99 %7.1f us\n", m1, p1);
	printf("  added     median %7.1f us  p99 %7.1f us  ratio %.2fx "
	    "(median)\n", m1 - m0, p1 - p0, m1 / m0);
	printf("  target: <= 50 us added at the median: %s\n",
	    m1 - m0 <= 50 ? "met" : "MISSED");
	return (0);
}
