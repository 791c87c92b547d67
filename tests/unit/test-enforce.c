/*
 * test-enforce.c: what each card can enforce, from what was found and
 * started, and what a job's environment gets for it.
 */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "card-int.h"
#include "unit.h"

static char	 home[] = "/tmp/gmux-enforce-XXXXXX";
static char	 shim[128];

static const char *
env_get(char **env, const char *name)
{
	size_t	 len = strlen(name);

	for (; env != NULL && *env != NULL; env++) {
		if (strncmp(*env, name, len) == 0 && (*env)[len] == '=')
			return (*env + len + 1);
	}
	return (NULL);
}

static char **
env_new(void)
{
	char	**env = xcalloc(2, sizeof *env);

	env[0] = xstrdup("LD_PRELOAD=/usr/lib/libother.so");
	return (env);
}

static void
test_fake_nvidia(void)
{
	struct cards		 cs = { NULL, 0 };
	struct region_job_info	 ri;
	char			**env = env_new(), *cause = NULL, want[256];

	CHECK(card_fake_parse("2xH100:80G", &cs, &cause) == 0);
	unsetenv("GMUX_FAKE_CUDA");
	enforce_init(&cs);
	CHECK_STR(cs.v[0].enforce.memory, "admission");
	CHECK(strstr(cs.v[0].enforce.why, "GMUX_FAKE_CUDA") != NULL);
	enforce_shutdown();

	setenv("GMUX_FAKE_CUDA", "/opt/fake-cuda", 1);
	enforce_init(&cs);
	CHECK_STR(cs.v[1].enforce.memory, "shim");
	CHECK_STR(cs.v[1].enforce.compute, "pacer");
	CHECK(cs.v[1].enforce.live_memory && cs.v[1].enforce.live_compute);
	CHECK(enforce_job_env(7, &cs.v[1], 25, 25, 1ULL << 30, &env,
	    &cause) == 0);
	CHECK_STR(env_get(env, "CUDA_VISIBLE_DEVICES"), "1");
	snprintf(want, sizeof want, "%s:/usr/lib/libother.so", shim);
	CHECK_STR(env_get(env, "LD_PRELOAD"), want);
	snprintf(want, sizeof want, "%s/shim.region", home);
	CHECK_STR(env_get(env, "GMUX_REGION"), want);
	CHECK(env_get(env, "GMUX_REGION_SLOTS") != NULL);
	CHECK_STR(env_get(env, "LD_LIBRARY_PATH"), "/opt/fake-cuda");
	CHECK_STR(env_get(env, "FAKE_CUDA_MEM"), "85899345920");
	CHECK_STR(env_get(env, "FAKE_CUDA_UUIDS"), cs.v[1].uuid);
	CHECK(env_get(env, "CUDA_MPS_PIPE_DIRECTORY") == NULL);
	CHECK(region_job_info(7, &ri) == 0 && ri.cap == 1ULL << 30 &&
	    ri.ceiling == 25);
	enforce_set(7, &cs.v[1], 50, 50, 2ULL << 30);
	CHECK(region_job_info(7, &ri) == 0 && ri.cap == 2ULL << 30 &&
	    ri.ceiling == 50);
	enforce_forget(7);
	CHECK(region_job_info(7, &ri) == -1);
	strv_free(env);
	enforce_shutdown();
	unsetenv("GMUX_FAKE_CUDA");
	cards_free(&cs);
}

