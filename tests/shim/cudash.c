/*
 * cudash.c: a small CUDA "shell" the shim tests drive: one command a line
 * on standard input (or ';'-separated after -c), one answer a line ("ok
 * ..." or "err CODE").  Built twice: linked with -lcuda (the exported
 * symbols), and with -DVIA_DLSYM, where it finds the driver as the CUDA
 * runtime does: dlopen, dlsym("cuGetProcAddress_v2"), then every entry
 * point by name, version and flags.
 */

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda-types.h"

#define VERSION	12040
#define MAXH	4096

static struct {
	__typeof__(&cuInit)			 init;
	__typeof__(&cuDeviceGet)		 device_get;
	__typeof__(&cuCtxCreate_v2)		 ctx_create;
	__typeof__(&cuCtxSynchronize)		 sync;
	__typeof__(&cuMemAlloc_v2)		 alloc;
	__typeof__(&cuMemAllocPitch_v2)		 pitch;
	__typeof__(&cuMemAllocManaged)		 managed;
	__typeof__(&cuMemFree_v2)		 free;
	__typeof__(&cuMemCreate)		 create;
	__typeof__(&cuMemRelease)		 release;
	__typeof__(&cuMemAllocAsync)		 async, async_ptsz;
	__typeof__(&cuMemAllocFromPoolAsync)	 frompool, frompool_ptsz;
	__typeof__(&cuMemFreeAsync)		 free_async, free_async_ptsz;
	__typeof__(&cuDeviceGetMemPool)		 get_pool;
	__typeof__(&cuMemPoolTrimTo)		 trim;
	__typeof__(&cuArrayCreate_v2)		 array;
	__typeof__(&cuArray3DCreate_v2)		 array3d;
	__typeof__(&cuArrayDestroy)		 array_destroy;
	__typeof__(&cuMipmappedArrayCreate)	 mipmap;
	__typeof__(&cuMipmappedArrayDestroy)	 mipmap_destroy;
	__typeof__(&cuMemGetInfo_v2)		 info;
	__typeof__(&cuDeviceTotalMem_v2)	 total;
	__typeof__(&cuLaunchKernel)		 launch, launch_ptsz;
	__typeof__(&cuLaunchKernelEx)		 launch_ex;
	__typeof__(&cuLaunchCooperativeKernel)	 launch_coop;
	__typeof__(&cuGraphLaunch)		 graph;
	__typeof__(&cuGetProcAddress_v2)	 gpa;
	__typeof__(&nvmlInit_v2)		 nvml_init;
	__typeof__(&nvmlDeviceGetHandleByIndex_v2) nvml_handle;
	__typeof__(&nvmlDeviceGetMemoryInfo)	 nvml_mem;
	__typeof__(&nvmlDeviceGetMemoryInfo_v2)	 nvml_mem2;
	uint64_t				(*ptsz_calls)(void);
} api;

static struct {
	char		 kind;	/* p ptr, a async, v vmm, r array, m mipmap */
	uint64_t	 h;
} held[MAXH];

#ifdef VIA_DLSYM
static void	*cuda;

static void *
proc(const char *name, int flags)
{
	void				*fn = NULL;
	CUdriverProcAddressQueryResult	 st;

	if (api.gpa(name, &fn, VERSION, flags, &st) != CUDA_SUCCESS)
		return (NULL);
	return (fn);
}
#define GET(field, name, flags) api.field = proc(#name, flags)

static void
resolve(void)
{
	void	*nvml;

	if ((cuda = dlopen("libcuda.so.1", RTLD_NOW|RTLD_LOCAL)) == NULL ||
	    (api.gpa = dlsym(cuda, "cuGetProcAddress_v2")) == NULL) {
		printf("err dlopen %s\n", dlerror());
		exit(1);
	}
	api.ptsz_calls = dlsym(cuda, "fakecuPtszCalls");
	if ((nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW)) != NULL) {
		api.nvml_init = dlsym(nvml, "nvmlInit_v2");
		api.nvml_handle = dlsym(nvml, "nvmlDeviceGetHandleByIndex_v2");
		api.nvml_mem = dlsym(nvml, "nvmlDeviceGetMemoryInfo");
		api.nvml_mem2 = dlsym(nvml, "nvmlDeviceGetMemoryInfo_v2");
	}
