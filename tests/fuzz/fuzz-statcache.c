/*
 * fuzz-statcache.c: the client's stat cache file (statcache_parse).  The
 * input is parsed as it is and, so the fuzzer gets past the checksum, with
 * a correct "end SHA256" line appended.  A broken file is an empty cache,
 * never a crash.
 * seeds: tests/fuzz/seeds/statcache/
 */

#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct statcache	*sc;
	char			*cause = NULL, *buf, sum[DIGEST_HEX];
	int			 n;

	if (sc == NULL)
		sc = statcache_load("/nonexistent/gmux-fuzz.cache");
	if (statcache_parse(sc, (const char *)data, size, &cause) != 0)
		FUZZ_ASSERT(cause != NULL);
	free(cause);
	cause = NULL;
	buf = xmalloc(size + DIGEST_HEX + 8);
	memcpy(buf, data, size);
	digest_buf(data, size, sum);
	n = sprintf(buf + size, "end %s\n", sum);
	if (statcache_parse(sc, buf, size + (size_t)n, &cause) != 0)
		FUZZ_ASSERT(cause != NULL);
	free(cause);
	free(buf);
	return (0);
}
