/*
 * fuzz-devcontainer.c: devcontainer.json files as gmux workspace create
 * reads them (devcontainer_parse).  A refusal always says why; a file
 * taken has exactly one of an image (a valid name) and a Dockerfile, and
 * its lists are whole: every variable NAME=VALUE, every port 1-65535,
 * a command that is not empty.
 * seeds: tests/fuzz/seeds/devcontainer/
 */

#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct devcontainer	 dc;
	char			*cause = NULL;
	u_int			 i;

	devcontainer_init(&dc);
	if (devcontainer_parse((const char *)data, size, &dc, &cause) != 0) {
		FUZZ_ASSERT(cause != NULL && *cause != '\0');
		free(cause);
		devcontainer_free(&dc);
		return (0);
	}
	FUZZ_ASSERT(cause == NULL);
	FUZZ_ASSERT((dc.image == NULL) != (dc.dockerfile == NULL));
	if (dc.image != NULL)
		FUZZ_ASSERT(jobspec_image_ok(dc.image, &cause) == 0);
	for (i = 0; dc.env != NULL && dc.env[i] != NULL; i++)
		FUZZ_ASSERT(strchr(dc.env[i], '=') != NULL &&
		    dc.env[i][0] != '=');
	for (i = 0; i < dc.nports; i++)
		FUZZ_ASSERT(dc.ports[i] >= 1 && dc.ports[i] <= 65535);
	if (dc.post_create != NULL)
		FUZZ_ASSERT(dc.post_create[0] != NULL);
	for (i = 0; dc.mounts != NULL && dc.mounts[i] != NULL; i++)
		FUZZ_ASSERT(strstr(dc.mounts[i], "target=") != NULL);
	devcontainer_free(&dc);
	return (0);
}
