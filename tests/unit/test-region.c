/*
 * test-region.c: the daemon's side of the shared region: making and
 * adopting the file, slots and their generations, reaping, settling.
 * (The shim's side is tested end to end by tests/run-shim.)
 */

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "unit.h"
#include "../shim/region.h"

static char	 dir[] = "/tmp/gmux-region-XXXXXX";
static char	 path[128];

static struct gmux_region *
map(void)
{
	int			 fd = open(path, O_RDWR);
	struct gmux_region	*r;

	r = mmap(NULL, sizeof *r, PROT_READ|PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return (r == MAP_FAILED ? NULL : r);
}

static void
test_region_file(void)
{
	struct cards		 cs = { NULL, 0 };
	struct gmux_region	*r;
	struct stat		 sb;
	char			*cause = NULL, *env = NULL;

	CHECK(card_fake_parse("2xH100:80G", &cs, &cause) == 0);
	CHECK(region_open(path, &cs, &cause) == 0);
	CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600);
	CHECK(sb.st_size == sizeof *r);
	CHECK((r = map()) != NULL);
	CHECK(r->magic == GMUX_REGION_MAGIC && r->ncards == 2);
	CHECK_STR(r->cards[1].uuid, cs.v[1].uuid);
	CHECK(region_job_start(9, 1, 25, 50, 50, 1 << 20, &env, &cause) == 0);
	CHECK_STR(env, "0:1");
	free(env);
	/* A new daemon adopts the region: the running job keeps its slot. */
	region_close();
	CHECK(region_open(path, &cs, &cause) == 0);
	CHECK(region_job_set(9, 25, 25, 2 << 20) == 0);
	CHECK(r->slots[0].cap == 2 << 20 && r->slots[0].ceiling == 25);
	CHECK(r->slots[0].mps_pct == 50 && r->slots[0].card == 1);
	region_job_end(9);
	CHECK(r->slots[0].gen == 2);
	munmap(r, sizeof *r);
	/* A file of another version is replaced, not used. */
	region_close();
	truncate(path, 100);
	CHECK(region_open(path, &cs, &cause) == 0);
	CHECK(stat(path, &sb) == 0 && sb.st_size == sizeof *r);
	region_close();
	cards_free(&cs);
}

static void
test_region_slots(void)
{
	struct gmux_region	*r;
	struct region_job_info	 ri;
	char			*cause = NULL, *env = NULL;
	pid_t			 pid;
	int			 status;

	unlink(path);
	CHECK(region_open(path, NULL, &cause) == 0);
	r = map();
	CHECK(region_job_start(1, 0, 10, 10, 0, 100, &env, &cause) == 0);
	CHECK_STR(env, "0:1");
	free(env);
	/* A process of job 1 registers, as the shim would, and holds 60. */
	r->procs[5].owner = GMUX_REGION_OWNER(0, getpid());
	r->procs[5].start = gmux_region_start_time(getpid());
	r->procs[5].used = 60;
	r->slots[0].used = 60;
	region_job_end(1);
	/* Its slot is not reused while the process lives. */
	CHECK(region_job_start(2, 0, 10, 10, 0, 100, &env, &cause) == 0);
	CHECK_STR(env, "1:1");
	free(env);
	CHECK(region_tick() == 0);
	CHECK(region_pid_job(getpid(), NULL) == 1);
	/* A dead process, and one whose pid came back as another. */
	if ((pid = fork()) == 0)
		_exit(0);
	waitpid(pid, &status, 0);
	r->procs[6].owner = GMUX_REGION_OWNER(1, pid);
	r->procs[6].start = 12345;
	r->procs[6].used = 30;
	r->slots[1].used = 30 + 7;	/* 7: left by a death mid-reserve */
	r->procs[7].owner = GMUX_REGION_OWNER(1, getpid());
	r->procs[7].start = 1;		/* not our start time */
	CHECK(region_tick() == 2);
	CHECK(region_job_info(2, &ri) == 0 && ri.nprocs == 0);
	CHECK(ri.used == 0);		/* reaped 30, then settled 7 */
	r->procs[5].owner = 0;
	r->procs[5].used = 0;
	region_tick();
	CHECK(region_job_start(3, 0, 10, 10, 0, 100, &env, &cause) == 0);
	CHECK_STR(env, "0:3");
	CHECK(r->slots[0].used == 0);
	free(env);
	munmap(r, sizeof *r);
	region_close();
}

int
main(void)
{
	if (mkdtemp(dir) == NULL)
		return (1);
	snprintf(path, sizeof path, "%s/shim.region", dir);
	RUN(test_region_file);
	RUN(test_region_slots);
	unlink(path);
	rmdir(dir);
	UNIT_EXIT();
}
