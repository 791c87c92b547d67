/*
 * fuzz-amdsmi.c: amd-smi static --json, then amd-smi list --json over the
 * cards it gave (the same input serves as both).
 * seeds: tests/fixtures/amd/amdsmi-static-*.json
 * seeds: tests/fixtures/amd/amdsmi-list-*.json
 */

#include "fuzz.h"
#include "card-int.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cards	 cs = { NULL, 0 };
	char		*text = fuzz_text(data, size), *cause = NULL;
	int		 rc;

	rc = card_amd_parse_amdsmi(text, &cs, &cause);
	fuzz_check_cards(rc, cause, &cs, 0, VENDOR_AMD);
	free(cause);
	cause = NULL;
	if (card_amd_parse_amdsmi_list(text, &cs, 0, &cause) != 0)
		FUZZ_ASSERT(cause != NULL);
	fuzz_check_cards(0, NULL, &cs, 0, VENDOR_AMD);
	free(cause);
	cards_free(&cs);
	free(text);
	return (0);
}
