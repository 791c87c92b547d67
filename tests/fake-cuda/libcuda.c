/*
 * libcuda.c: a fake libcuda.so.1 for tests, backed by host memory, so the
 * shim is tested through the real dlopen/dlsym/cuGetProcAddress path on a
 * machine with no GPU.  Built with -Bsymbolic-functions like the real
 * driver: its own calls and the addresses cuGetProcAddress hands out bind
 * inside it, never to an interposer.
 *
 * Environment: FAKE_CUDA_MEM (bytes per device, default 16 GiB),
 * FAKE_CUDA_DEVICES (default 1, or as many as CUDA_VISIBLE_DEVICES names),
 * FAKE_CUDA_KERNEL_US (what a kernel or graph takes, default 1000),
 * FAKE_CUDA_SHARED (a file where every process adds what it holds, with
 * the peak: the "card" the tests check the cap against).
 *
 * The GPU is one queue per process: a launch runs after the previous one
 * ends, events take the time the queue reaches them.  Stream-ordered pools
 * grow in 2 MiB chunks, keep what is freed, and shrink on trim or, past
 * their release threshold, at synchronization.
 */

#include <sys/mman.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda-types.h"

#define FAKE_MAX_DEV	8
#define FAKE_CHUNK	(2ULL << 20)
#define FAKE_QUEUE	64		/* launches in flight before blocking */

struct CUctx_st { int dev; };
struct CUevent_st { int64_t t; };
struct CUmemPoolHandle_st {
	int		 dev;
	uint64_t	 reserved, used, threshold;
};
struct fake_alloc {
	uint64_t		 key;
	uint64_t		 size;
	void			*mem;
	struct CUmemPoolHandle_st *pool;
	int			 dev;
	struct fake_alloc	*next;
};
struct fake_shared {
	_Atomic uint64_t	 used;
	_Atomic uint64_t	 peak;
};

static pthread_mutex_t	 lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t	 once = PTHREAD_ONCE_INIT;
static int		 ndev;
static uint64_t		 dev_mem, dev_used[FAKE_MAX_DEV];
static int64_t		 kernel_ns, busy_until;
static uint64_t		 launches;
static struct CUctx_st	 primary[FAKE_MAX_DEV];
static struct CUmemPoolHandle_st default_pool[FAKE_MAX_DEV];
static struct fake_alloc *allocs;
static struct fake_shared *shared;
static __thread CUcontext current;

static int64_t
now_ns(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec);
}

static void
sleep_until(int64_t t)
{
	int64_t		 d = t - now_ns();
	struct timespec	 ts;

	if (d <= 0)
		return;
	ts.tv_sec = d / 1000000000LL;
	ts.tv_nsec = d % 1000000000LL;
	nanosleep(&ts, NULL);
}

static void
fake_init(void)
{
	const char	*v;
	int		 fd, i;

	dev_mem = (v = getenv("FAKE_CUDA_MEM")) ? strtoull(v, NULL, 0) :
	    16ULL << 30;
	ndev = (v = getenv("FAKE_CUDA_DEVICES")) ? atoi(v) : 1;
	if ((v = getenv("CUDA_VISIBLE_DEVICES")) != NULL && *v != '\0')
		for (ndev = 1; (v = strchr(v, ',')) != NULL; v++)
			ndev++;
	if (ndev < 1 || ndev > FAKE_MAX_DEV)
		ndev = 1;
	kernel_ns = ((v = getenv("FAKE_CUDA_KERNEL_US")) ? atoll(v) : 1000) *
	    1000;
	for (i = 0; i < FAKE_MAX_DEV; i++) {
		primary[i].dev = i;
		default_pool[i].dev = i;
	}
	if ((v = getenv("FAKE_CUDA_SHARED")) != NULL &&
	    (fd = open(v, O_RDWR|O_CLOEXEC)) != -1) {
		shared = mmap(NULL, sizeof *shared, PROT_READ|PROT_WRITE,
		    MAP_SHARED, fd, 0);
		if (shared == MAP_FAILED)
			shared = NULL;
		close(fd);
	}
}

