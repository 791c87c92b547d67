/* test-audit.c: driver-reported GPU processes against the region. */

#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "unit.h"

/* nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory ... nounits */
static const char nvidia_out[] =
    "GPU-5d1f0e2a-6b1c-4b6e-9a51-3f0c2d7e8a10, 4101, 20480\n"
    "GPU-5d1f0e2a-6b1c-4b6e-9a51-3f0c2d7e8a10, 4222, 512\n"
    "GPU-77aa0e2a-6b1c-4b6e-9a51-3f0c2d7e8a11, 4333, [N/A]\n"
    "GPU-77aa0e2a-6b1c-4b6e-9a51-3f0c2d7e8a11, 900, 300\n";

/* amd-smi process --json, in the shape of amdsmi_proc_info_t. */
static const char amd_out[] =
    "[{\"gpu\": 0, \"process_list\": [{\"process_info\": {\"name\": "
    "\"python3\", \"pid\": 5101, \"memory_usage\": {\"gtt_mem\": {\"value\":"
    " 2, \"unit\": \"MB\"}, \"cpu_mem\": {\"value\": 1, \"unit\": \"MB\"}, "
    "\"vram_mem\": {\"value\": 4096, \"unit\": \"MB\"}}}}]}, {\"gpu\": 1, "
    "\"process_list\": [{\"process_info\": {\"pid\": 5202, \"memory_usage\":"
    " {\"vram_mem\": 1048576}}}]}, {\"gpu\": 2, \"process_list\": "
    "[{\"process_info\": \"No running processes detected\"}]}]";

/* A tree: 4000 keeps job 1 (4101 its child, 4222 a grandchild); 4300
 * keeps job 2 (4333); 900 belongs to nobody. */
static pid_t
fake_parent(pid_t pid)
{
	switch (pid) {
	case 4101:
	case 4200:
		return (4000);
	case 4222:
		return (4200);
	case 4333:
		return (4300);
	case 5101:
		return (5000);
	default:
		return (1);
	}
}

static int
fake_registered(pid_t pid, u_int *job)
{
	return (pid == 4101 || pid == 5101);
}

static void
test_parse_nvidia(void)
{
	struct audit_gpu_proc	*v;
	u_int			 n;
	char			*cause = NULL;

	CHECK(audit_parse_nvidia(nvidia_out, &v, &n, &cause) == 0);
	CHECK(n == 4);
	CHECK(v[0].pid == 4101 && v[0].used == 20480ULL << 20);
	CHECK_STR(v[0].card, "GPU-5d1f0e2a-6b1c-4b6e-9a51-3f0c2d7e8a10");
	CHECK(v[2].pid == 4333 && v[2].used == 0);
	free(v);
	CHECK(audit_parse_nvidia("No running processes found\n", &v, &n,
	    &cause) == 0 && n == 0);
	free(v);
	CHECK(audit_parse_nvidia("/,1/\n", &v, &n, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(audit_parse_nvidia("GPU-x, pid, 12\n", &v, &n, &cause) == -1);
	CHECK(v == NULL && n == 0 && cause != NULL);
	free(cause);
}

static void
test_parse_amdsmi(void)
{
	struct audit_gpu_proc	*v;
	u_int			 n;
	char			*cause = NULL;

	CHECK(audit_parse_amdsmi(amd_out, &v, &n, &cause) == 0);
	CHECK(n == 2);
	CHECK(v[0].pid == 5101 && v[0].used == 4096ULL << 20);
	CHECK_STR(v[0].card, "0");
	CHECK(v[1].pid == 5202 && v[1].used == 1048576);
	CHECK_STR(v[1].card, "1");
	free(v);
	CHECK(audit_parse_amdsmi("[{", &v, &n, &cause) == -1);
	free(cause);
}

static void
test_check(void)
{
	struct audit_gpu_proc	*v;
	struct audit_job	 jobs[] = {
		{ 1, 4000, 4ULL << 30 },
		{ 2, 4300, 0 },
		{ 3, 5000, 1ULL << 30 },
	};
	struct audit_offender	*o;
	u_int			 n, k;
	char			*cause = NULL;

	CHECK(audit_parse_nvidia(nvidia_out, &v, &n, &cause) == 0);
	k = audit_check(v, n, jobs, 3, fake_parent, fake_registered, &o);
	CHECK(k == 3);
	/* 4222 (job 1) and 4333 (job 2) never registered; 900 is no job's. */
	CHECK(k > 0 && o[0].job == 1 && o[0].pid == 4222 && o[0].stop);
	CHECK(k > 1 && o[1].job == 2 && o[1].pid == 4333 && o[1].stop);
	/* Job 1 holds 20.5 GiB by the driver's count against a 4 GiB cap. */
	CHECK(k > 2 && o[2].job == 1 && o[2].pid == 0 && !o[2].stop);
	free(o);
	free(v);
	CHECK(audit_parse_amdsmi(amd_out, &v, &n, &cause) == 0);
	k = audit_check(v, n, jobs, 3, fake_parent, fake_registered, &o);
	CHECK(k == 1 && o[0].job == 3 && o[0].pid == 0);
	free(o);
	free(v);
}

static void
test_parent(void)
{
	CHECK(audit_parent(getpid()) == getppid());
	CHECK(audit_parent(0x7ffffff0) == 0);
}

int
main(void)
{
	RUN(test_parse_nvidia);
	RUN(test_parse_amdsmi);
	RUN(test_check);
	RUN(test_parent);
	UNIT_EXIT();
}
