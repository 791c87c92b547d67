/*
 * hsa.c: the memory cap on AMD cards, as an HSA tools library.  ROCr
 * loads every library named in HSA_TOOLS_LIB at hsa_init and hands its
 * OnLoad the API table through which all of ROCr's exported functions
 * dispatch; the shim swaps hsa_amd_memory_pool_allocate and _free there.
 *
 * Why this and not interposing hipMalloc*: every device allocation on the
 * HIP stack (hipMalloc and its dozen siblings, hipMallocAsync pool growth,
 * arrays, rocBLAS and MIOpen workspaces, OpenCL and OpenMP offload) ends
 * in this one ROCr call, and HIP's own internal calls into itself are
 * bound inside libamdhip64 where LD_PRELOAD cannot reach them, while its
 * calls into ROCr go through the table.  One hook, no list to keep up.
 *
 * The table's layout is ROCr's ABI (hsa_api_trace.h): a version (four
 * 32-bit words, minor_id holding the table's size) and then function
 * pointers in a fixed order that only grows at the end.  Only the entries
 * below are used, and the sizes are checked before any is touched.
 */

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "shim.h"

typedef int hsa_status_t;
typedef struct { uint64_t handle; } hsa_agent_t;
typedef struct { uint64_t handle; } hsa_amd_memory_pool_t;

#define HSA_STATUS_SUCCESS			0
#define HSA_STATUS_INFO_BREAK			1
#define HSA_STATUS_ERROR_OUT_OF_RESOURCES	0x1008
#define HSA_AGENT_INFO_DEVICE			17
#define HSA_DEVICE_TYPE_GPU			1

/* Indices in CoreApiTable and AmdExtTable, counted after the version. */
#define CORE_ITERATE_AGENTS		5
#define CORE_AGENT_GET_INFO		6
#define AMD_AGENT_ITERATE_POOLS		12
#define AMD_POOL_ALLOCATE		13
#define AMD_POOL_FREE			14

struct hsa_table {
	uint32_t	 major_id;
	uint32_t	 minor_id;	/* the table's size in bytes */
	uint32_t	 step_id;
	uint32_t	 reserved;
	void		*fn[];
};
struct hsa_api_table {
	uint32_t	 major_id, minor_id, step_id, reserved;
	struct hsa_table *core;
	struct hsa_table *amd_ext;
};

typedef hsa_status_t (*pool_alloc_fn)(hsa_amd_memory_pool_t, size_t,
    uint32_t, void **);
typedef hsa_status_t (*pool_free_fn)(void *);
typedef hsa_status_t (*agent_cb)(hsa_agent_t, void *);
typedef hsa_status_t (*pool_cb)(hsa_amd_memory_pool_t, void *);

#define HSA_MAX_POOLS	64

static struct hsa_table	*core, *amd;
static pool_alloc_fn	 real_alloc;
static pool_free_fn	 real_free;
static pthread_once_t	 once = PTHREAD_ONCE_INIT;
static struct {
	uint64_t	 pool;
	int		 dev;
} gpu_pools[HSA_MAX_POOLS];
static int		 ngpu_pools, ngpus;
static int		 said_layout;

static int
table_has(const struct hsa_table *t, int index)
{
	return (t != NULL && t->minor_id >= sizeof *t +
	    (size_t)(index + 1) * sizeof (void *));
}

static hsa_status_t
add_pool(hsa_amd_memory_pool_t p, void *arg)
{
	if (ngpu_pools < HSA_MAX_POOLS) {
		gpu_pools[ngpu_pools].pool = p.handle;
		gpu_pools[ngpu_pools++].dev = *(int *)arg;
	}
	return (HSA_STATUS_SUCCESS);
}