static void
test_real_nvidia_mps(void)
{
	struct cards	 cs = { NULL, 0 };
	struct card	*c;
	char		**env = env_new(), *cause = NULL;

	c = cards_add(&cs);
	c->vendor = VENDOR_NVIDIA;
	c->model = xstrdup("H200");
	c->uuid = xstrdup("GPU-1111");
	c->memory = 141ULL << 30;
	enforce_init(&cs);
	CHECK_STR(c->enforce.compute, "mps");
	CHECK_STR(c->enforce.memory, "shim");
	CHECK(enforce_job_env(3, c, 25, 40, 0, &env, &cause) == 0);
	CHECK_STR(env_get(env, "CUDA_VISIBLE_DEVICES"), "GPU-1111");
	CHECK_STR(env_get(env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "40");
	CHECK_STR(env_get(env, "CUDA_MPS_PIPE_DIRECTORY"), mps_pipe_dir(0));
	CHECK(strstr(env_get(env, "CUDA_MPS_PIPE_DIRECTORY"), home) != NULL);
	enforce_forget(3);
	enforce_shutdown();
	CHECK(mps_pipe_dir(0) == NULL);
	strv_free(env);

	setenv("FAKE_MPS_FAIL", "1", 1);
	enforce_init(&cs);
	CHECK_STR(c->enforce.compute, "pacer");
	CHECK(strstr(c->enforce.why, "compute: MPS:") != NULL);
	enforce_shutdown();
	unsetenv("FAKE_MPS_FAIL");
	cards_free(&cs);
}

static void
test_amd_and_intel(void)
{
	struct cards	 cs = { NULL, 0 };
	struct card	*c;
	char		**env = env_new(), *cause = NULL, want[256];

	CHECK(card_fake_parse("1xMax1550:128G", &cs, &cause) == 0);
	c = cards_add(&cs);
	c->vendor = VENDOR_AMD;
	c->model = xstrdup("MI300X");
	c->uuid = xstrdup("GPU-amd");
	c->vendor_index = 3;
	c->memory = 192ULL << 30;
	enforce_init(&cs);
	CHECK_STR(cs.v[0].enforce.memory, "admission");
	CHECK(strstr(cs.v[0].enforce.why, "ZE_AFFINITY_MASK") != NULL);
	c = &cs.v[1];
	CHECK_STR(c->enforce.compute, "cu-mask");
	CHECK(!c->enforce.live_compute);
	CHECK_STR(c->enforce.memory, "shim");
	CHECK(enforce_job_env(4, c, 25, 25, 0, &env, &cause) == 0);
	CHECK_STR(env_get(env, "ROCR_VISIBLE_DEVICES"), "3");
	CHECK_STR(env_get(env, "HIP_VISIBLE_DEVICES"), "0");
	CHECK_STR(env_get(env, "HSA_CU_MASK"), "0:0-71");
	CHECK_STR(env_get(env, "HSA_TOOLS_LIB"), shim);
	snprintf(want, sizeof want, "%s", shim);
	CHECK(strncmp(env_get(env, "LD_PRELOAD"), want, strlen(want)) == 0);
	enforce_forget(4);
	strv_free(env);
	env = env_new();
	CHECK(enforce_job_env(5, &cs.v[0], 50, 50, 0, &env, &cause) == 0);
	CHECK_STR(env_get(env, "ZE_AFFINITY_MASK"), "0");
	CHECK_STR(env_get(env, "LD_PRELOAD"), "/usr/lib/libother.so");
	strv_free(env);
	enforce_shutdown();
	cards_free(&cs);
}

int
main(void)
{
	char	*path, cwd[1024];
	FILE	*f;

	if (mkdtemp(home) == NULL || getcwd(cwd, sizeof cwd) == NULL)
		return (1);
	setenv("GMUX_HOME", home, 1);
	snprintf(shim, sizeof shim, "%s/libgmux.so", home);
	if ((f = fopen(shim, "w")) != NULL)
		fclose(f);
	setenv("GMUX_SHIM", shim, 1);
	xasprintf(&path, "%s/tests/fake-cuda/bin:%s", cwd, getenv("PATH"));
	setenv("PATH", path, 1);
	setenv("FAKE_MPS_RECORD", "/dev/null", 1);
	free(path);
	RUN(test_fake_nvidia);
	RUN(test_real_nvidia_mps);
	RUN(test_amd_and_intel);
	xasprintf(&path, "rm -rf '%s'", home);
	if (system(path) != 0)
		fprintf(stderr, "cannot remove %s\n", home);
	free(path);
	UNIT_EXIT();
}
