/*
 * pool.c: stream-ordered allocations.  cuMemAllocAsync takes from a pool
 * that grows in chunks and keeps what is freed until it is trimmed, so
 * what counts against the cap is the pool's growth (its reserved memory),
 * not each allocation.  Before the call the shim reserves the request
 * rounded up to a chunk; after it, it reads the pool's reserved memory and
 * keeps exactly the growth.  Shrinking (trims, release thresholds at sync
 * points) is credited whenever the pools are looked at again: at the next
 * stream-ordered call, at cuMemGetInfo, and before any allocation is
 * refused at the cap.
 */

#include <pthread.h>

#include "shim.h"

#define POOL_MAX	64
#define POOL_CHUNK	(2ULL << 20)

static pthread_mutex_t	 lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	CUmemoryPool	 pool;
	int		 dev;
	uint64_t	 charged;	/* reserved memory counted so far */
} pools[POOL_MAX];
static int		 npools;

/* The pool's reserved bytes, or UINT64_MAX if it cannot be asked. */
static uint64_t
reserved(CUmemoryPool p)
{
	__typeof__(&cuMemPoolGetAttribute)	 fn =
	    REAL(cuMemPoolGetAttribute);
	cuuint64_t				 v;

	if (fn == NULL ||
	    fn(p, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v) != CUDA_SUCCESS)
		return (UINT64_MAX);
	return (v);
}

/* The pool's entry, made if new; -1 if the table is full. Locked. */
static int
pool_index(CUmemoryPool p, int dev)
{
	int	 i;

	for (i = 0; i < npools; i++) {
		if (pools[i].pool == p)
			return (i);
	}
	if (npools == POOL_MAX)
		return (-1);
	pools[npools].pool = p;
	pools[npools].dev = dev;
	pools[npools].charged = 0;
	return (npools++);
}

/* Credits what pool p (NULL: every pool) gave back since last looked at. */
void
pool_refresh(CUmemoryPool p)
{
	uint64_t	 cur;
	int		 i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < npools; i++) {
		if (p != NULL && pools[i].pool != p)
			continue;
		cur = reserved(pools[i].pool);
		if (cur == UINT64_MAX || cur >= pools[i].charged)
			continue;
		acct_release(pools[i].dev, pools[i].charged - cur);
		pools[i].charged = cur;
	}
	pthread_mutex_unlock(&lock);
}

/*
 * Takes the pool's growth since last looked at in place of the guess
 * reserved before the call.  Returns the growth beyond the guess that is
 * still to be reserved (0 if none).
 */
static uint64_t
pool_charge(CUmemoryPool p, int dev, uint64_t guess)
{
	uint64_t	 cur, was, extra = 0;
	int		 i;

	pthread_mutex_lock(&lock);
	if ((i = pool_index(p, dev)) == -1 ||
	    (cur = reserved(p)) == UINT64_MAX) {
		/* Untracked: the guess stays counted until the process ends. */
		pthread_mutex_unlock(&lock);
		return (0);
	}
	was = pools[i].charged;
	if (cur > was + guess)
		extra = cur - was - guess;
	else
		acct_release(dev, was + guess - cur);
	pools[i].charged = cur - extra;	/* extra is counted once reserved */
	pthread_mutex_unlock(&lock);
	return (extra);
}

static void
pool_add_charged(CUmemoryPool p, uint64_t n)
{
	int	 i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < npools; i++) {
		if (pools[i].pool == p)
			pools[i].charged += n;
	}
	pthread_mutex_unlock(&lock);
}

/* Gives back an allocation the cap cannot hold, and what the pool grew. */
static void
pool_undo(CUdeviceptr ptr, CUmemoryPool p, CUstream s, int ptsz)
{
	__typeof__(&cuMemFreeAsync)	 fa;
	__typeof__(&cuStreamSynchronize) ss;
	__typeof__(&cuMemPoolTrimTo)	 tt = REAL(cuMemPoolTrimTo);

	fa = ptsz ? REAL(cuMemFreeAsync_ptsz) : REAL(cuMemFreeAsync);
	ss = ptsz ? REAL(cuStreamSynchronize_ptsz) : REAL(cuStreamSynchronize);
	if (fa != NULL)
		fa(ptr, s);
	if (ss != NULL)
		ss(s);
	if (tt != NULL)
		tt(p, 0);
}

/*
 * The stream-ordered allocators: pool is NULL for cuMemAllocAsync (the
 * device's current pool), given for cuMemAllocFromPoolAsync.
 */