#else
/* As cuda.h does: the plain names are the current variants. */
#define cuCtxCreate		cuCtxCreate_v2
#define cuMemAlloc		cuMemAlloc_v2
#define cuMemAllocPitch		cuMemAllocPitch_v2
#define cuMemFree		cuMemFree_v2
#define cuArrayCreate		cuArrayCreate_v2
#define cuArray3DCreate		cuArray3DCreate_v2
#define cuMemGetInfo		cuMemGetInfo_v2
#define cuDeviceTotalMem	cuDeviceTotalMem_v2
uint64_t	fakecuPtszCalls(void);
#define GET(field, name, flags) api.field = name

static void
resolve(void)
{
	api.gpa = cuGetProcAddress_v2;
	api.ptsz_calls = fakecuPtszCalls;
	api.nvml_init = nvmlInit_v2;
	api.nvml_handle = nvmlDeviceGetHandleByIndex_v2;
	api.nvml_mem = nvmlDeviceGetMemoryInfo;
	api.nvml_mem2 = nvmlDeviceGetMemoryInfo_v2;
#endif
	GET(init, cuInit, 0);
	GET(device_get, cuDeviceGet, 0);
	GET(ctx_create, cuCtxCreate, 0);
	GET(sync, cuCtxSynchronize, 0);
	GET(alloc, cuMemAlloc, 0);
	GET(pitch, cuMemAllocPitch, 0);
	GET(managed, cuMemAllocManaged, 0);
	GET(free, cuMemFree, 0);
	GET(create, cuMemCreate, 0);
	GET(release, cuMemRelease, 0);
	GET(async, cuMemAllocAsync, 0);
	GET(frompool, cuMemAllocFromPoolAsync, 0);
	GET(free_async, cuMemFreeAsync, 0);
	GET(get_pool, cuDeviceGetMemPool, 0);
	GET(trim, cuMemPoolTrimTo, 0);
	GET(array, cuArrayCreate, 0);
	GET(array3d, cuArray3DCreate, 0);
	GET(array_destroy, cuArrayDestroy, 0);
	GET(mipmap, cuMipmappedArrayCreate, 0);
	GET(mipmap_destroy, cuMipmappedArrayDestroy, 0);
	GET(info, cuMemGetInfo, 0);
	GET(total, cuDeviceTotalMem, 0);
	GET(launch, cuLaunchKernel, 0);
	GET(launch_ex, cuLaunchKernelEx, 0);
	GET(launch_coop, cuLaunchCooperativeKernel, 0);
	GET(graph, cuGraphLaunch, 0);
#ifdef VIA_DLSYM
	GET(async_ptsz, cuMemAllocAsync, 2);
	GET(frompool_ptsz, cuMemAllocFromPoolAsync, 2);
	GET(free_async_ptsz, cuMemFreeAsync, 2);
	GET(launch_ptsz, cuLaunchKernel, 2);
#else
	api.async_ptsz = cuMemAllocAsync_ptsz;
	api.frompool_ptsz = cuMemAllocFromPoolAsync_ptsz;
	api.free_async_ptsz = cuMemFreeAsync_ptsz;
	api.launch_ptsz = cuLaunchKernel_ptsz;
#endif
}

static uint64_t
size_arg(const char *s)
{
	char		*end;
	uint64_t	 v = strtoull(s, &end, 0);

	if (*end == 'K')
		v <<= 10;
	else if (*end == 'M')
		v <<= 20;
	else if (*end == 'G')
		v <<= 30;
	return (v);
}

static int
keep(char kind, uint64_t h)
{
	int	 i;

	for (i = 0; i < MAXH && held[i].kind != 0; i++)
		;
	if (i == MAXH)
		return (-1);
	held[i].kind = kind;
	held[i].h = h;
	return (i);
}

static void
answer(CUresult rc, char kind, uint64_t h)
{
	if (rc != CUDA_SUCCESS)
		printf("err %d\n", rc);
	else
		printf("ok %d\n", keep(kind, h));
}