/* Each GPU agent, in ROCr's order (the job's cards, in device order). */
static hsa_status_t
add_agent(hsa_agent_t a, void *arg)
{
	hsa_status_t	(*info)(hsa_agent_t, int, void *);
	hsa_status_t	(*pools)(hsa_agent_t, pool_cb, void *);
	uint32_t	 type = 0;
	int		 dev;

	info = (hsa_status_t (*)(hsa_agent_t, int, void *))
	    core->fn[CORE_AGENT_GET_INFO];
	pools = (hsa_status_t (*)(hsa_agent_t, pool_cb, void *))
	    amd->fn[AMD_AGENT_ITERATE_POOLS];
	if (info(a, HSA_AGENT_INFO_DEVICE, &type) != HSA_STATUS_SUCCESS ||
	    type != HSA_DEVICE_TYPE_GPU)
		return (HSA_STATUS_SUCCESS);
	dev = ngpus++;
	pools(a, add_pool, &dev);
	return (HSA_STATUS_SUCCESS);
}

static void
find_gpu_pools(void)
{
	hsa_status_t	(*iter)(agent_cb, void *);

	iter = (hsa_status_t (*)(agent_cb, void *))
	    core->fn[CORE_ITERATE_AGENTS];
	iter(add_agent, NULL);
	shim_log("hsa: %d GPU agents, %d pools", ngpus, ngpu_pools);
}

/* The device of a GPU pool; -1 for host pools, which do not count. */
static int
pool_dev(hsa_amd_memory_pool_t p)
{
	int	 i;

	pthread_once(&once, find_gpu_pools);
	for (i = 0; i < ngpu_pools; i++) {
		if (gpu_pools[i].pool == p.handle)
			return (gpu_pools[i].dev);
	}
	return (-1);
}

static hsa_status_t
hsa_pool_allocate(hsa_amd_memory_pool_t p, size_t size, uint32_t flags,
    void **ptr)
{
	hsa_status_t	 st;
	int		 dev;

	if (!acct_active() || ptr == NULL || (dev = pool_dev(p)) == -1)
		return (real_alloc(p, size, flags, ptr));
	if (acct_reserve(dev, size) != 0)
		return (HSA_STATUS_ERROR_OUT_OF_RESOURCES);
	if ((st = real_alloc(p, size, flags, ptr)) != HSA_STATUS_SUCCESS) {
		acct_release(dev, size);
		return (st);
	}
	if (track_add(TRACK_HSA, (uintptr_t)*ptr, size, dev) != 0) {
		real_free(*ptr);
		acct_release(dev, size);
		return (HSA_STATUS_ERROR_OUT_OF_RESOURCES);
	}
	return (st);
}

static hsa_status_t
hsa_pool_free(void *ptr)
{
	hsa_status_t	 st;
	uint64_t	 size;
	int		 dev;

	if ((st = real_free(ptr)) == HSA_STATUS_SUCCESS && acct_active() &&
	    track_del(TRACK_HSA, (uintptr_t)ptr, &size, &dev) == 0)
		acct_release(dev, size);
	return (st);
}

bool	OnLoad(void *, uint64_t, uint64_t, const char *const *);
void	OnUnload(void);

/* ROCr's entry into a tools library. */
SHIM_EXPORT bool
OnLoad(void *table, uint64_t runtime_version, uint64_t failed_tool_count,
    const char *const *failed_tool_names)
{
	struct hsa_api_table	*t = table;

	if (t == NULL || !table_has(t->core, CORE_AGENT_GET_INFO) ||
	    !table_has(t->amd_ext, AMD_POOL_FREE)) {
		shim_warn_once(&said_layout, "unknown HSA API table layout: "
		    "GPU memory is not counted");
		return (false);
	}
	core = t->core;
	amd = t->amd_ext;
	real_alloc = (pool_alloc_fn)amd->fn[AMD_POOL_ALLOCATE];
	real_free = (pool_free_fn)amd->fn[AMD_POOL_FREE];
	amd->fn[AMD_POOL_ALLOCATE] = (void *)hsa_pool_allocate;
	amd->fn[AMD_POOL_FREE] = (void *)hsa_pool_free;
	shim_log("hsa: hooked pool allocate and free (runtime %llu)",
	    (unsigned long long)runtime_version);
	return (true);
}

SHIM_EXPORT void
OnUnload(void)
{
}
