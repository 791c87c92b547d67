/*
 * cuda.c: the driver's allocators, counted against the job's cap, and the
 * totals it reports, shown as the cap and the job's own use.  Each counted
 * allocation reserves first, calls the real allocator, and rolls back if
 * that fails; each free calls the real free first and returns the bytes
 * after, so the job's count never drops below what the card holds.
 */

#include <stdlib.h>

#include "shim.h"

/* The current device ordinal; only asked when the job has several cards. */
int
cuda_dev(void)
{
	__typeof__(&cuCtxGetDevice)	 fn;
	CUdevice			 d;

	if (!acct_multi() || (fn = REAL(cuCtxGetDevice)) == NULL ||
	    fn(&d) != CUDA_SUCCESS)
		return (0);
	return (d);
}

/*
 * Reserves n bytes on dev.  At the cap, memory freed to stream-ordered
 * pools may not have been credited yet: the pools are looked at and the
 * reservation tried once more.
 */
int
cuda_reserve(int dev, uint64_t n)
{
	if (acct_reserve(dev, n) == 0)
		return (0);
	pool_refresh(NULL);
	return (acct_reserve(dev, n));
}

/* Undoes a real allocation the shim cannot keep track of. */
static void
undo(enum track_kind kind, uint64_t key)
{
	__typeof__(&cuMemFree_v2)		 mf = REAL(cuMemFree_v2);
	__typeof__(&cuMemRelease)		 mr = REAL(cuMemRelease);
	__typeof__(&cuArrayDestroy)		 ad = REAL(cuArrayDestroy);
	__typeof__(&cuMipmappedArrayDestroy)	 md =
	    REAL(cuMipmappedArrayDestroy);

	if (kind == TRACK_PTR && mf != NULL)
		mf((CUdeviceptr)key);
	else if (kind == TRACK_VMM && mr != NULL)
		mr((CUmemGenericAllocationHandle)key);
	else if (kind == TRACK_ARRAY && ad != NULL)
		ad((CUarray)(uintptr_t)key);
	else if (kind == TRACK_MIPMAP && md != NULL)
		md((CUmipmappedArray)(uintptr_t)key);
}

/*
 * After the real allocator: a failure rolls the reservation back; a
 * success is recorded, or undone if it cannot be.
 */
static CUresult
settle(CUresult rc, enum track_kind kind, uint64_t key, uint64_t size,
    int dev)
{
	if (rc != CUDA_SUCCESS) {
		acct_release(dev, size);
		return (rc);
	}
	if (track_add(kind, key, size, dev) != 0) {
		undo(kind, key);
		acct_release(dev, size);
		return (CUDA_ERROR_OUT_OF_MEMORY);
	}
	return (rc);
}

/* Returns what a successful free released. */
static void
untrack(enum track_kind kind, uint64_t key)
{
	uint64_t	 size;
	int		 dev;

	if (track_del(kind, key, &size, &dev) == 0)
		acct_release(dev, size);
}

SHIM_EXPORT CUresult
cuMemAlloc_v2(CUdeviceptr *dptr, size_t size)
{
	__typeof__(&cuMemAlloc_v2)	 fn = REAL(cuMemAlloc_v2);
	int				 dev;
	CUresult			 rc;

	if (fn == NULL)
		return (CUDA_ERROR_NOT_INITIALIZED);
	if (!acct_active() || dptr == NULL)
		return (fn(dptr, size));
	if (cuda_reserve((dev = cuda_dev()), size) != 0)
		return (CUDA_ERROR_OUT_OF_MEMORY);
	rc = fn(dptr, size);
	return (settle(rc, TRACK_PTR, rc == CUDA_SUCCESS ? *dptr : 0, size,
	    dev));
}

SHIM_EXPORT CUresult
cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned int flags)
{
	__typeof__(&cuMemAllocManaged)	 fn = REAL(cuMemAllocManaged);
	int				 dev;
	CUresult			 rc;

	if (fn == NULL)
		return (CUDA_ERROR_NOT_INITIALIZED);
	if (!acct_active() || dptr == NULL)
		return (fn(dptr, size, flags));
	if (cuda_reserve((dev = cuda_dev()), size) != 0)
		return (CUDA_ERROR_OUT_OF_MEMORY);
	rc = fn(dptr, size, flags);
	return (settle(rc, TRACK_PTR, rc == CUDA_SUCCESS ? *dptr : 0, size,
	    dev));
}

/*
 * The pitch is the driver's choice: the reservation assumes rows padded
 * to 512 bytes (more than any card aligns to) and is trued up after.
 */
