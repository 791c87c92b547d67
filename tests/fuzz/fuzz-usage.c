/*
 * fuzz-usage.c: gmux usage's parsers: --since/--until times (first byte
 * even) and the API's usage reply as the CLI reads and prints it (odd).
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct usage	 u;
	json_error_t	 err;
	json_t		*j;
	char		*s, *cause = NULL;
	int64_t		 a, b;
	FILE		*f;

	if (size < 1)
		return (0);
	if (data[0] % 2 == 0) {
		s = xstrndup((const char *)data + 1, size - 1);
		if (usage_parse_window(s, "now", 1793491200000LL, &a, &b,
		    &cause) != 0)
			free(cause);
		free(s);
		return (0);
	}
	if ((j = json_loadb((const char *)data + 1, size - 1, 0, &err)) == NULL)
		return (0);
	if (usage_from_json(j, &u, &cause) == 0) {
		if ((f = fopen("/dev/null", "w")) != NULL) {
			usage_print(&u, USAGE_TABLE, f);
			usage_print(&u, USAGE_CSV, f);
			usage_print(&u, USAGE_JSON, f);
			fclose(f);
		}
		usage_free(&u);
	} else
		free(cause);
	json_decref(j);
	return (0);
}