static int
cur_dev(void)
{
	return (current != NULL ? current->dev : 0);
}

/* Takes n bytes of the device, or fails like a full card.  Locked. */
static int
dev_take(int dev, uint64_t n)
{
	uint64_t	 u, p;

	if (n > dev_mem - dev_used[dev])
		return (-1);
	dev_used[dev] += n;
	if (shared != NULL) {
		u = atomic_fetch_add(&shared->used, n) + n;
		p = atomic_load(&shared->peak);
		while (p < u &&
		    !atomic_compare_exchange_weak(&shared->peak, &p, u))
			;
	}
	return (0);
}

static void
dev_give(int dev, uint64_t n)
{
	dev_used[dev] -= n;
	if (shared != NULL)
		atomic_fetch_sub(&shared->used, n);
}

/* Makes a host-backed allocation of size on dev; locked. */
static struct fake_alloc *
fake_alloc(int dev, uint64_t size, uint64_t charge,
    struct CUmemPoolHandle_st *pool)
{
	struct fake_alloc	*a;
	void			*mem;

	if (dev_take(dev, charge) != 0)
		return (NULL);
	mem = mmap(NULL, size ? size : 1, PROT_READ|PROT_WRITE,
	    MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED || (a = calloc(1, sizeof *a)) == NULL) {
		if (mem != MAP_FAILED)
			munmap(mem, size ? size : 1);
		dev_give(dev, charge);
		return (NULL);
	}
	a->mem = mem;
	a->key = (uintptr_t)mem;
	a->size = size;
	a->pool = pool;
	a->dev = dev;
	a->next = allocs;
	allocs = a;
	return (a);
}

/* Unlinks the allocation of key; the caller gives back and frees it. */
static struct fake_alloc *
fake_find(uint64_t key)
{
	struct fake_alloc	**pp, *a;

	for (pp = &allocs; (a = *pp) != NULL; pp = &a->next) {
		if (a->key == key) {
			*pp = a->next;
			munmap(a->mem, a->size ? a->size : 1);
			return (a);
		}
	}
	return (NULL);
}

/* Allocates plain device memory; the handle is the host address. */
static CUresult
plain_alloc(unsigned long long *key, uint64_t size)
{
	struct fake_alloc	*a;

	pthread_once(&once, fake_init);
	if (key == NULL)
		return (CUDA_ERROR_INVALID_VALUE);
	pthread_mutex_lock(&lock);
	a = fake_alloc(cur_dev(), size, size, NULL);
	pthread_mutex_unlock(&lock);
	if (a == NULL)
		return (CUDA_ERROR_OUT_OF_MEMORY);
	*key = a->key;
	return (CUDA_SUCCESS);
}

