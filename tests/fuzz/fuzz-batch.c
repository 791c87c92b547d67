/*
 * fuzz-batch.c: a batch upload body (batch_parse).  Every record handed
 * to the callback lies inside the body, and an accepted body is exactly
 * its records.
 * seeds: tests/fuzz/seeds/batch/
 */

#include "fuzz.h"

struct seen {
	const char	*start;
	const char	*end;
	size_t		 used;
};

static int
record(const char *digest, const void *p, size_t len, void *arg,
    char **cause)
{
	struct seen	*s = arg;

	FUZZ_ASSERT(digest_valid(digest));
	FUZZ_ASSERT((const char *)p >= s->start &&
	    (const char *)p + len <= s->end);
	FUZZ_ASSERT(len <= 4096);
	s->used += DIGEST_HEX + 2 + len;	/* digest, space, newline */
	for (; len >= 10; len /= 10)
		s->used++;
	return (0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen	 s = { (const char *)data, (const char *)data + size,
			    13 };
	char		*cause = NULL;

	if (batch_parse(data, size, 4096, record, &s, &cause) != 0) {
		FUZZ_ASSERT(cause != NULL);
		free(cause);
		return (0);
	}
	FUZZ_ASSERT(s.used == size);
	return (0);
}
