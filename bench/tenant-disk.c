/*
 * tenant-disk.c: what measuring a tenant's home costs (tenant-disk.c's
 * walk, as its helper thread runs it) on a home of N files (default
 * 100,000, 100 to a directory), against `du -s` of the same tree in the
 * same run, warm cache both.  Usage: tenant-disk [N] [ROUNDS]
 */

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "tenant-int.h"

static void
make_tree(const char *root, u_int n)
{
	char	 path[4096];
	u_int	 i;
	int	 fd;

	for (i = 0; i < n; i++) {
		if (i % 100 == 0) {
			snprintf(path, sizeof path, "%s/d%u", root, i / 100);
			if (mkdir(path, 0700) != 0 && errno != EEXIST)
				fatal("mkdir %s", path);
		}
		snprintf(path, sizeof path, "%s/d%u/f%u", root, i / 100, i);
		if ((fd = open(path, O_WRONLY|O_CREAT|O_TRUNC, 0600)) == -1)
			fatal("open %s", path);
		if (write(fd, path, strlen(path)) < 0)
			fatal("write");
		close(fd);
	}
}

static int
cmp(const void *a, const void *b)
{
	double	 x = *(const double *)a, y = *(const double *)b;

	return (x < y ? -1 : x > y);
}

int
main(int argc, char **argv)
{
	char		 root[] = "/tmp/gmux-bench-home.XXXXXX", cmd[256];
	u_int		 n = argc > 1 ? (u_int)atoi(argv[1]) : 100000;
	u_int		 rounds = argc > 2 ? (u_int)atoi(argv[2]) : 5, i;
	double		 walk[64], du[64];
	uint64_t	 bytes = 0, files = 0;
	int64_t		 t;

	if (rounds == 0 || rounds > 64)
		rounds = 5;
	if (mkdtemp(root) == NULL)
		fatal("mkdtemp");
	make_tree(root, n);
	snprintf(cmd, sizeof cmd, "du -s %s > /dev/null", root);
	for (i = 0; i < rounds; i++) {
		t = clock_mono_us();
		bytes = tenant_disk_measure(root, &files);
		walk[i] = (double)(clock_mono_us() - t) / 1000;
		t = clock_mono_us();
		if (system(cmd) != 0)
			fatal("du");
		du[i] = (double)(clock_mono_us() - t) / 1000;
	}
	qsort(walk, rounds, sizeof *walk, cmp);
	qsort(du, rounds, sizeof *du, cmp);
	printf("home of %llu files and directories, %llu bytes on disk\n",
	    (unsigned long long)files, (unsigned long long)bytes);
	printf("measure (tenant_disk_measure): median %.1f ms, max %.1f ms\n",
	    walk[rounds / 2], walk[rounds - 1]);
	printf("du -s (baseline, with its exec): median %.1f ms, max %.1f ms\n",
	    du[rounds / 2], du[rounds - 1]);
	printf("ratio measure / du: %.2f\n", walk[rounds / 2] / du[rounds / 2]);
	snprintf(cmd, sizeof cmd, "rm -rf %s", root);
	return (system(cmd) == 0 ? 0 : 1);
}
