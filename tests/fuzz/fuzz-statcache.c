/*
 * fuzz-statcache.c: the client's stat cache file (statcache_parse).  A
 * broken file is an empty cache, never a crash.
 * seeds: tests/fuzz/seeds/statcache/
 */

#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct statcache	*sc;
	char			*cause = NULL;

	if (sc == NULL)
		sc = statcache_load("/nonexistent/gmux-fuzz.cache");
	if (statcache_parse(sc, (const char *)data, size, &cause) != 0)
		FUZZ_ASSERT(cause != NULL);
	free(cause);
	return (0);
}
