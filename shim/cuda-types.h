/*
 * cuda-types.h: the few CUDA driver and NVML types, constants and
 * prototypes that the shim and the fake driver use, written from the
 * driver API's documented ABI so neither needs the CUDA toolkit to build.
 */

#ifndef GMUX_CUDA_TYPES_H
#define GMUX_CUDA_TYPES_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long cuuint64_t;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUfunc_st *CUfunction;
typedef struct CUarray_st *CUarray;
typedef struct CUmipmappedArray_st *CUmipmappedArray;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef struct CUgraphExec_st *CUgraphExec;

#define CUDA_SUCCESS			0
#define CUDA_ERROR_INVALID_VALUE	1
#define CUDA_ERROR_OUT_OF_MEMORY	2
#define CUDA_ERROR_NOT_INITIALIZED	3
#define CUDA_ERROR_INVALID_DEVICE	101
#define CUDA_ERROR_INVALID_CONTEXT	201
#define CUDA_ERROR_INVALID_HANDLE	400
#define CUDA_ERROR_NOT_FOUND		500
#define CUDA_ERROR_NOT_READY		600
#define CUDA_ERROR_NOT_SUPPORTED	801

/* cuGetProcAddress flags and the _v2 query result. */
#define CU_GET_PROC_ADDRESS_DEFAULT			0
#define CU_GET_PROC_ADDRESS_LEGACY_STREAM		1
#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM	2
typedef enum {
	CU_GET_PROC_ADDRESS_SUCCESS = 0,
	CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
	CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2,
} CUdriverProcAddressQueryResult;

/* Memory pools. */
#define CU_MEMPOOL_ATTR_RELEASE_THRESHOLD	4
#define CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT	5
#define CU_MEMPOOL_ATTR_USED_MEM_CURRENT	7

/* The virtual memory management API. */
#define CU_MEM_ALLOCATION_TYPE_PINNED	1
#define CU_MEM_LOCATION_TYPE_DEVICE	1
typedef struct {
	int		 type;
	int		 id;
} CUmemLocation;
typedef struct {
	int		 type;
	int		 requestedHandleTypes;
	CUmemLocation	 location;
	void		*win32HandleMetaData;
	struct {
		unsigned char	 compressionType;
		unsigned char	 gpuDirectRDMACapable;
		unsigned short	 usage;
		unsigned char	 reserved[4];
	} allocFlags;
} CUmemAllocationProp;

/* Arrays. */
typedef enum {
	CU_AD_FORMAT_UNSIGNED_INT8 = 0x01,
	CU_AD_FORMAT_UNSIGNED_INT16 = 0x02,
	CU_AD_FORMAT_UNSIGNED_INT32 = 0x03,
	CU_AD_FORMAT_SIGNED_INT8 = 0x08,
	CU_AD_FORMAT_SIGNED_INT16 = 0x09,
	CU_AD_FORMAT_SIGNED_INT32 = 0x0a,
	CU_AD_FORMAT_HALF = 0x10,
	CU_AD_FORMAT_FLOAT = 0x20,
} CUarray_format;
typedef struct {
	size_t		 Width;
	size_t		 Height;
	CUarray_format	 Format;
	unsigned int	 NumChannels;
} CUDA_ARRAY_DESCRIPTOR;
typedef struct {
	size_t		 Width;
	size_t		 Height;
	size_t		 Depth;
	CUarray_format	 Format;
	unsigned int	 NumChannels;
	unsigned int	 Flags;
} CUDA_ARRAY3D_DESCRIPTOR;

/* cuLaunchKernelEx's configuration (attributes are passed through). */
typedef struct CUlaunchAttribute_st CUlaunchAttribute;
typedef struct {
	unsigned int	 gridDimX, gridDimY, gridDimZ;
	unsigned int	 blockDimX, blockDimY, blockDimZ;
	unsigned int	 sharedMemBytes;
	CUstream	 hStream;
	CUlaunchAttribute *attrs;
	unsigned int	 numAttrs;
} CUlaunchConfig;

/* NVML. */
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
#define NVML_SUCCESS			0
#define NVML_ERROR_INVALID_ARGUMENT	2
#define NVML_ERROR_NOT_FOUND		6
typedef struct {
	unsigned long long	 total;
	unsigned long long	 free;
	unsigned long long	 used;
} nvmlMemory_t;
typedef struct {
	unsigned int		 version;
	unsigned long long	 total;
	unsigned long long	 reserved;
	unsigned long long	 free;
	unsigned long long	 used;
} nvmlMemory_v2_t;

