/*
 * fuzz-build.c: POST /v1/builds bodies as the host reads them
 * (api_build_body).  A refusal always says why; a body taken names a
 * manifest, an image in the owner's own namespace that is a valid name,
 * and a Dockerfile and context that are relative and never climb out.
 * seeds: tests/fuzz/seeds/build/
 */

#include "fuzz.h"

#define OWNER	"alice"

static void
relative(const char *rel)
{
	const char	*p;
	size_t		 n;

	FUZZ_ASSERT(*rel != '\0' && *rel != '/');
	for (p = rel; *p != '\0'; p += n + (p[n] == '/')) {
		n = strcspn(p, "/");
		FUZZ_ASSERT(!(n == 2 && p[0] == '.' && p[1] == '.'));
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t		*o;
	json_error_t	 err;
	const char	*md = NULL;
	char		*image, *df, *ctx, *cause = NULL;
	static const char prefix[] = "localhost/" OWNER "/gmux-devcontainer-";

	if ((o = json_loadb((const char *)data, size, 0, &err)) == NULL)
		return (0);
	if (api_build_body(o, OWNER, &md, &image, &df, &ctx, &cause) != 0) {
		FUZZ_ASSERT(cause != NULL && *cause != '\0');
		FUZZ_ASSERT(image == NULL && df == NULL && ctx == NULL);
		free(cause);
		json_decref(o);
		return (0);
	}
	FUZZ_ASSERT(cause == NULL && md != NULL && digest_valid(md));
	FUZZ_ASSERT(strncmp(image, prefix, sizeof prefix - 1) == 0);
	FUZZ_ASSERT(jobspec_image_ok(image, &cause) == 0);
	relative(df);
	relative(ctx);
	free(image);
	free(df);
	free(ctx);
	json_decref(o);
	return (0);
}