static CUresult
pool_alloc(enum shim_sym_id id, CUdeviceptr *dptr, size_t size,
    CUmemoryPool pool, CUstream s, int ptsz)
{
	void				*fn = shim_real(id);
	__typeof__(&cuDeviceGetMemPool)	 gp = REAL(cuDeviceGetMemPool);
	uint64_t			 guess, extra;
	int				 dev;
	CUresult			 rc;

	if (fn == NULL)
		return (CUDA_ERROR_NOT_INITIALIZED);
	if (!acct_active() || dptr == NULL)
		goto pass;
	dev = cuda_dev();
	if (pool == NULL && (gp == NULL || gp(&pool, dev) != CUDA_SUCCESS))
		pool = NULL;
	guess = (size + POOL_CHUNK - 1) & ~(POOL_CHUNK - 1);
	if (guess < size || cuda_reserve(dev, guess) != 0)
		return (CUDA_ERROR_OUT_OF_MEMORY);
	if (id == SYM_cuMemAllocAsync || id == SYM_cuMemAllocAsync_ptsz)
		rc = ((__typeof__(&cuMemAllocAsync))fn)(dptr, size, s);
	else
		rc = ((__typeof__(&cuMemAllocFromPoolAsync))fn)(dptr, size,
		    pool, s);
	if (rc != CUDA_SUCCESS || pool == NULL) {
		if (rc != CUDA_SUCCESS)
			acct_release(dev, guess);
		return (rc);
	}
	if ((extra = pool_charge(pool, dev, guess)) == 0)
		return (rc);
	if (cuda_reserve(dev, extra) == 0) {
		pool_add_charged(pool, extra);
		return (rc);
	}
	pool_undo(*dptr, pool, s, ptsz);
	pool_refresh(pool);
	return (CUDA_ERROR_OUT_OF_MEMORY);
pass:
	if (id == SYM_cuMemAllocAsync || id == SYM_cuMemAllocAsync_ptsz)
		return (((__typeof__(&cuMemAllocAsync))fn)(dptr, size, s));
	return (((__typeof__(&cuMemAllocFromPoolAsync))fn)(dptr, size, pool,
	    s));
}

SHIM_EXPORT CUresult
cuMemAllocAsync(CUdeviceptr *dptr, size_t size, CUstream s)
{
	return (pool_alloc(SYM_cuMemAllocAsync, dptr, size, NULL, s, 0));
}

SHIM_EXPORT CUresult
cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t size, CUstream s)
{
	return (pool_alloc(SYM_cuMemAllocAsync_ptsz, dptr, size, NULL, s, 1));
}

SHIM_EXPORT CUresult
cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t size, CUmemoryPool p,
    CUstream s)
{
	if (p == NULL)
		return (CUDA_ERROR_INVALID_VALUE);
	return (pool_alloc(SYM_cuMemAllocFromPoolAsync, dptr, size, p, s, 0));
}

SHIM_EXPORT CUresult
cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t size, CUmemoryPool p,
    CUstream s)
{
	if (p == NULL)
		return (CUDA_ERROR_INVALID_VALUE);
	return (pool_alloc(SYM_cuMemAllocFromPoolAsync_ptsz, dptr, size, p, s,
	    1));
}

static CUresult
pool_free(enum shim_sym_id id, CUdeviceptr ptr, CUstream s)
{
	__typeof__(&cuMemFreeAsync)	 fn = shim_real(id);
	CUresult			 rc;

	if (fn == NULL)
		return (CUDA_ERROR_NOT_INITIALIZED);
	if ((rc = fn(ptr, s)) == CUDA_SUCCESS && acct_active())
		pool_refresh(NULL);
	return (rc);
}

SHIM_EXPORT CUresult
cuMemFreeAsync(CUdeviceptr ptr, CUstream s)
{
	return (pool_free(SYM_cuMemFreeAsync, ptr, s));
}

SHIM_EXPORT CUresult
cuMemFreeAsync_ptsz(CUdeviceptr ptr, CUstream s)
{
	return (pool_free(SYM_cuMemFreeAsync_ptsz, ptr, s));
}

SHIM_EXPORT CUresult
cuMemPoolTrimTo(CUmemoryPool p, size_t keep)
{
	__typeof__(&cuMemPoolTrimTo)	 fn = REAL(cuMemPoolTrimTo);
	CUresult			 rc;

	if (fn == NULL)
		return (CUDA_ERROR_NOT_INITIALIZED);
	if ((rc = fn(p, keep)) == CUDA_SUCCESS && acct_active())
		pool_refresh(p);
	return (rc);
}

/* A destroyed pool gives back all it held. */
SHIM_EXPORT CUresult
cuMemPoolDestroy(CUmemoryPool p)
{
	__typeof__(&cuMemPoolDestroy)	 fn = REAL(cuMemPoolDestroy);
	CUresult			 rc;
	int				 i;

	if (fn == NULL)
		return (CUDA_ERROR_NOT_INITIALIZED);
	if ((rc = fn(p)) != CUDA_SUCCESS || !acct_active())
		return (rc);
	pthread_mutex_lock(&lock);
	for (i = 0; i < npools; i++) {
		if (pools[i].pool != p)
			continue;
		acct_release(pools[i].dev, pools[i].charged);
		pools[i] = pools[--npools];
		break;
	}
	pthread_mutex_unlock(&lock);
	return (rc);
}
