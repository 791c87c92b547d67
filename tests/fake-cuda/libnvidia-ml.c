/*
 * libnvidia-ml.c: a fake libnvidia-ml.so.1 for tests.  Its devices are
 * named by FAKE_CUDA_UUIDS (comma-separated; "GPU-fake-N" otherwise), hold
 * FAKE_CUDA_MEM bytes each, and report as used what FAKE_CUDA_SHARED says
 * the fake driver's processes hold.
 */

#include <sys/mman.h>

#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda-types.h"

#define FAKE_NVML_MAX	8

struct nvmlDevice_st { unsigned int index; };
static struct nvmlDevice_st devs[FAKE_NVML_MAX];

static unsigned int
count(void)
{
	const char	*v = getenv("FAKE_CUDA_UUIDS");
	unsigned int	 n = 1;

	if (v == NULL || *v == '\0')
		return ((v = getenv("FAKE_CUDA_DEVICES")) ? atoi(v) : 1);
	for (; (v = strchr(v, ',')) != NULL; v++)
		n++;
	return (n > FAKE_NVML_MAX ? FAKE_NVML_MAX : n);
}

static uint64_t
shared_used(void)
{
	const char		*v = getenv("FAKE_CUDA_SHARED");
	_Atomic uint64_t	*p;
	uint64_t		 u = 0;
	int			 fd;

	if (v == NULL || (fd = open(v, O_RDONLY|O_CLOEXEC)) == -1)
		return (0);
	p = mmap(NULL, sizeof *p, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return (0);
	u = atomic_load(p);
	munmap((void *)p, sizeof *p);
	return (u);
}

nvmlReturn_t nvmlShutdown(void);

nvmlReturn_t nvmlInit_v2(void) { return (NVML_SUCCESS); }
nvmlReturn_t nvmlShutdown(void) { return (NVML_SUCCESS); }

nvmlReturn_t
nvmlDeviceGetCount_v2(unsigned int *n)
{
	*n = count();
	return (NVML_SUCCESS);
}

nvmlReturn_t
nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d)
{
	if (i >= count() || i >= FAKE_NVML_MAX)
		return (NVML_ERROR_INVALID_ARGUMENT);
	devs[i].index = i;
	*d = &devs[i];
	return (NVML_SUCCESS);
}

nvmlReturn_t
nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned int len)
{
	const char	*v = getenv("FAKE_CUDA_UUIDS"), *end;
	unsigned int	 i;

	if (v == NULL || *v == '\0') {
		snprintf(buf, len, "GPU-fake-%u", d->index);
		return (NVML_SUCCESS);
	}
	for (i = 0; i < d->index && v != NULL; i++)
		if ((v = strchr(v, ',')) != NULL)
			v++;
	if (v == NULL)
		return (NVML_ERROR_NOT_FOUND);
	end = strchr(v, ',');
	snprintf(buf, len, "%.*s", (int)(end ? end - v : (long)strlen(v)), v);
	return (NVML_SUCCESS);
}

nvmlReturn_t
nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
	const char	*v = getenv("FAKE_CUDA_MEM");

	m->total = v ? strtoull(v, NULL, 0) : 16ULL << 30;
	m->used = shared_used();
	m->free = m->total > m->used ? m->total - m->used : 0;
	return (NVML_SUCCESS);
}

nvmlReturn_t
nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m)
{
	nvmlMemory_t	 v1;

	nvmlDeviceGetMemoryInfo(d, &v1);
	m->total = v1.total;
	m->reserved = 0;
	m->used = v1.used;
	m->free = v1.free;
	return (NVML_SUCCESS);
}
