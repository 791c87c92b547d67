/*
 * fuzz-fake.c: the --fake SPEC of gmux serve.
 * seeds: tests/fuzz/seeds/fake/
 */

#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cards	 cs = { NULL, 0 };
	char		*text = fuzz_text(data, size), *cause = NULL;
	u_int		 i;

	if (card_fake_parse(text, &cs, &cause) != 0)
		FUZZ_ASSERT(cause != NULL);
	else {
		FUZZ_ASSERT(cs.n >= 1 && cs.n <= 64);
		for (i = 0; i < cs.n; i++) {
			FUZZ_ASSERT(cs.v[i].fake && cs.v[i].model != NULL);
			FUZZ_ASSERT(cs.v[i].memory >= (1ULL << 20));
			FUZZ_ASSERT(cs.v[i].vendor != VENDOR_NONE);
		}
	}
	free(cause);
	cards_free(&cs);
	free(text);
	return (0);
}
