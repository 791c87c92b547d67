/*
 * test-shim.c: libgmux.so in front of the fake driver, end to end.  This
 * program plays the daemon (the region through src/region.c) and drives
 * cudash processes that run with LD_PRELOAD=libgmux.so, checking what
 * they are allowed, what the region says and what the fake card held.
 * Usage: test-shim BUILD_DIR
 */

#include <sys/mman.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "card-int.h"
#include "unit.h"
#include "../../shim/region.h"

#define MiB	(1ULL << 20)
#define UUID0	"GPU-gmux-test-0"

struct child {
	pid_t	 pid;
	FILE	*in, *out;
	char	 line[512];
};

static const char	*build;
static char		 dir[] = "/tmp/gmux-shim-XXXXXX";
static char		 region[128], witness[128], errfile[128];
static struct _Atomic_witness {
	_Atomic uint64_t	 used, peak;
} *card;
static u_int		 next_job = 1;

static void
setup(void)
{
	struct cards	 cs = { NULL, 0 };
	struct card	*c;
	char		*cause = NULL;
	int		 fd;

	if (mkdtemp(dir) == NULL)
		exit(1);
	snprintf(region, sizeof region, "%s/shim.region", dir);
	snprintf(witness, sizeof witness, "%s/card", dir);
	snprintf(errfile, sizeof errfile, "%s/stderr", dir);
	c = cards_add(&cs);
	c->vendor = VENDOR_NVIDIA;
	c->uuid = xstrdup(UUID0);
	c->memory = 16ULL << 30;
	if (region_open(region, &cs, &cause) != 0) {
		fprintf(stderr, "region_open: %s\n", cause);
		exit(1);
	}
	cards_free(&cs);
	fd = open(witness, O_RDWR|O_CREAT|O_TRUNC, 0600);
	if (fd == -1 || ftruncate(fd, 4096) == -1)
		exit(1);
	card = mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
}

/* A new job with cap and ceiling; its slot name goes to slots. */
static u_int
job(uint64_t cap, u_int ceiling, char *slots, size_t len)
{
	char	*env, *cause;
	u_int	 id = next_job++;

	if (region_job_start(id, 0, ceiling, ceiling, 0, cap, &env, &cause)
	    != 0) {
		fprintf(stderr, "region_job_start: %s\n", cause);
		exit(1);
	}
	snprintf(slots, len, "%s", env);
	free(env);
	return (id);
}

