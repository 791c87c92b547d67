/*
 * bench/sync.c: the client's side of a remote run's sync on a generated
 * tree (10,000 files, 200 MB by default): the first scan (nothing cached),
 * an unchanged re-scan (every file a stat cache hit) and a re-scan with one
 * file changed; then the whole sync (scan, manifest, what is missing,
 * upload) against the real host logic in process.  Each figure is printed
 * with its ratio to a baseline measured in the same run: a bare lstat walk
 * of the tree for re-scans (the least any sync must do), reading every
 * byte for first scans.  The page cache is warm throughout.
 *
 * usage: bench-sync [-n FILES] [-s MB] DIR
 * DIR/tree is made once and reused; DIR/home holds the stat cache and the
 * blob store.  bench/run-sync builds and runs this, then rsync over ssh.
 */

#include <sys/stat.h>

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gmux.h"

#define RUNS	5

static char	*root;
static char	*cache;

static double
now_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ts.tv_sec * 1e3 + ts.tv_nsec / 1e6);
}

static uint64_t	 rng = 88172645463325252ULL;

static uint64_t
xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (rng);
}

/* Ten big files share half the bytes; the rest are small, in 100 dirs. */
static void
make_tree(u_int files, uint64_t bytes)
{
	uint64_t	 big = bytes / 2 / 10, small = bytes / 2 / (files - 10);
	uint64_t	 size, i, j, *buf;
	char		*p;
	int		 fd;

	buf = xmalloc(big + 8);
	for (i = 0; i < files; i++) {
		size = i < 10 ? big : small / 2 + xorshift() % (small + 1);
		for (j = 0; j < size / 8 + 1; j++)
			buf[j] = xorshift();
		xasprintf(&p, "%s/d%02llu", root,
		    (unsigned long long)(i % 100));
		mkdir(p, 0755);
		free(p);
		xasprintf(&p, "%s/d%02llu/f%05llu.dat", root,
		    (unsigned long long)(i % 100), (unsigned long long)i);
		fd = open(p, O_WRONLY|O_CREAT|O_TRUNC, 0644);
		if (fd == -1 || write_all(fd, buf, size) == -1)
			fatal("%s", p);
		close(fd);
		free(p);
	}
	free(buf);
}

static int
walk_entry(int dirfd, const char *name, const char *path,
    const struct stat *st, void *arg, char **cause)
{
	(*(uint64_t *)arg)++;
	return (1);
}

/* Baseline for re-scans: visit and lstat every entry, nothing more. */
static double
bench_walk(void)
{
	static const struct walk_ops ops = { NULL, NULL, walk_entry };
	uint64_t	 n = 0;
	double		 t0 = now_ms();
	char		*cause = NULL;
	int		 fd;

	fd = open(root, O_RDONLY|O_DIRECTORY);
	if (confine_walk(fd, &ops, &n, &cause) != 0)
		fatalx("%s", cause);
	close(fd);
	return (now_ms() - t0);
}

static int
read_entry(int dirfd, const char *name, const char *path,
    const struct stat *st, void *arg, char **cause)
{
	static char	 buf[128 * 1024];
	int		 fd;

	if (!S_ISREG(st->st_mode))
		return (1);
	if ((fd = openat(dirfd, name, O_RDONLY)) != -1) {
		while (read(fd, buf, sizeof buf) > 0)
			;
		close(fd);
	}
	return (0);
}

/* Baseline for first scans: read every byte (cat > /dev/null). */
static double
bench_read(void)
{
	static const struct walk_ops ops = { NULL, NULL, read_entry };
	double		 t0 = now_ms();
	char		*cause = NULL;
	int		 fd;

	fd = open(root, O_RDONLY|O_DIRECTORY);
	if (confine_walk(fd, &ops, NULL, &cause) != 0)
		fatalx("%s", cause);
	close(fd);
	return (now_ms() - t0);
}

/* The client's work before any request: scan, save, manifest, digest. */
static double
bench_scan(struct sync_stats *st)
{
	struct statcache	*sc;
	struct manifest		 m;
	char			*cause = NULL, *text, d[DIGEST_HEX];
	double			 t0 = now_ms();
	size_t			 len;

	sc = statcache_load(cache);
	memset(st, 0, sizeof *st);
	if (sync_scan(root, sc, &m, st, &cause) != 0 ||
	    statcache_save(sc, &cause) != 0)
		fatalx("%s", cause);
	text = manifest_format(&m, &len);
	digest_buf(text, len, d);
	free(text);
	manifest_clear(&m);
	statcache_free(sc);
	return (now_ms() - t0);
}

/* The whole sync against the host's logic in process. */
static double
bench_sync(struct remote_local *l, struct sync_stats *st)
{
	struct remote_io	 io;
	struct statcache	*sc;
	char			*cause = NULL, d[DIGEST_HEX];
	double			 t0 = now_ms();

	remote_local_io(l, &io);
	sc = statcache_load(cache);
	memset(st, 0, sizeof *st);
	if (remote_sync(&io, root, sc, -1, d, st, &cause) != 0)
		fatalx("%s", cause);
	statcache_free(sc);
	return (now_ms() - t0);
}

/* The host's side of starting the job: its own copy of the tree. */
static double
bench_prepare(struct remote_local *l, const char *home)
{
	struct manifest		 m;
	struct sync_stats	 st;
	json_t			*reply = NULL;
	char			*job, *cause = NULL, *text, d[DIGEST_HEX];
	double			 t0;
	size_t			 len;

	memset(&st, 0, sizeof st);
	if (sync_scan(root, NULL, &m, &st, &cause) != 0)
		fatalx("%s", cause);
	text = manifest_format(&m, &len);
	digest_buf(text, len, d);
	xasprintf(&job, "%s/job", home);
	confine_remove(job);
	t0 = now_ms();
	if (remote_host_prepare(l->cas, d, job, &reply, &cause) != 0)
		fatalx("%s", cause);
	t0 = now_ms() - t0;
	confine_remove(job);
	free(job);
	free(text);
	manifest_clear(&m);
	sync_stats_clear(&st);
	return (t0);
}