SHIM_EXPORT CUresult
cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width,
    size_t height, unsigned int elem)
{
	__typeof__(&cuMemAllocPitch_v2)	 fn = REAL(cuMemAllocPitch_v2);
	uint64_t			 guess, real;
	int				 dev;
	CUresult			 rc;

	if (fn == NULL)
		return (CUDA_ERROR_NOT_INITIALIZED);
	if (!acct_active() || dptr == NULL || pitch == NULL)
		return (fn(dptr, pitch, width, height, elem));
	if (__builtin_mul_overflow((width + 511) & ~(size_t)511, height,
	    &guess))
		return (CUDA_ERROR_OUT_OF_MEMORY);
	if (cuda_reserve((dev = cuda_dev()), guess) != 0)
		return (CUDA_ERROR_OUT_OF_MEMORY);
	if ((rc = fn(dptr, pitch, width, height, elem)) != CUDA_SUCCESS)
		return (settle(rc, TRACK_PTR, 0, guess, dev));
	real = (uint64_t)*pitch * height;
	if (real > guess && cuda_reserve(dev, real - guess) != 0) {
		undo(TRACK_PTR, *dptr);
		acct_release(dev, guess);
		return (CUDA_ERROR_OUT_OF_MEMORY);
	}
	if (real < guess)
		acct_release(dev, guess - real);
	return (settle(rc, TRACK_PTR, *dptr, real, dev));
}

SHIM_EXPORT CUresult
cuMemFree_v2(CUdeviceptr dptr)
{
	__typeof__(&cuMemFree_v2)	 fn = REAL(cuMemFree_v2);
	uint64_t			 size;
	int				 dev;
	CUresult			 rc;

	if (fn == NULL)
		return (CUDA_ERROR_NOT_INITIALIZED);
	if ((rc = fn(dptr)) != CUDA_SUCCESS || !acct_active())
		return (rc);
	if (track_del(TRACK_PTR, dptr, &size, &dev) == 0)
		acct_release(dev, size);
	else
		pool_refresh(NULL);	/* a pool's memory, freed at once */
	return (rc);
}

/* Only device memory counts; pinned host memory is the host's. */
SHIM_EXPORT CUresult
cuMemCreate(CUmemGenericAllocationHandle *h, size_t size,
    const CUmemAllocationProp *prop, unsigned long long flags)
{
	__typeof__(&cuMemCreate)	 fn = REAL(cuMemCreate);
	int				 dev;
	CUresult			 rc;

	if (fn == NULL)
		return (CUDA_ERROR_NOT_INITIALIZED);
	if (!acct_active() || h == NULL || prop == NULL ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return (fn(h, size, prop, flags));
	dev = acct_multi() ? prop->location.id : 0;
	if (cuda_reserve(dev, size) != 0)
		return (CUDA_ERROR_OUT_OF_MEMORY);
	rc = fn(h, size, prop, flags);
	return (settle(rc, TRACK_VMM, rc == CUDA_SUCCESS ? *h : 0, size,
	    dev));
}

SHIM_EXPORT CUresult
cuMemRelease(CUmemGenericAllocationHandle h)
{
	__typeof__(&cuMemRelease)	 fn = REAL(cuMemRelease);
	CUresult			 rc;

	if (fn == NULL)
		return (CUDA_ERROR_NOT_INITIALIZED);
	if ((rc = fn(h)) == CUDA_SUCCESS && acct_active())
		untrack(TRACK_VMM, h);
	return (rc);
}

/*
 * An array's footprint as the shim can know it: width x height x depth x
 * element size over every mip level.  Formats it does not know are taken
 * as 16 bytes an element, more than any has.
 */
static uint64_t
array_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned int levels)
{
	uint64_t	 elem, total = 0, n;
	size_t		 w, h, z;
	unsigned int	 l;

	switch (d->Format) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT8:
		elem = 1;
		break;
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF:
		elem = 2;
		break;
	case CU_AD_FORMAT_UNSIGNED_INT32:
	case CU_AD_FORMAT_SIGNED_INT32:
	case CU_AD_FORMAT_FLOAT:
		elem = 4;
		break;
	default:
		elem = 16;
		break;
	}
	elem *= d->NumChannels ? d->NumChannels : 1;
	for (l = 0; l < (levels ? levels : 1) && l < 64; l++) {
		w = d->Width >> l ? d->Width >> l : 1;
		h = d->Height >> l ? d->Height >> l : 1;
		z = d->Depth >> l ? d->Depth >> l : 1;
		if (__builtin_mul_overflow((uint64_t)w, h, &n) ||
		    __builtin_mul_overflow(n, z, &n) ||
		    __builtin_mul_overflow(n, elem, &n) ||
		    __builtin_add_overflow(total, n, &total))
			return (UINT64_MAX);
	}
	return (total);
}