/*
 * The driver entry points gmux touches.  _ptsz names are the per-thread
 * default stream variants: same signature, other stream semantics.
 */
#define CUDA_STREAM_FUNCS(_) \
	_(cuMemAllocAsync, (CUdeviceptr *, size_t, CUstream)) \
	_(cuMemAllocFromPoolAsync, \
	    (CUdeviceptr *, size_t, CUmemoryPool, CUstream)) \
	_(cuMemFreeAsync, (CUdeviceptr, CUstream)) \
	_(cuLaunchKernel, (CUfunction, unsigned int, unsigned int, \
	    unsigned int, unsigned int, unsigned int, unsigned int, \
	    unsigned int, CUstream, void **, void **)) \
	_(cuLaunchKernelEx, (const CUlaunchConfig *, CUfunction, void **, \
	    void **)) \
	_(cuLaunchCooperativeKernel, (CUfunction, unsigned int, \
	    unsigned int, unsigned int, unsigned int, unsigned int, \
	    unsigned int, unsigned int, CUstream, void **)) \
	_(cuGraphLaunch, (CUgraphExec, CUstream)) \
	_(cuEventRecord, (CUevent, CUstream)) \
	_(cuStreamSynchronize, (CUstream))

#define CUDA_PLAIN_FUNCS(_) \
	_(cuInit, (unsigned int)) \
	_(cuDriverGetVersion, (int *)) \
	_(cuGetProcAddress, (const char *, void **, int, cuuint64_t)) \
	_(cuGetProcAddress_v2, (const char *, void **, int, cuuint64_t, \
	    CUdriverProcAddressQueryResult *)) \
	_(cuDeviceGet, (CUdevice *, int)) \
	_(cuDeviceGetCount, (int *)) \
	_(cuDeviceTotalMem_v2, (size_t *, CUdevice)) \
	_(cuCtxCreate_v2, (CUcontext *, unsigned int, CUdevice)) \
	_(cuCtxDestroy_v2, (CUcontext)) \
	_(cuCtxGetCurrent, (CUcontext *)) \
	_(cuCtxSetCurrent, (CUcontext)) \
	_(cuCtxGetDevice, (CUdevice *)) \
	_(cuCtxSynchronize, (void)) \
	_(cuMemGetInfo_v2, (size_t *, size_t *)) \
	_(cuMemAlloc_v2, (CUdeviceptr *, size_t)) \
	_(cuMemAllocPitch_v2, (CUdeviceptr *, size_t *, size_t, size_t, \
	    unsigned int)) \
	_(cuMemAllocManaged, (CUdeviceptr *, size_t, unsigned int)) \
	_(cuMemFree_v2, (CUdeviceptr)) \
	_(cuMemCreate, (CUmemGenericAllocationHandle *, size_t, \
	    const CUmemAllocationProp *, unsigned long long)) \
	_(cuMemRelease, (CUmemGenericAllocationHandle)) \
	_(cuDeviceGetMemPool, (CUmemoryPool *, CUdevice)) \
	_(cuMemPoolGetAttribute, (CUmemoryPool, int, void *)) \
	_(cuMemPoolSetAttribute, (CUmemoryPool, int, void *)) \
	_(cuMemPoolTrimTo, (CUmemoryPool, size_t)) \
	_(cuMemPoolDestroy, (CUmemoryPool)) \
	_(cuArrayCreate_v2, (CUarray *, const CUDA_ARRAY_DESCRIPTOR *)) \
	_(cuArray3DCreate_v2, (CUarray *, const CUDA_ARRAY3D_DESCRIPTOR *)) \
	_(cuArrayDestroy, (CUarray)) \
	_(cuMipmappedArrayCreate, (CUmipmappedArray *, \
	    const CUDA_ARRAY3D_DESCRIPTOR *, unsigned int)) \
	_(cuMipmappedArrayDestroy, (CUmipmappedArray)) \
	_(cuEventCreate, (CUevent *, unsigned int)) \
	_(cuEventQuery, (CUevent)) \
	_(cuEventElapsedTime, (float *, CUevent, CUevent)) \
	_(cuEventDestroy_v2, (CUevent))

#define CUDA_PROTO(name, args) CUresult name args;
#define CUDA_PROTO_PTSZ(name, args) CUresult name args; \
	CUresult name##_ptsz args;
CUDA_PLAIN_FUNCS(CUDA_PROTO)
CUDA_STREAM_FUNCS(CUDA_PROTO_PTSZ)

nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int, nvmlDevice_t *);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t, char *, unsigned int);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t, nvmlMemory_t *);
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t, nvmlMemory_v2_t *);

#endif /* GMUX_CUDA_TYPES_H */
