/*
 * fuzz-nvidia-gpus.c: nvidia-smi --query-gpu=index,uuid,name,...
 * seeds: tests/fixtures/nvidia/gpus-*.csv tests/fixtures/nvidia/failed.txt
 */

#include "fuzz.h"
#include "card-int.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cards	 cs = { NULL, 0 };
	char		*text = fuzz_text(data, size), *cause = NULL;
	int		 rc;

	rc = card_nvidia_parse(text, &cs, &cause);
	fuzz_check_cards(rc, cause, &cs, 0, VENDOR_NVIDIA);
	free(cause);
	cards_free(&cs);
	free(text);
	return (0);
}