SHIM_EXPORT CUresult
cuArrayCreate_v2(CUarray *a, const CUDA_ARRAY_DESCRIPTOR *d)
{
	__typeof__(&cuArrayCreate_v2)	 fn = REAL(cuArrayCreate_v2);
	CUDA_ARRAY3D_DESCRIPTOR		 d3 = { 0 };
	uint64_t			 size;
	int				 dev;
	CUresult			 rc;

	if (fn == NULL)
		return (CUDA_ERROR_NOT_INITIALIZED);
	if (!acct_active() || a == NULL || d == NULL)
		return (fn(a, d));
	d3.Width = d->Width;
	d3.Height = d->Height;
	d3.Format = d->Format;
	d3.NumChannels = d->NumChannels;
	size = array_bytes(&d3, 1);
	if (cuda_reserve((dev = cuda_dev()), size) != 0)
		return (CUDA_ERROR_OUT_OF_MEMORY);
	rc = fn(a, d);
	return (settle(rc, TRACK_ARRAY, rc == CUDA_SUCCESS ? (uintptr_t)*a : 0,
	    size, dev));
}

SHIM_EXPORT CUresult
cuArray3DCreate_v2(CUarray *a, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
	__typeof__(&cuArray3DCreate_v2)	 fn = REAL(cuArray3DCreate_v2);
	uint64_t			 size;
	int				 dev;
	CUresult			 rc;

	if (fn == NULL)
		return (CUDA_ERROR_NOT_INITIALIZED);
	if (!acct_active() || a == NULL || d == NULL)
		return (fn(a, d));
	size = array_bytes(d, 1);
	if (cuda_reserve((dev = cuda_dev()), size) != 0)
		return (CUDA_ERROR_OUT_OF_MEMORY);
	rc = fn(a, d);
	return (settle(rc, TRACK_ARRAY, rc == CUDA_SUCCESS ? (uintptr_t)*a : 0,
	    size, dev));
}

SHIM_EXPORT CUresult
cuMipmappedArrayCreate(CUmipmappedArray *a, const CUDA_ARRAY3D_DESCRIPTOR *d,
    unsigned int levels)
{
	__typeof__(&cuMipmappedArrayCreate) fn = REAL(cuMipmappedArrayCreate);
	uint64_t			 size;
	int				 dev;
	CUresult			 rc;

	if (fn == NULL)
		return (CUDA_ERROR_NOT_INITIALIZED);
	if (!acct_active() || a == NULL || d == NULL)
		return (fn(a, d, levels));
	size = array_bytes(d, levels);
	if (cuda_reserve((dev = cuda_dev()), size) != 0)
		return (CUDA_ERROR_OUT_OF_MEMORY);
	rc = fn(a, d, levels);
	return (settle(rc, TRACK_MIPMAP, rc == CUDA_SUCCESS ? (uintptr_t)*a : 0,
	    size, dev));
}

SHIM_EXPORT CUresult
cuArrayDestroy(CUarray a)
{
	__typeof__(&cuArrayDestroy)	 fn = REAL(cuArrayDestroy);
	CUresult			 rc;

	if (fn == NULL)
		return (CUDA_ERROR_NOT_INITIALIZED);
	if ((rc = fn(a)) == CUDA_SUCCESS && acct_active())
		untrack(TRACK_ARRAY, (uintptr_t)a);
	return (rc);
}

SHIM_EXPORT CUresult
cuMipmappedArrayDestroy(CUmipmappedArray a)
{
	__typeof__(&cuMipmappedArrayDestroy) fn = REAL(cuMipmappedArrayDestroy);
	CUresult			 rc;

	if (fn == NULL)
		return (CUDA_ERROR_NOT_INITIALIZED);
	if ((rc = fn(a)) == CUDA_SUCCESS && acct_active())
		untrack(TRACK_MIPMAP, (uintptr_t)a);
	return (rc);
}

/* Free and total as the job sees them: its cap, less what it holds. */
SHIM_EXPORT CUresult
cuMemGetInfo_v2(size_t *freep, size_t *totalp)
{
	__typeof__(&cuMemGetInfo_v2)	 fn = REAL(cuMemGetInfo_v2);
	uint64_t			 total, avail;
	CUresult			 rc;

	if (fn == NULL)
		return (CUDA_ERROR_NOT_INITIALIZED);
	if ((rc = fn(freep, totalp)) != CUDA_SUCCESS || !acct_active() ||
	    freep == NULL || totalp == NULL)
		return (rc);
	pool_refresh(NULL);
	total = *totalp;
	if (acct_report(cuda_dev(), &total, &avail)) {
		if (total < *totalp)
			*totalp = total;
		if (avail < *freep)
			*freep = avail;
	}
	return (rc);
}

SHIM_EXPORT CUresult
cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	__typeof__(&cuDeviceTotalMem_v2) fn = REAL(cuDeviceTotalMem_v2);
	uint64_t			 total, avail;
	CUresult			 rc;

	if (fn == NULL)
		return (CUDA_ERROR_NOT_INITIALIZED);
	if ((rc = fn(bytes, dev)) != CUDA_SUCCESS || !acct_active() ||
	    bytes == NULL)
		return (rc);
	total = *bytes;
	if (acct_report(dev, &total, &avail) && total < *bytes)
		*bytes = total;
	return (rc);
}