static int
cmp_double(const void *a, const void *b)
{
	double	 x = *(const double *)a, y = *(const double *)b;

	return (x < y ? -1 : x > y);
}

static double
median(double *v, int n)
{
	qsort(v, n, sizeof *v, cmp_double);
	return (v[n / 2]);
}

static void
report(const char *what, double ms, double base, const char *basename)
{
	printf("%-34s %9.1f ms  %6.2fx %s\n", what, ms, ms / base, basename);
}

/* Rewrites one small file with new content of the same size. */
static void
touch_one(int round)
{
	char	*p, c = (char)('a' + round % 26);
	int	 fd;

	xasprintf(&p, "%s/d57/f00057.dat", root);
	if ((fd = open(p, O_WRONLY)) == -1 || pwrite(fd, &c, 1, 0) != 1)
		fatal("%s", p);
	close(fd);
	free(p);
	usleep(20000);	/* out of the stamp's clock tick: not racy */
}

static void
run_all(const char *home)
{
	struct sync_stats	 st;
	struct remote_local	 l;
	double			 walk[RUNS], rd[RUNS], v[RUNS], w, r;
	char			*blobs, *cause = NULL;
	int			 i;

	for (i = 0; i < RUNS; i++) {
		walk[i] = bench_walk();
		rd[i] = bench_read();
	}
	w = median(walk, RUNS);
	r = median(rd, RUNS);
	printf("%-34s %9.1f ms\n", "baseline: lstat walk", w);
	printf("%-34s %9.1f ms\n", "baseline: read every byte", r);

	for (i = 0; i < RUNS; i++) {
		unlink(cache);
		v[i] = bench_scan(&st);
	}
	report("scan, first (nothing cached)", median(v, RUNS), r, "read");
	printf("  (%llu files, %llu hashed, %.1f MB)\n",
	    (unsigned long long)st.files, (unsigned long long)st.hashed,
	    st.bytes / 1048576.0);
	usleep(20000);
	bench_scan(&st);	/* entries of the first scan may be racy */
	for (i = 0; i < RUNS; i++)
		v[i] = bench_scan(&st);
	report("scan, unchanged", median(v, RUNS), w, "lstat walk");
	printf("  (%llu hashed)\n", (unsigned long long)st.hashed);
	for (i = 0; i < RUNS; i++) {
		touch_one(i);
		v[i] = bench_scan(&st);
	}
	report("scan, one file changed", median(v, RUNS), w, "lstat walk");
	printf("  (%llu hashed)\n", (unsigned long long)st.hashed);

	memset(&l, 0, sizeof l);
	xasprintf(&blobs, "%s/blobs", home);
	confine_remove(blobs);		/* a first run starts empty */
	l.max_upload = 1ULL << 40;
	if ((l.cas = cas_open(blobs, 1ULL << 40, &cause)) == NULL)
		fatalx("%s", cause);
	unlink(cache);
	v[0] = bench_sync(&l, &st);
	report("sync in process, first", v[0], r, "read");
	printf("  (%llu blobs sent, %u requests)\n",
	    (unsigned long long)st.moved, l.requests);
	v[1] = bench_prepare(&l, home);
	report("job's copy of the tree", v[1], r, "read");
	report("first run (sync + job's copy)", v[0] + v[1], r, "read");
	bench_sync(&l, &st);
	for (i = 0; i < RUNS; i++) {
		l.requests = 0;
		v[i] = bench_sync(&l, &st);
	}
	report("sync in process, unchanged", median(v, RUNS), w, "lstat walk");
	printf("  (%u request, target <= 50 ms)\n", l.requests);
	for (i = 0; i < RUNS; i++) {
		touch_one(i + 7);
		v[i] = bench_sync(&l, &st);
	}
	report("sync in process, one changed", median(v, RUNS), w,
	    "lstat walk");
	cas_close(l.cas);
	free(blobs);
}

int
main(int argc, char **argv)
{
	char		*home, *marker;
	u_int		 files = 10000;
	uint64_t	 mb = 200;
	int		 ch;

	while ((ch = getopt(argc, argv, "n:s:")) != -1) {
		switch (ch) {
		case 'n':
			files = (u_int)atoi(optarg);
			break;
		case 's':
			mb = (uint64_t)atoll(optarg);
			break;
		default:
			goto usage;
		}
	}
	if (argc - optind != 1 || files < 20)
		goto usage;
	xasprintf(&root, "%s/tree", argv[optind]);
	xasprintf(&home, "%s/home", argv[optind]);
	xasprintf(&marker, "%s/.made-%u-%llu", argv[optind], files,
	    (unsigned long long)mb);
	mkdir_p(root, 0755);
	mkdir_p(home, 0755);
	setenv("GMUX_HOME", home, 1);
	cache = statcache_path(root);
	if (access(marker, F_OK) != 0) {
		printf("making %u files, %llu MB in %s\n", files,
		    (unsigned long long)mb, root);
		make_tree(files, mb << 20);
		close(open(marker, O_WRONLY|O_CREAT, 0644));
	}
	printf("bench-sync: %u files, %llu MB, medians of %d runs\n", files,
	    (unsigned long long)mb, RUNS);
	run_all(home);
	return (0);
usage:
	fprintf(stderr, "usage: bench-sync [-n FILES] [-s MB] DIR\n");
	return (2);
}
