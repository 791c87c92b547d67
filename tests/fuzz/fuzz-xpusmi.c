/*
 * fuzz-xpusmi.c: xpu-smi discovery -j, and discovery -d ID -j.
 * seeds: tests/fixtures/intel/
 */

#include "fuzz.h"
#include "card-int.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cards	 cs = { NULL, 0 };
	char		*text = fuzz_text(data, size), *cause = NULL;
	int		 rc;

	rc = card_intel_parse(text, &cs, &cause);
	fuzz_check_cards(rc, cause, &cs, 0, VENDOR_INTEL);
	free(cause);
	cards_free(&cs);
	free(text);
	return (0);
}
