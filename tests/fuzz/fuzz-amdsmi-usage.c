/*
 * fuzz-amdsmi-usage.c: amd-smi metric --usage --mem-usage --json.
 * seeds: tests/fixtures/amd/amdsmi-metric-*.json
 */

#include "fuzz.h"
#include "card-int.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct card_usages	 us = { NULL, 0 };
	char			*text = fuzz_text(data, size), *cause = NULL;
	u_int			 i;

	if (card_amd_parse_usage(text, &us, &cause) != 0)
		FUZZ_ASSERT(cause != NULL && us.n == 0);
	for (i = 0; i < us.n; i++)
		FUZZ_ASSERT(us.v[i].util >= -1 && us.v[i].util <= 100);
	free(cause);
	card_usages_free(&us);
	free(text);
	return (0);
}