static CUresult
plain_free(uint64_t key)
{
	struct fake_alloc	*a;

	pthread_mutex_lock(&lock);
	if ((a = fake_find(key)) != NULL && a->pool == NULL)
		dev_give(a->dev, a->size);
	else if (a != NULL)
		a->pool->used -= a->size;
	pthread_mutex_unlock(&lock);
	free(a);
	return (a != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
}

CUresult cuInit(unsigned int f) { pthread_once(&once, fake_init); return (0); }
CUresult cuDriverGetVersion(int *v) { *v = 12040; return (0); }

CUresult
cuDeviceGetCount(int *n)
{
	pthread_once(&once, fake_init);
	*n = ndev;
	return (CUDA_SUCCESS);
}

CUresult
cuDeviceGet(CUdevice *d, int ordinal)
{
	pthread_once(&once, fake_init);
	if (ordinal < 0 || ordinal >= ndev)
		return (CUDA_ERROR_INVALID_DEVICE);
	*d = ordinal;
	return (CUDA_SUCCESS);
}

CUresult
cuDeviceTotalMem_v2(size_t *bytes, CUdevice d)
{
	pthread_once(&once, fake_init);
	*bytes = dev_mem;
	return (d >= 0 && d < ndev ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE);
}

CUresult
cuCtxCreate_v2(CUcontext *c, unsigned int flags, CUdevice d)
{
	pthread_once(&once, fake_init);
	if (d < 0 || d >= ndev)
		return (CUDA_ERROR_INVALID_DEVICE);
	*c = current = &primary[d];
	return (CUDA_SUCCESS);
}

CUresult cuCtxDestroy_v2(CUcontext c) { return (CUDA_SUCCESS); }
CUresult cuCtxGetCurrent(CUcontext *c) { *c = current; return (0); }
CUresult cuCtxSetCurrent(CUcontext c) { current = c; return (0); }

CUresult
cuCtxGetDevice(CUdevice *d)
{
	if (current == NULL)
		return (CUDA_ERROR_INVALID_CONTEXT);
	*d = current->dev;
	return (CUDA_SUCCESS);
}

CUresult
cuMemGetInfo_v2(size_t *freep, size_t *total)
{
	pthread_once(&once, fake_init);
	pthread_mutex_lock(&lock);
	*freep = dev_mem - dev_used[cur_dev()];
	*total = dev_mem;
	pthread_mutex_unlock(&lock);
	return (CUDA_SUCCESS);
}

CUresult
cuMemAlloc_v2(CUdeviceptr *p, size_t size)
{
	return (size == 0 ? CUDA_ERROR_INVALID_VALUE : plain_alloc(p, size));
}

CUresult
cuMemAllocManaged(CUdeviceptr *p, size_t size, unsigned int flags)
{
	return (plain_alloc(p, size));
}

/* Rows are padded to 256 bytes. */
CUresult
cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t w, size_t h,
    unsigned int elem)
{
	*pitch = (w + 255) & ~(size_t)255;
	return (plain_alloc(p, (uint64_t)*pitch * h));
}

CUresult cuMemFree_v2(CUdeviceptr p) { return (plain_free(p)); }

CUresult
cuMemCreate(CUmemGenericAllocationHandle *h, size_t size,
    const CUmemAllocationProp *prop, unsigned long long flags)
{
	return (plain_alloc(h, size));
}

CUresult
cuMemRelease(CUmemGenericAllocationHandle h)
{
	return (plain_free(h));
}

CUresult
cuArrayCreate_v2(CUarray *a, const CUDA_ARRAY_DESCRIPTOR *d)
{
	unsigned long long key = 0;
	CUresult	 rc;

	rc = plain_alloc(&key, (uint64_t)d->Width *
	    (d->Height ? d->Height : 1) *
	    (d->NumChannels ? d->NumChannels : 1) * 4);
	*a = (CUarray)(uintptr_t)key;
	return (rc);
}

CUresult
cuArray3DCreate_v2(CUarray *a, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
	unsigned long long key = 0;
	CUresult	 rc;

	rc = plain_alloc(&key, (uint64_t)d->Width *
	    (d->Height ? d->Height : 1) * (d->Depth ? d->Depth : 1) *
	    (d->NumChannels ? d->NumChannels : 1) * 4);
	*a = (CUarray)(uintptr_t)key;
	return (rc);
}

CUresult
cuMipmappedArrayCreate(CUmipmappedArray *a, const CUDA_ARRAY3D_DESCRIPTOR *d,
    unsigned int levels)
{
	unsigned long long key = 0;
	CUresult	 rc;

	rc = plain_alloc(&key, (uint64_t)d->Width *
	    (d->Height ? d->Height : 1) *
	    (d->NumChannels ? d->NumChannels : 1) * 8);
	*a = (CUmipmappedArray)(uintptr_t)key;
	return (rc);
}

CUresult cuArrayDestroy(CUarray a) { return (plain_free((uintptr_t)a)); }

CUresult
cuMipmappedArrayDestroy(CUmipmappedArray a)
{
	return (plain_free((uintptr_t)a));
}

/* Pools: locked helpers. */
static void
pool_trim(struct CUmemPoolHandle_st *p, uint64_t keep)
{
	uint64_t	 floor = (p->used + FAKE_CHUNK - 1) & ~(FAKE_CHUNK - 1);

	if (keep < floor)
		keep = floor;
	if (p->reserved > keep) {
		dev_give(p->dev, p->reserved - keep);
		p->reserved = keep;
	}
}