static CUresult
drop(int i)
{
	CUresult	 rc = CUDA_ERROR_INVALID_VALUE;

	if (i < 0 || i >= MAXH)
		return (rc);
	switch (held[i].kind) {
	case 'p':
		rc = api.free(held[i].h);
		break;
	case 'a':
		rc = api.free_async(held[i].h, NULL);
		break;
	case 'A':
		rc = api.free_async_ptsz(held[i].h, NULL);
		break;
	case 'v':
		rc = api.release(held[i].h);
		break;
	case 'r':
		rc = api.array_destroy((CUarray)(uintptr_t)held[i].h);
		break;
	case 'm':
		rc = api.mipmap_destroy((CUmipmappedArray)(uintptr_t)held[i].h);
		break;
	}
	held[i].kind = 0;
	return (rc);
}

static int64_t
now_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

/* Launches through every paced entry point for ms; prints the busy share. */
static void
launch_for(int ms)
{
	CUlaunchConfig	 cfg = { 1, 1, 1, 1, 1, 1, 0, NULL, NULL, 0 };
	CUfunction	 f = (CUfunction)1;
	int64_t		 start = now_ms(), wall;
	long		 n = 0, kus = 1000;
	const char	*v = getenv("FAKE_CUDA_KERNEL_US");
	CUresult	 rc = CUDA_SUCCESS;

	if (v != NULL)
		kus = atol(v);
	api.sync();
	start = now_ms();
	while (now_ms() - start < ms && rc == CUDA_SUCCESS) {
		switch (n++ % 5) {
		case 0:
			rc = api.launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL,
			    NULL);
			break;
		case 1:
			rc = api.launch_ptsz(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL,
			    NULL);
			break;
		case 2:
			rc = api.launch_ex(&cfg, f, NULL, NULL);
			break;
		case 3:
			rc = api.launch_coop(f, 1, 1, 1, 1, 1, 1, 0, NULL,
			    NULL);
			break;
		case 4:
			rc = api.graph((CUgraphExec)1, NULL);
			break;
		}
	}
	api.sync();
	wall = now_ms() - start;
	if (rc != CUDA_SUCCESS)
		printf("err %d\n", rc);
	else
		printf("ok %ld %.3f\n", n, (double)n * kus / 1000.0 / wall);
}

/* Allocates and frees at random for rounds; prints successes, refusals. */
static void
race(int rounds, uint64_t size)
{
	int		 i, j, got = 0, denied = 0, mine[8], n = 0;
	CUdeviceptr	 p;

	srand(getpid());
	for (i = 0; i < rounds; i++) {
		if (n < 8 && (n == 0 || rand() % 2)) {
			if (api.alloc(&p, size) != CUDA_SUCCESS) {
				denied++;
				continue;
			}
			mine[n++] = keep('p', p);
			got++;
		} else {
			j = rand() % n;
			drop(mine[j]);
			mine[j] = mine[--n];
		}
	}
	while (n > 0)
		drop(mine[--n]);
	printf("ok %d %d\n", got, denied);
}

/* Which library a resolved entry point lives in: "libgmux.so" if wrapped. */
static void
origin(const char *field)
{
	static const struct {
		const char	*name;
		void		*fn;
	} t[] = {
		{ "alloc", &api.alloc }, { "async", &api.async },
		{ "async_ptsz", &api.async_ptsz }, { "info", &api.info },
		{ "launch", &api.launch }, { "launch_ptsz", &api.launch_ptsz },
		{ "gpa", &api.gpa }, { "nvml_mem", &api.nvml_mem },
		{ "array", &api.array }, { "create", &api.create },
	};
	Dl_info		 info;
	size_t		 i;
	const char	*slash;

	for (i = 0; i < sizeof t / sizeof *t; i++) {
		if (strcmp(field, t[i].name) != 0)
			continue;
		if (dladdr(*(void **)t[i].fn, &info) == 0 ||
		    info.dli_fname == NULL) {
			printf("err none\n");
			return;
		}
		slash = strrchr(info.dli_fname, '/');
		printf("ok %s\n", slash ? slash + 1 : info.dli_fname);
		return;
	}
	printf("err unknown\n");
}

