/*
 * nvml.c: NVML's memory figures, as the job should see them.  NVML knows
 * every card of the machine whatever CUDA_VISIBLE_DEVICES says, so the
 * card is found by UUID; cards that are not the job's are left alone.
 */

#include <string.h>

#include "shim.h"

/* The job's cap and what is left of it for nvml device d, if it is ours. */
static int
nvml_job(nvmlDevice_t d, uint64_t *cap, uint64_t *used)
{
	__typeof__(&nvmlDeviceGetUUID)	 fn = REAL(nvmlDeviceGetUUID);
	struct gmux_region_slot		*sl;
	char				 uuid[96];

	if (!acct_active() || fn == NULL ||
	    fn(d, uuid, sizeof uuid) != NVML_SUCCESS)
		return (0);
	uuid[sizeof uuid - 1] = '\0';
	if ((sl = acct_slot_uuid(uuid)) == NULL)
		return (0);
	*cap = atomic_load(&sl->cap);
	*used = atomic_load(&sl->used);
	return (1);
}

/* Shows the cap as the total and the job's use as used. */
static void
nvml_fix(unsigned long long *total, unsigned long long *free_,
    unsigned long long *usedp, uint64_t cap, uint64_t used)
{
	if (cap < *total)
		*total = cap;
	*usedp = used;
	*free_ = used < *total ? *total - used : 0;
}

SHIM_EXPORT nvmlReturn_t
nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
	__typeof__(&nvmlDeviceGetMemoryInfo) fn = REAL(nvmlDeviceGetMemoryInfo);
	uint64_t			 cap, used;
	nvmlReturn_t			 rc;

	if (fn == NULL)
		return (NVML_ERROR_NOT_FOUND);
	if ((rc = fn(d, m)) == NVML_SUCCESS && m != NULL &&
	    nvml_job(d, &cap, &used))
		nvml_fix(&m->total, &m->free, &m->used, cap, used);
	return (rc);
}

SHIM_EXPORT nvmlReturn_t
nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m)
{
	__typeof__(&nvmlDeviceGetMemoryInfo_v2) fn =
	    REAL(nvmlDeviceGetMemoryInfo_v2);
	uint64_t			 cap, used;
	nvmlReturn_t			 rc;

	if (fn == NULL)
		return (NVML_ERROR_NOT_FOUND);
	if ((rc = fn(d, m)) == NVML_SUCCESS && m != NULL &&
	    nvml_job(d, &cap, &used)) {
		nvml_fix(&m->total, &m->free, &m->used, cap, used);
		m->reserved = 0;
	}
	return (rc);
}
