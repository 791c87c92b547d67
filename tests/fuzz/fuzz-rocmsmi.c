/*
 * fuzz-rocmsmi.c: rocm-smi --showproductname --showmeminfo vram ... --json.
 * seeds: tests/fixtures/amd/rocmsmi-*.json
 */

#include "fuzz.h"
#include "card-int.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cards	 cs = { NULL, 0 };
	char		*text = fuzz_text(data, size), *cause = NULL;
	int		 rc;

	rc = card_amd_parse_rocmsmi(text, &cs, &cause);
	fuzz_check_cards(rc, cause, &cs, 0, VENDOR_AMD);
	free(cause);
	cards_free(&cs);
	free(text);
	return (0);
}