static void
getproc(const char *name, int version, int flags)
{
	void				*fn = NULL;
	CUdriverProcAddressQueryResult	 st = 99;
	Dl_info				 info;
	CUresult			 rc;

	rc = api.gpa(name, &fn, version, flags, &st);
	if (rc != CUDA_SUCCESS || fn == NULL) {
		printf("err %d %d\n", rc, st);
		return;
	}
	if (dladdr(fn, &info) == 0 || info.dli_sname == NULL)
		printf("ok ? ?\n");
	else
		printf("ok %s %s\n", strrchr(info.dli_fname, '/') ?
		    strrchr(info.dli_fname, '/') + 1 : info.dli_fname,
		    info.dli_sname);
}

static void
nvml(void)
{
	nvmlDevice_t	 d;
	nvmlMemory_t	 m;
	nvmlMemory_v2_t	 m2;

	if (api.nvml_init == NULL || api.nvml_init() != NVML_SUCCESS ||
	    api.nvml_handle(0, &d) != NVML_SUCCESS ||
	    api.nvml_mem(d, &m) != NVML_SUCCESS ||
	    api.nvml_mem2(d, &m2) != NVML_SUCCESS) {
		printf("err nvml\n");
		return;
	}
	printf("ok %llu %llu %llu %llu %llu %llu\n", m.total, m.used, m.free,
	    m2.total, m2.used, m2.free);
}