static CUresult
pool_take(CUdeviceptr *ptr, size_t size, struct CUmemPoolHandle_st *p)
{
	struct fake_alloc	*a;
	uint64_t		 want, grow = 0;

	pthread_once(&once, fake_init);
	pthread_mutex_lock(&lock);
	want = (p->used + size + FAKE_CHUNK - 1) & ~(FAKE_CHUNK - 1);
	if (want > p->reserved)
		grow = want - p->reserved;
	if ((a = fake_alloc(p->dev, size, grow, p)) == NULL) {
		pthread_mutex_unlock(&lock);
		return (CUDA_ERROR_OUT_OF_MEMORY);
	}
	p->reserved += grow;
	p->used += size;
	*ptr = a->key;
	pthread_mutex_unlock(&lock);
	return (CUDA_SUCCESS);
}

CUresult
cuDeviceGetMemPool(CUmemoryPool *p, CUdevice d)
{
	pthread_once(&once, fake_init);
	if (d < 0 || d >= ndev)
		return (CUDA_ERROR_INVALID_DEVICE);
	*p = &default_pool[d];
	return (CUDA_SUCCESS);
}

CUresult
cuMemPoolGetAttribute(CUmemoryPool p, int attr, void *v)
{
	pthread_mutex_lock(&lock);
	if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
		*(cuuint64_t *)v = p->reserved;
	else if (attr == CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
		*(cuuint64_t *)v = p->used;
	else if (attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
		*(cuuint64_t *)v = p->threshold;
	pthread_mutex_unlock(&lock);
	return (CUDA_SUCCESS);
}

CUresult
cuMemPoolSetAttribute(CUmemoryPool p, int attr, void *v)
{
	if (attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
		p->threshold = *(cuuint64_t *)v;
	return (CUDA_SUCCESS);
}

CUresult
cuMemPoolTrimTo(CUmemoryPool p, size_t keep)
{
	pthread_mutex_lock(&lock);
	pool_trim(p, keep);
	pthread_mutex_unlock(&lock);
	return (CUDA_SUCCESS);
}

CUresult
cuMemPoolDestroy(CUmemoryPool p)
{
	pthread_mutex_lock(&lock);
	dev_give(p->dev, p->reserved);
	p->reserved = p->used = 0;
	pthread_mutex_unlock(&lock);
	return (CUDA_SUCCESS);
}

static void
sync_all(void)
{
	int	 i;
	int64_t	 until;

	pthread_mutex_lock(&lock);
	until = busy_until;
	pthread_mutex_unlock(&lock);
	sleep_until(until);
	pthread_mutex_lock(&lock);
	for (i = 0; i < ndev; i++) {
		if (default_pool[i].reserved > default_pool[i].threshold)
			pool_trim(&default_pool[i], default_pool[i].threshold);
	}
	pthread_mutex_unlock(&lock);
}

CUresult cuCtxSynchronize(void) { sync_all(); return (0); }

/* The stream-ordered calls, each with its per-thread-stream twin. */
static CUresult
alloc_async(CUdeviceptr *p, size_t size, CUstream s)
{
	pthread_once(&once, fake_init);
	return (pool_take(p, size, &default_pool[cur_dev()]));
}

static CUresult
alloc_from_pool(CUdeviceptr *p, size_t size, CUmemoryPool pool, CUstream s)
{
	return (pool_take(p, size, pool));
}

static CUresult
free_async(CUdeviceptr p, CUstream s)
{
	return (plain_free(p));
}

/* A kernel: it runs when the queue reaches it; a full queue blocks. */
static CUresult
run_kernel(void)
{
	int64_t	 now;

	pthread_once(&once, fake_init);
	pthread_mutex_lock(&lock);
	while (busy_until - (now = now_ns()) > FAKE_QUEUE * kernel_ns) {
		pthread_mutex_unlock(&lock);
		sleep_until(busy_until - FAKE_QUEUE * kernel_ns / 2);
		pthread_mutex_lock(&lock);
	}
	busy_until = (busy_until > now ? busy_until : now) + kernel_ns;
	launches++;
	pthread_mutex_unlock(&lock);
	return (CUDA_SUCCESS);
}

static CUresult
launch(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
    unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
    CUstream s, void **params, void **extra)
{
	return (f == NULL ? CUDA_ERROR_INVALID_HANDLE : run_kernel());
}

static CUresult
launch_ex(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{
	return (f == NULL || c == NULL ? CUDA_ERROR_INVALID_HANDLE :
	    run_kernel());
}

static CUresult
launch_coop(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
    unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
    CUstream s, void **params)
{
	return (f == NULL ? CUDA_ERROR_INVALID_HANDLE : run_kernel());
}

static CUresult
graph_launch(CUgraphExec g, CUstream s)
{
	return (g == NULL ? CUDA_ERROR_INVALID_HANDLE : run_kernel());
}

static CUresult
event_record(CUevent e, CUstream s)
{
	int64_t	 now = now_ns();

	pthread_mutex_lock(&lock);
	e->t = busy_until > now ? busy_until : now;
	pthread_mutex_unlock(&lock);
	return (CUDA_SUCCESS);
}

static CUresult
stream_sync(CUstream s)
{
	sync_all();
	return (CUDA_SUCCESS);
}

/* Per-thread-stream variants count separately, so tests can tell. */
static _Atomic uint64_t	 ptsz_calls;

#define TWIN(name, impl, params, args)					\
	CUresult name params { return (impl args); }			\
	CUresult name##_ptsz params {					\
		atomic_fetch_add(&ptsz_calls, 1);			\
		return (impl args);					\
	}
TWIN(cuMemAllocAsync, alloc_async, (CUdeviceptr *p, size_t n, CUstream s),
    (p, n, s))
TWIN(cuMemAllocFromPoolAsync, alloc_from_pool,
    (CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s),
    (p, n, pool, s))
TWIN(cuMemFreeAsync, free_async, (CUdeviceptr p, CUstream s), (p, s))
TWIN(cuLaunchKernel, launch, (CUfunction f, unsigned int gx,
    unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by,
    unsigned int bz, unsigned int shmem, CUstream s, void **params,
    void **extra), (f, gx, gy, gz, bx, by, bz, shmem, s, params, extra))
TWIN(cuLaunchKernelEx, launch_ex, (const CUlaunchConfig *c, CUfunction f,
    void **params, void **extra), (c, f, params, extra))
TWIN(cuLaunchCooperativeKernel, launch_coop, (CUfunction f, unsigned int gx,
    unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by,
    unsigned int bz, unsigned int shmem, CUstream s, void **params),
    (f, gx, gy, gz, bx, by, bz, shmem, s, params))
TWIN(cuGraphLaunch, graph_launch, (CUgraphExec g, CUstream s), (g, s))
TWIN(cuEventRecord, event_record, (CUevent e, CUstream s), (e, s))
TWIN(cuStreamSynchronize, stream_sync, (CUstream s), (s))

CUresult
cuEventCreate(CUevent *e, unsigned int flags)
{
	return ((*e = calloc(1, sizeof **e)) != NULL ? CUDA_SUCCESS :
	    CUDA_ERROR_OUT_OF_MEMORY);
}

CUresult cuEventDestroy_v2(CUevent e) { free(e); return (CUDA_SUCCESS); }

CUresult
cuEventQuery(CUevent e)
{
	return (now_ns() >= e->t ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY);
}

CUresult
cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
	*ms = (float)(b->t - a->t) / 1e6f;
	return (CUDA_SUCCESS);
}

/* What only tests ask: kernels run, and per-thread-stream calls made. */
uint64_t fakecuLaunches(void);
uint64_t fakecuPtszCalls(void);
uint64_t fakecuLaunches(void) { return (launches); }
uint64_t fakecuPtszCalls(void) { return (atomic_load(&ptsz_calls)); }

/*
 * cuGetProcAddress: the variant of symbol for (version, flags), by the
 * driver's rules: the newest variant not newer than version, the _ptsz one
 * when flags ask for the per-thread default stream.
 */
static const struct {
	const char	*base;
	int		 version;
	int		 ptsz;
	void		*fn;
} procs[] = {
#define P(base, version, fn) { #base, version, 0, (void *)fn }
#define PT(base, version, fn) { #base, version, 1, (void *)fn##_ptsz }, \
	{ #base, version, 0, (void *)fn }
	P(cuInit, 2000, cuInit),
	P(cuDriverGetVersion, 2020, cuDriverGetVersion),
	P(cuGetProcAddress, 11030, cuGetProcAddress),
	P(cuGetProcAddress, 12000, cuGetProcAddress_v2),
	P(cuDeviceGet, 2000, cuDeviceGet),
	P(cuDeviceGetCount, 2000, cuDeviceGetCount),
	P(cuDeviceTotalMem, 3020, cuDeviceTotalMem_v2),
	P(cuCtxCreate, 3020, cuCtxCreate_v2),
	P(cuCtxGetCurrent, 4000, cuCtxGetCurrent),
	P(cuCtxGetDevice, 2000, cuCtxGetDevice),
	P(cuCtxSynchronize, 2000, cuCtxSynchronize),
	P(cuMemGetInfo, 3020, cuMemGetInfo_v2),
	P(cuMemAlloc, 3020, cuMemAlloc_v2),
	P(cuMemAllocPitch, 3020, cuMemAllocPitch_v2),
	P(cuMemAllocManaged, 6000, cuMemAllocManaged),
	P(cuMemFree, 3020, cuMemFree_v2),
	P(cuMemCreate, 10020, cuMemCreate),
	P(cuMemRelease, 10020, cuMemRelease),
	PT(cuMemAllocAsync, 11020, cuMemAllocAsync),
	PT(cuMemAllocFromPoolAsync, 11020, cuMemAllocFromPoolAsync),
	PT(cuMemFreeAsync, 11020, cuMemFreeAsync),
	P(cuMemPoolTrimTo, 11020, cuMemPoolTrimTo),
	P(cuMemPoolDestroy, 11020, cuMemPoolDestroy),
	P(cuDeviceGetMemPool, 11020, cuDeviceGetMemPool),
	P(cuMemPoolGetAttribute, 11020, cuMemPoolGetAttribute),
	P(cuArrayCreate, 3020, cuArrayCreate_v2),
	P(cuArray3DCreate, 3020, cuArray3DCreate_v2),
	P(cuArrayDestroy, 2000, cuArrayDestroy),
	P(cuMipmappedArrayCreate, 5000, cuMipmappedArrayCreate),
	P(cuMipmappedArrayDestroy, 5000, cuMipmappedArrayDestroy),
	PT(cuLaunchKernel, 4000, cuLaunchKernel),
	PT(cuLaunchKernelEx, 11060, cuLaunchKernelEx),
	PT(cuLaunchCooperativeKernel, 9000, cuLaunchCooperativeKernel),
	PT(cuGraphLaunch, 10000, cuGraphLaunch),
	PT(cuEventRecord, 2000, cuEventRecord),
	PT(cuStreamSynchronize, 2000, cuStreamSynchronize),
	P(cuEventCreate, 2000, cuEventCreate),
	P(cuEventQuery, 2000, cuEventQuery),
	P(cuEventElapsedTime, 2000, cuEventElapsedTime),
	P(cuEventDestroy, 4000, cuEventDestroy_v2),
#undef P
#undef PT
};

CUresult
cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
    cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
	int	 ptsz, i, best = -1, found = 0;

	ptsz = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
	for (i = 0; i < (int)(sizeof procs / sizeof *procs); i++) {
		if (strcmp(procs[i].base, symbol) != 0)
			continue;
		found = 1;
		if (procs[i].version > version || (procs[i].ptsz && !ptsz))
			continue;
		if (best == -1 || procs[i].version > procs[best].version ||
		    (procs[i].ptsz && !procs[best].ptsz))
			best = i;
	}
	*pfn = best != -1 ? procs[best].fn : NULL;
	if (status != NULL)
		*status = best != -1 ? CU_GET_PROC_ADDRESS_SUCCESS : found ?
		    CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT :
		    CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	return (best != -1 ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND);
}

CUresult
cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
	return (cuGetProcAddress_v2(symbol, pfn, version, flags, NULL));
}
