/*
 * fuzz-imageref.c: image names as a client gives them (imageref.c).  A
 * name taken is never a flag, a path or a transport, and has no byte that
 * a plain reference cannot hold; no component of its path is "..".
 * seeds: tests/fuzz/seeds/imageref/
 */

#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	*s = fuzz_text(data, size), *cause = NULL;
	size_t	 i;

	if (imageref_check(s, &cause) == 0) {
		FUZZ_ASSERT(*s != '-' && *s != '/' && *s != '.');
		FUZZ_ASSERT(strlen(s) <= IMAGEREF_MAX);
		/* (a tag may hold "..": it names no path) */
		FUZZ_ASSERT(strstr(s, "/..") == NULL);
		FUZZ_ASSERT(strstr(s, "../") == NULL);
		FUZZ_ASSERT(strstr(s, "//") == NULL);
		for (i = 0; s[i] != '\0'; i++)
			FUZZ_ASSERT(strchr("abcdefghijklmnopqrstuvwxyz"
			    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/:@",
			    s[i]) != NULL);
	} else
		FUZZ_ASSERT(cause != NULL);
	free(cause);
	free(s);
	return (0);
}
