/* test-mps.c: MPS control daemons per card, against the fake control. */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "card-int.h"
#include "unit.h"

static char	 home[] = "/tmp/gmux-mps-XXXXXX";
static char	 record[128];

static struct card *
real_card(struct cards *cs, const char *uuid)
{
	struct card	*c = cards_add(cs);

	c->vendor = VENDOR_NVIDIA;
	c->uuid = xstrdup(uuid);
	c->memory = 80ULL << 30;
	return (c);
}

static int
recorded(const char *what)
{
	char	*text = read_file(record, 1 << 16, NULL, NULL);
	int	 found = text != NULL && strstr(text, what) != NULL;

	free(text);
	return (found);
}

static void
test_mps_start_stop(void)
{
	struct cards	 cs = { NULL, 0 };
	struct card	*c0, *c1;
	char		*cause = NULL, want[256];

	real_card(&cs, "GPU-aaaa");
	real_card(&cs, "GPU-bbbb");
	c0 = &cs.v[0];		/* cards_add moves the array */
	c1 = &cs.v[1];
	CHECK(mps_start(c0, &cause) == 0);
	CHECK(mps_start(c1, &cause) == 0);
	CHECK(mps_start(c1, &cause) == 0);	/* once per card */
	snprintf(want, sizeof want, "%s/mps/0/pipe", home);
	CHECK_STR(mps_pipe_dir(0), want);
	snprintf(want, sizeof want, "start pipe=%s/mps/1/pipe log=%s/mps/1/log "
	    "devices=GPU-bbbb", home, home);
	CHECK(recorded(want));
	CHECK(recorded("mode=700"));
	CHECK(!recorded("/tmp/nvidia-mps"));
	mps_stop(c0);
	CHECK(mps_pipe_dir(0) == NULL);
	snprintf(want, sizeof want, "cmd quit pipe=%s/mps/0/pipe", home);
	CHECK(recorded(want));
	mps_stop_all();
	CHECK(mps_pipe_dir(1) == NULL);
	snprintf(want, sizeof want, "cmd quit pipe=%s/mps/1/pipe", home);
	CHECK(recorded(want));
	cards_free(&cs);
}

static void
test_mps_failures(void)
{
	struct cards	 cs = { NULL, 0 };
	struct card	*c;
	char		*cause = NULL, *path;

	c = real_card(&cs, "GPU-cccc");
	setenv("FAKE_MPS_FAIL", "1", 1);
	CHECK(mps_start(c, &cause) == -1);
	CHECK(cause != NULL && strstr(cause, "-d failed") != NULL);
	free(cause);
	cause = NULL;
	CHECK(mps_pipe_dir(0) == NULL);
	unsetenv("FAKE_MPS_FAIL");
	path = xstrdup(getenv("PATH"));
	setenv("PATH", "/nonexistent", 1);
	CHECK(mps_start(c, &cause) == -1);
	CHECK(cause != NULL && strstr(cause, "not found") != NULL);
	free(cause);
	setenv("PATH", path, 1);
	free(path);
	cards_free(&cs);
}

int
main(void)
{
	char	*path, cwd[1024];

	if (mkdtemp(home) == NULL || getcwd(cwd, sizeof cwd) == NULL)
		return (1);
	setenv("GMUX_HOME", home, 1);
	snprintf(record, sizeof record, "%s/mps-record", home);
	setenv("FAKE_MPS_RECORD", record, 1);
	xasprintf(&path, "%s/tests/fake-cuda/bin:%s", cwd, getenv("PATH"));
	setenv("PATH", path, 1);
	free(path);
	RUN(test_mps_start_stop);
	RUN(test_mps_failures);
	xasprintf(&path, "rm -rf '%s'", home);
	if (system(path) != 0)
		fprintf(stderr, "cannot remove %s\n", home);
	free(path);
	UNIT_EXIT();
}