static void
child_start(struct child *c, const char *prog, const char *slots,
    const char *regpath)
{
	int	 in[2], out[2], err;
	char	 path[256], *envp[16], *argv[2];
	int	 n = 0;

	snprintf(path, sizeof path, "%s/shim-tests/%s", build, prog);
	if (pipe(in) == -1 || pipe(out) == -1)
		exit(1);
	if ((c->pid = fork()) == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		if ((err = open(errfile, O_WRONLY|O_CREAT|O_APPEND,
		    0600)) != -1)
			dup2(err, 2);
		closefrom(3);
		xasprintf(&envp[n++], "LD_PRELOAD=%s/libgmux.so", build);
		xasprintf(&envp[n++], "LD_LIBRARY_PATH=%s/fake-cuda", build);
		xasprintf(&envp[n++], "GMUX_REGION=%s", regpath);
		xasprintf(&envp[n++], "GMUX_REGION_SLOTS=%s", slots);
		xasprintf(&envp[n++], "FAKE_CUDA_SHARED=%s", witness);
		xasprintf(&envp[n++], "FAKE_CUDA_UUIDS=%s", UUID0);
		xasprintf(&envp[n++], "FAKE_CUDA_KERNEL_US=2000");
		xasprintf(&envp[n++], "HSA_TOOLS_LIB=%s/libgmux.so", build);
		if (getenv("GMUX_SHIM_LOG") != NULL)
			xasprintf(&envp[n++], "GMUX_SHIM_LOG=%s",
			    getenv("GMUX_SHIM_LOG"));
		envp[n] = NULL;
		argv[0] = path;
		argv[1] = NULL;
		execve(path, argv, envp);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->in = fdopen(in[1], "w");
	c->out = fdopen(out[0], "r");
	setvbuf(c->in, NULL, _IOLBF, 0);
}

/* Sends one command; returns its answer line without the newline. */
static const char *
ask(struct child *c, const char *fmt, ...)
{
	va_list	 ap;
	size_t	 n;

	va_start(ap, fmt);
	vfprintf(c->in, fmt, ap);
	va_end(ap);
	fputc('\n', c->in);
	fflush(c->in);
	if (fgets(c->line, sizeof c->line, c->out) == NULL)
		return ("(eof)");
	if ((n = strlen(c->line)) > 0 && c->line[n - 1] == '\n')
		c->line[n - 1] = '\0';
	return (c->line);
}

static int
child_end(struct child *c)
{
	int	 status;

	fclose(c->in);
	fclose(c->out);
	waitpid(c->pid, &status, 0);
	return (status);
}

static int
ok(const char *answer)
{
	return (strncmp(answer, "ok", 2) == 0);
}

static uint64_t
used(u_int id)
{
	struct region_job_info	 ri;

	return (region_job_info(id, &ri) == 0 ? ri.used : UINT64_MAX);
}

static void
test_runtime_path(void)
{
	struct child	 c;
	char		 slots[32];
	u_int		 id = job(64 * MiB, 100, slots, sizeof slots);

	child_start(&c, "cudash-dl", slots, region);
	CHECK(ok(ask(&c, "init")));
	CHECK_STR(ask(&c, "origin gpa"), "ok libgmux.so");
	CHECK_STR(ask(&c, "origin alloc"), "ok libgmux.so");
	CHECK_STR(ask(&c, "getproc cuMemAlloc 12040 0"),
	    "ok libgmux.so cuMemAlloc_v2");
	CHECK_STR(ask(&c, "getproc cuMemAllocAsync 12040 2"),
	    "ok libgmux.so cuMemAllocAsync_ptsz");
	CHECK_STR(ask(&c, "getproc cuMemAllocAsync 12040 0"),
	    "ok libgmux.so cuMemAllocAsync");
	CHECK_STR(ask(&c, "getproc cuLaunchKernel 12040 2"),
	    "ok libgmux.so cuLaunchKernel_ptsz");
	CHECK_STR(ask(&c, "getproc cuGetProcAddress 12040 0"),
	    "ok libgmux.so cuGetProcAddress_v2");
	CHECK_STR(ask(&c, "getproc cuCtxGetDevice 12040 0"),
	    "ok libcuda.so.1 cuCtxGetDevice");
	CHECK_STR(ask(&c, "getproc cuMemAllocAsync 11000 0"), "err 500 2");
	/* The _ptsz wrapper calls the driver's _ptsz variant. */
	CHECK_STR(ask(&c, "ptsz"), "ok 0");
	CHECK(ok(ask(&c, "async-ptsz 3M")));
	CHECK_STR(ask(&c, "ptsz"), "ok 1");
	CHECK(used(id) == 4 * MiB);
	CHECK(ok(ask(&c, "alloc 61M")) == 0);
	CHECK(child_end(&c) == 0);
	region_job_end(id);
}

static void
test_direct_link(void)
{
	struct child	 c;
	char		 slots[32];
	u_int		 id = job(32 * MiB, 100, slots, sizeof slots);

	child_start(&c, "cudash", slots, region);
	CHECK(ok(ask(&c, "init")));
	CHECK_STR(ask(&c, "origin alloc"), "ok libgmux.so");
	CHECK_STR(ask(&c, "origin launch_ptsz"), "ok libgmux.so");
	CHECK_STR(ask(&c, "alloc 20M"), "ok 0");
	CHECK(used(id) == 20 * MiB);
	CHECK_STR(ask(&c, "alloc 20M"), "err 2");
	CHECK_STR(ask(&c, "free 0"), "ok");
	CHECK(used(id) == 0);
	CHECK(child_end(&c) == 0);
	region_job_end(id);
}

/* Each counted entry point: charged while held, refused past the cap. */
static void
test_counted(void)
{
	static const struct {
		const char	*cmd;
		uint64_t	 charge;
	} t[] = {
		{ "alloc 8M", 8 * MiB },
		{ "managed 8M", 8 * MiB },
		{ "pitch 1000 1024", 1024 * 1024 },	/* pitch 1024 */
		{ "create 8M", 8 * MiB },
		{ "array 1024 1024", 4 * MiB },
		{ "array3d 256 256 16", 4 * MiB },
		{ "mipmap 1024 1024 2", 5 * MiB },
		{ "async 3M", 4 * MiB },		/* pool growth */
		{ "async-ptsz 3M", 4 * MiB },
		{ "pool 3M", 4 * MiB },
		{ "pool-ptsz 3M", 4 * MiB },
	};
	struct child	 c;
	char		 slots[32], over[64], *sp;
	u_int		 id = job(16 * MiB, 100, slots, sizeof slots), i;

	atomic_store(&card->used, 0);
	child_start(&c, "cudash-dl", slots, region);
	CHECK(ok(ask(&c, "init")));
	for (i = 0; i < nitems(t); i++) {
		if (!ok(ask(&c, "%s", t[i].cmd))) {
			fprintf(stderr, "%s: %s\n", t[i].cmd, c.line);
			CHECK(0);
			continue;
		}
		if (used(id) != t[i].charge)
			fprintf(stderr, "%s: used %llu\n", t[i].cmd,
			    (unsigned long long)used(id));
		CHECK(used(id) == t[i].charge);
		CHECK(ok(ask(&c, "free %s", c.line + 3)));
		if (strncmp(t[i].cmd, "async", 5) == 0 ||
		    strncmp(t[i].cmd, "pool", 4) == 0) {
			CHECK(used(id) == t[i].charge);	/* the pool keeps it */
			CHECK(ok(ask(&c, "trim")));
		}
		CHECK(used(id) == 0);
		/* Twice the size (or more) is past the 16M cap. */
		snprintf(over, sizeof over, "%s", t[i].cmd);
		if ((sp = strchr(over, ' ')) != NULL)
			snprintf(sp, sizeof over - (sp - over), " 64M 64M 2");
		CHECK(strncmp(ask(&c, "%s", over), "err", 3) == 0);
		CHECK(used(id) == 0);
	}
	CHECK(child_end(&c) == 0);
	CHECK(atomic_load(&card->used) == 0);
	region_job_end(id);
}

/* Two processes of one job race at the cap; the card never holds more. */
static void
test_race(void)
{
	struct child	 a, b;
	char		 slots[32], ra[512], rb[512];
	u_int		 id = job(8 * MiB, 100, slots, sizeof slots);
	int		 ga, da, gb, db;

	atomic_store(&card->used, 0);
	atomic_store(&card->peak, 0);
	child_start(&a, "cudash", slots, region);
	child_start(&b, "cudash-dl", slots, region);
	CHECK(ok(ask(&a, "init")) && ok(ask(&b, "init")));
	fprintf(a.in, "race 5000 1M\n");
	fprintf(b.in, "race 5000 1M\n");
	fflush(a.in);
	fflush(b.in);
	snprintf(ra, sizeof ra, "%s", fgets(a.line, sizeof a.line, a.out) ?
	    a.line : "");
	snprintf(rb, sizeof rb, "%s", fgets(b.line, sizeof b.line, b.out) ?
	    b.line : "");
	CHECK(sscanf(ra, "ok %d %d", &ga, &da) == 2);
	CHECK(sscanf(rb, "ok %d %d", &gb, &db) == 2);
	printf("# race: %d+%d allocations, %d+%d refused, card peak %llu MiB\n",
	    ga, gb, da, db, (unsigned long long)atomic_load(&card->peak) / MiB);
	CHECK(atomic_load(&card->peak) <= 8 * MiB);
	CHECK(atomic_load(&card->peak) >= 7 * MiB);
	CHECK(da + db > 0);
	CHECK(used(id) == 0);
	CHECK(child_end(&a) == 0 && child_end(&b) == 0);
	region_job_end(id);
}

/* A SIGKILLed process's share comes back through the reaper. */
static void
test_reap(void)
{
	struct child		 c;
	struct region_job_info	 ri;
	char			 slots[32];
	u_int			 id = job(64 * MiB, 100, slots, sizeof slots);

	region_tick();		/* earlier tests' processes */
	child_start(&c, "cudash", slots, region);
	CHECK(ok(ask(&c, "init")));
	CHECK(ok(ask(&c, "alloc 10M")) && ok(ask(&c, "async 5M")));
	CHECK(used(id) == 16 * MiB);
	CHECK(region_tick() == 0);
	CHECK(region_job_info(id, &ri) == 0 && ri.nprocs == 1);
	CHECK(region_pid_job(c.pid, NULL) == 1);
	kill(c.pid, SIGKILL);
	child_end(&c);
	CHECK(region_tick() == 1);
	CHECK(region_job_info(id, &ri) == 0 && ri.nprocs == 0 && ri.used == 0);
	CHECK(region_pid_job(c.pid, NULL) == 0);
	region_job_end(id);
}

static void
test_resize(void)
{
	struct child	 c;
	char		 slots[32];
	u_int		 id = job(16 * MiB, 100, slots, sizeof slots);

	child_start(&c, "cudash", slots, region);
	CHECK(ok(ask(&c, "init")));
	CHECK_STR(ask(&c, "alloc 10M"), "ok 0");
	CHECK(region_job_set(id, 100, 100, 8 * MiB) == 0);
	CHECK_STR(ask(&c, "alloc 1M"), "err 2");
	CHECK_STR(ask(&c, "info"), "ok 0 8388608");
	CHECK_STR(ask(&c, "free 0"), "ok");
	CHECK(ok(ask(&c, "alloc 4M")));
	CHECK(region_job_set(id, 100, 100, 64 * MiB) == 0);
	CHECK(ok(ask(&c, "alloc 40M")));
	CHECK(used(id) == 44 * MiB);
	CHECK(region_job_set(id + 1000, 1, 1, 1) == -1);
	CHECK(child_end(&c) == 0);
	region_job_end(id);
}

/* cuMemGetInfo, cuDeviceTotalMem and NVML show the cap and the job's use. */
static void
test_totals(void)
{
	struct child	 a, b;
	char		 slots[32], want[128];
	u_int		 id = job(1024 * MiB, 100, slots, sizeof slots);

	child_start(&a, "cudash", slots, region);
	child_start(&b, "cudash-dl", slots, region);
	CHECK(ok(ask(&a, "init")) && ok(ask(&b, "init")));
	CHECK_STR(ask(&a, "total"), "ok 1073741824");
	CHECK_STR(ask(&b, "total"), "ok 1073741824");
	CHECK(ok(ask(&a, "alloc 100M")) && ok(ask(&b, "alloc 50M")));
	snprintf(want, sizeof want, "ok %llu %llu", 874ULL * MiB,
	    1024ULL * MiB);
	CHECK_STR(ask(&a, "info"), want);
	CHECK_STR(ask(&b, "info"), want);
	snprintf(want, sizeof want, "ok %llu %llu %llu %llu %llu %llu",
	    1024ULL * MiB, 150ULL * MiB, 874ULL * MiB, 1024ULL * MiB,
	    150ULL * MiB, 874ULL * MiB);
	CHECK_STR(ask(&a, "nvml"), want);
	CHECK_STR(ask(&b, "nvml"), want);
	CHECK(child_end(&a) == 0 && child_end(&b) == 0);
	region_job_end(id);
}

static int
count_in_file(const char *path, const char *what)
{
	char	*text, *p;
	int	 n = 0;

	if ((text = read_file(path, 1 << 20, NULL, NULL)) == NULL)
		return (0);
	for (p = text; (p = strstr(p, what)) != NULL; p++)
		n++;
	free(text);
	return (n);
}

/* No region: allocations fail closed, said once; an ended job too. */
static void
test_fail_closed(void)
{
	struct child	 c;
	char		 slots[32];
	u_int		 id = job(64 * MiB, 100, slots, sizeof slots);

	region_tick();
	unlink(errfile);
	child_start(&c, "cudash", slots, "/nonexistent/shim.region");
	CHECK(ok(ask(&c, "init")));
	CHECK_STR(ask(&c, "alloc 1M"), "err 2");
	CHECK_STR(ask(&c, "async 1M"), "err 2");
	CHECK_STR(ask(&c, "info"), "ok 0 17179869184");
	CHECK(child_end(&c) == 0);
	CHECK(count_in_file(errfile, "cannot use the shared region") == 1);

	child_start(&c, "cudash", slots, region);
	CHECK(ok(ask(&c, "init")) && ok(ask(&c, "alloc 1M")));
	region_job_end(id);
	CHECK_STR(ask(&c, "alloc 1M"), "err 2");
	CHECK(ok(ask(&c, "free 0")));
	CHECK(child_end(&c) == 0);
	CHECK(count_in_file(errfile, "has ended") == 1);
	CHECK(region_tick() == 1);
}

static double
busy(struct child *c, int ms)
{
	double	 frac = -1;
	long	 n;

	if (sscanf(ask(c, "launch %d", ms), "ok %ld %lf", &n, &frac) != 2)
		return (-1);
	return (frac);
}

/* The pacer holds launches to the ceiling, and follows a live change. */
static void
test_pacer(void)
{
	struct child	 c;
	char		 slots[32];
	u_int		 id = job(64 * MiB, 25, slots, sizeof slots);
	double		 f25, f50, f100;

	child_start(&c, "cudash-dl", slots, region);
	CHECK(ok(ask(&c, "init")));
	f25 = busy(&c, 1500);
	CHECK(region_job_set(id, 50, 50, 64 * MiB) == 0);
	f50 = busy(&c, 1500);
	CHECK(region_job_set(id, 100, 100, 64 * MiB) == 0);
	f100 = busy(&c, 1000);
	printf("# pacer: busy %.3f at 25, %.3f at 50, %.3f at 100\n", f25, f50,
	    f100);
	CHECK(f25 > 0.18 && f25 < 0.32);
	CHECK(f50 > 0.40 && f50 < 0.60);
	CHECK(f100 > 0.85);
	CHECK(child_end(&c) == 0);
	region_job_end(id);
}

/* AMD: the HSA tools hook counts GPU pools and leaves host pools alone. */
static void
test_hsa(void)
{
	struct child	 c;
	char		 slots[32];
	u_int		 id = job(16 * MiB, 100, slots, sizeof slots);

	child_start(&c, "hsa-host", slots, region);
	CHECK_STR(ask(&c, "load"), "ok");
	CHECK_STR(ask(&c, "alloc gpu 10485760"), "ok 0");
	CHECK(used(id) == 10 * MiB);
	CHECK_STR(ask(&c, "alloc gpu 10485760"), "err 4104");
	CHECK_STR(ask(&c, "alloc host 104857600"), "ok 1");
	CHECK(used(id) == 10 * MiB);
	CHECK_STR(ask(&c, "free 0"), "ok");
	CHECK_STR(ask(&c, "free 1"), "ok");
	CHECK(used(id) == 0);
	CHECK_STR(ask(&c, "alloc gpu 16777216"), "ok 0");
	CHECK(child_end(&c) == 0);
	region_job_end(id);
}

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test-shim BUILD_DIR\n");
		return (2);
	}
	build = argv[1];
	setup();
	RUN(test_runtime_path);
	RUN(test_direct_link);
	RUN(test_counted);
	RUN(test_race);
	RUN(test_reap);
	RUN(test_resize);
	RUN(test_totals);
	RUN(test_fail_closed);
	RUN(test_pacer);
	RUN(test_hsa);
	region_close();
	unlink(region);
	unlink(witness);
	unlink(errfile);
	rmdir(dir);
	UNIT_EXIT();
}
