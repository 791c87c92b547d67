/*
 * hsa-host.c: plays ROCr for the shim's HSA tools library: it builds an
 * API table laid out as ROCr's (a version, then the function pointers in
 * ROCr's order), opens $HSA_TOOLS_LIB and calls its OnLoad, then allocates
 * through the table as HIP would.  Commands as cudash: "load", "alloc
 * gpu|host SIZE", "free ID"; answers "ok ..." or "err STATUS".
 */

#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int hsa_status_t;
typedef struct { uint64_t handle; } hsa_agent_t;
typedef struct { uint64_t handle; } hsa_amd_memory_pool_t;
typedef hsa_status_t (*agent_cb)(hsa_agent_t, void *);
typedef hsa_status_t (*pool_cb)(hsa_amd_memory_pool_t, void *);

struct table {
	uint32_t	 major_id, minor_id, step_id, reserved;
	void		*fn[40];
};
struct api {
	uint32_t	 major_id, minor_id, step_id, reserved;
	struct table	*core, *amd_ext;
};

static struct table	 core, amd;
static struct api	 api = { 1, sizeof api, 0, 0, &core, &amd };
static void		*held[64];

/* Agent 1 is the CPU with host pool 10; agent 2 a GPU with pools 20, 21. */
static hsa_status_t
iterate_agents(agent_cb cb, void *arg)
{
	hsa_agent_t	 a;

	a.handle = 1;
	cb(a, arg);
	a.handle = 2;
	return (cb(a, arg));
}

static hsa_status_t
agent_get_info(hsa_agent_t a, int attr, void *v)
{
	if (attr != 17)
		return (1);
	*(uint32_t *)v = a.handle == 2 ? 1 : 0;
	return (0);
}

static hsa_status_t
iterate_pools(hsa_agent_t a, pool_cb cb, void *arg)
{
	hsa_amd_memory_pool_t	 p;

	p.handle = a.handle * 10;
	cb(p, arg);
	if (a.handle == 2) {
		p.handle = 21;
		cb(p, arg);
	}
	return (0);
}

static hsa_status_t
pool_allocate(hsa_amd_memory_pool_t p, size_t size, uint32_t flags, void **ptr)
{
	return ((*ptr = malloc(size ? size : 1)) != NULL ? 0 : 0x1008);
}

static hsa_status_t
pool_free(void *ptr)
{
	free(ptr);
	return (0);
}

static void
load(void)
{
	bool	 (*onload)(void *, uint64_t, uint64_t, const char *const *);
	void	*h;

	core.minor_id = amd.minor_id = sizeof core;
	core.fn[5] = (void *)iterate_agents;
	core.fn[6] = (void *)agent_get_info;
	amd.fn[12] = (void *)iterate_pools;
	amd.fn[13] = (void *)pool_allocate;
	amd.fn[14] = (void *)pool_free;
	if ((h = dlopen(getenv("HSA_TOOLS_LIB"), RTLD_NOW)) == NULL ||
	    (onload = (bool (*)(void *, uint64_t, uint64_t,
	    const char *const *))dlsym(h, "OnLoad")) == NULL) {
		printf("err load\n");
		return;
	}
	printf(onload(&api, 1, 0, NULL) && amd.fn[13] != (void *)pool_allocate ?
	    "ok\n" : "err onload\n");
}

int
main(void)
{
	char			 line[256], what[16];
	hsa_status_t		 (*alloc)(hsa_amd_memory_pool_t, size_t,
				     uint32_t, void **);
	hsa_status_t		 (*release)(void *);
	hsa_amd_memory_pool_t	 p;
	unsigned long long	 size;
	int			 i, st;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof line, stdin) != NULL) {
		alloc = (hsa_status_t (*)(hsa_amd_memory_pool_t, size_t,
		    uint32_t, void **))amd.fn[13];
		release = (hsa_status_t (*)(void *))amd.fn[14];
		if (strncmp(line, "load", 4) == 0)
			load();
		else if (sscanf(line, "alloc %15s %llu", what, &size) == 2) {
			p.handle = strcmp(what, "gpu") == 0 ? 21 : 10;
			for (i = 0; i < 64 && held[i] != NULL; i++)
				;
			if (i == 64 || (st = alloc(p, size, 0, &held[i])) != 0)
				printf("err %d\n", i == 64 ? -1 : st);
			else
				printf("ok %d\n", i);
		} else if (sscanf(line, "free %d", &i) == 1 && i >= 0 &&
		    i < 64 && held[i] != NULL) {
			st = release(held[i]);
			held[i] = NULL;
			printf(st == 0 ? "ok\n" : "err %d\n", st);
		} else
			printf("err unknown\n");
	}
	return (0);
}
