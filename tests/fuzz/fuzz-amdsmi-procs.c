/*
 * fuzz-amdsmi-procs.c: amd-smi process --json.
 * seeds: tests/fixtures/amd/amdsmi-process-*.json
 */

#include "fuzz.h"
#include "card-int.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct card_procs	 ps = { NULL, 0 };
	char			*text = fuzz_text(data, size), *cause = NULL;
	u_int			 i;

	if (card_amd_parse_procs(text, &ps, &cause) != 0)
		FUZZ_ASSERT(cause != NULL && ps.n == 0);
	for (i = 0; i < ps.n; i++) {
		FUZZ_ASSERT(ps.v[i].pid > 0 && ps.v[i].vendor_index >= 0);
		FUZZ_ASSERT(ps.v[i].vendor == VENDOR_AMD);
	}
	free(cause);
	card_procs_free(&ps);
	free(text);
	return (0);
}
