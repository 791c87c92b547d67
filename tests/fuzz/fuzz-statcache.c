/*
 * fuzz-statcache.c: the client's stat cache file (statcache_parse).  The
 * input is parsed as it is and, so the fuzzer gets past the checksum, with
 * a correct "end SHA256" line appended.  A broken file is an empty cache,
 * never a crash.  A cache that parses is then used as a scan would: the
 * last word of each line is looked up (in the file's order, then again in
 * reverse, which leaves the cursor for the map), one entry is put, and the
 * cache is formatted for a save (to a path that cannot be written).
 * seeds: tests/fuzz/seeds/statcache/
 */

#include <sys/stat.h>

#include "fuzz.h"

/* Where nothing can be made, even by root: a save must fail. */
#define FUZZ_CACHE	"/proc/gmux-fuzz/statcache"

static void
use(struct statcache *sc, const char *text)
{
	struct stat	 st;
	char		*copy = xstrdup(text), *line, *next, *sp, *cause = NULL;
	const char	*words[64];
	size_t		 n = 0, i;

	memset(&st, 0, sizeof st);
	for (line = copy; line != NULL && n < nitems(words); line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		if ((sp = strrchr(line, ' ')) != NULL)
			words[n++] = sp + 1;
	}
	for (i = 0; i < n; i++)
		statcache_get(sc, words[i], &st);
	for (i = n; i > 0; i--)
		statcache_get(sc, words[i - 1], &st);
	statcache_put(sc, n > 0 ? words[0] : "new", &st,
	    "0000000000000000000000000000000000000000000000000000000000000000");
	statcache_put(sc, "new", &st,
	    "0000000000000000000000000000000000000000000000000000000000000000");
	FUZZ_ASSERT(statcache_save(sc, &cause) == -1 && cause != NULL);
	free(cause);
	free(copy);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct statcache	*sc;
	char			*cause = NULL, *buf, sum[DIGEST_HEX];
	int			 n;

	if (sc == NULL)
		sc = statcache_load(FUZZ_CACHE);
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
	else
		use(sc, buf);
	free(cause);
	free(buf);
	return (0);
}
