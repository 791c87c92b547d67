/*
 * fuzz-config.c: the daemon's KEY=VALUE settings file.
 * seeds: tests/fuzz/seeds/config/
 */

#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config_entry	*e;
	char			*text = fuzz_text(data, size), *cause = NULL;
	u_int			 n, i;

	if (config_parse(text, &e, &n, &cause) != 0)
		FUZZ_ASSERT(cause != NULL && e == NULL && n == 0);
	else {
		for (i = 0; i < n; i++) {
			FUZZ_ASSERT(*e[i].key != '\0');
			FUZZ_ASSERT(strchr(e[i].key, '=') == NULL);
		}
		config_free(e, n);
	}
	free(cause);
	free(text);
	return (0);
}