static void
command(char *line)
{
	char			*w[5] = { NULL };
	int			 n = 0;
	CUdevice		 dev;
	CUcontext		 ctx;
	CUdeviceptr		 p;
	CUmemGenericAllocationHandle h;
	CUmemAllocationProp	 prop = { 0 };
	CUmemoryPool		 pool;
	CUarray			 a;
	CUmipmappedArray	 mm;
	CUDA_ARRAY_DESCRIPTOR	 d2 = { 0 };
	CUDA_ARRAY3D_DESCRIPTOR	 d3 = { 0 };
	size_t			 fr, tot, pitch;
	CUresult		 rc;

	for (w[0] = strtok(line, " \t\n"); w[n] != NULL && n < 4; )
		w[++n] = strtok(NULL, " \t\n");
	if (w[0] == NULL)
		return;
#define ARG(i) (w[i] != NULL ? w[i] : "0")
	if (strcmp(w[0], "init") == 0) {
		rc = api.init(0);
		if (rc == CUDA_SUCCESS)
			rc = api.device_get(&dev, 0);
		if (rc == CUDA_SUCCESS)
			rc = api.ctx_create(&ctx, 0, dev);
		printf(rc == CUDA_SUCCESS ? "ok\n" : "err %d\n", rc);
	} else if (strcmp(w[0], "alloc") == 0) {
		rc = api.alloc(&p, size_arg(ARG(1)));
		answer(rc, 'p', p);
	} else if (strcmp(w[0], "managed") == 0) {
		rc = api.managed(&p, size_arg(ARG(1)), 1);
		answer(rc, 'p', p);
	} else if (strcmp(w[0], "pitch") == 0) {
		rc = api.pitch(&p, &pitch, size_arg(ARG(1)),
		    size_arg(ARG(2)), 4);
		answer(rc, 'p', p);
	} else if (strcmp(w[0], "create") == 0) {
		prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
		prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		rc = api.create(&h, size_arg(ARG(1)), &prop, 0);
		answer(rc, 'v', h);
	} else if (strcmp(w[0], "async") == 0) {
		rc = api.async(&p, size_arg(ARG(1)), NULL);
		answer(rc, 'a', p);
	} else if (strcmp(w[0], "async-ptsz") == 0) {
		rc = api.async_ptsz(&p, size_arg(ARG(1)), NULL);
		answer(rc, 'A', p);
	} else if (strcmp(w[0], "pool") == 0 ||
	    strcmp(w[0], "pool-ptsz") == 0) {
		rc = api.get_pool(&pool, 0);
		if (rc == CUDA_SUCCESS && w[0][4] == '\0')
			rc = api.frompool(&p, size_arg(ARG(1)), pool, NULL);
		else if (rc == CUDA_SUCCESS)
			rc = api.frompool_ptsz(&p, size_arg(ARG(1)), pool,
			    NULL);
		answer(rc, w[0][4] == '\0' ? 'a' : 'A', p);
	} else if (strcmp(w[0], "array") == 0) {
		d2.Width = size_arg(ARG(1));
		d2.Height = size_arg(ARG(2));
		d2.Format = CU_AD_FORMAT_FLOAT;
		d2.NumChannels = 1;
		rc = api.array(&a, &d2);
		answer(rc, 'r', (uintptr_t)a);
	} else if (strcmp(w[0], "array3d") == 0 ||
	    strcmp(w[0], "mipmap") == 0) {
		d3.Width = size_arg(ARG(1));
		d3.Height = size_arg(ARG(2));
		d3.Depth = w[0][0] == 'a' ? size_arg(ARG(3)) : 0;
		d3.Format = CU_AD_FORMAT_FLOAT;
		d3.NumChannels = 1;
		if (w[0][0] == 'a') {
			rc = api.array3d(&a, &d3);
			answer(rc, 'r', (uintptr_t)a);
		} else {
			rc = api.mipmap(&mm, &d3, atoi(ARG(3)));
			answer(rc, 'm', (uintptr_t)mm);
		}
	} else if (strcmp(w[0], "free") == 0) {
		rc = drop(atoi(ARG(1)));
		printf(rc == CUDA_SUCCESS ? "ok\n" : "err %d\n", rc);
	} else if (strcmp(w[0], "sync") == 0) {
		rc = api.sync();
		printf(rc == CUDA_SUCCESS ? "ok\n" : "err %d\n", rc);
	} else if (strcmp(w[0], "trim") == 0) {
		rc = api.get_pool(&pool, 0);
		if (rc == CUDA_SUCCESS)
			rc = api.trim(pool, 0);
		printf(rc == CUDA_SUCCESS ? "ok\n" : "err %d\n", rc);
	} else if (strcmp(w[0], "info") == 0) {
		if ((rc = api.info(&fr, &tot)) == CUDA_SUCCESS)
			printf("ok %zu %zu\n", fr, tot);
		else
			printf("err %d\n", rc);
	} else if (strcmp(w[0], "total") == 0) {
		if ((rc = api.total(&tot, 0)) == CUDA_SUCCESS)
			printf("ok %zu\n", tot);
		else
			printf("err %d\n", rc);
	} else if (strcmp(w[0], "nvml") == 0)
		nvml();
	else if (strcmp(w[0], "launch") == 0)
		launch_for(atoi(ARG(1)));
	else if (strcmp(w[0], "race") == 0)
		race(atoi(ARG(1)), size_arg(ARG(2)));
	else if (strcmp(w[0], "origin") == 0)
		origin(ARG(1));
	else if (strcmp(w[0], "getproc") == 0)
		getproc(ARG(1), atoi(ARG(2)), atoi(ARG(3)));
	else if (strcmp(w[0], "ptsz") == 0)
		printf("ok %llu\n", (unsigned long long)api.ptsz_calls());
	else if (strcmp(w[0], "pid") == 0)
		printf("ok %ld\n", (long)getpid());
	else
		printf("err unknown command %s\n", w[0]);
#undef ARG
}

int
main(int argc, char **argv)
{
	char	 line[512], *cmd, *next;

	setvbuf(stdout, NULL, _IOLBF, 0);
	resolve();
	if (argc == 3 && strcmp(argv[1], "-c") == 0) {
		for (cmd = argv[2]; cmd != NULL; cmd = next) {
			if ((next = strchr(cmd, ';')) != NULL)
				*next++ = '\0';
			command(cmd);
		}
		return (0);
	}
	while (fgets(line, sizeof line, stdin) != NULL) {
		if (strncmp(line, "quit", 4) == 0)
			break;
		command(line);
	}
	return (0);
}
