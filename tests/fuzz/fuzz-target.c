/*
 * fuzz-target.c: the remote string TOKEN@HOST:PORT#PIN (target_parse).
 * What parses must format back to a string that parses the same, and no
 * error may quote the token.
 * seeds: tests/fuzz/seeds/target/
 */

#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct target	 t, t2;
	char		*s = fuzz_text(data, size), *cause = NULL, *back, *at;

	if (target_parse(s, &t, &cause) != 0) {
		FUZZ_ASSERT(cause != NULL);
		/* A token-looking prefix never shows up in the message. */
		if ((at = strchr(s, '@')) != NULL && at - s >= 16) {
			*at = '\0';
			FUZZ_ASSERT(strstr(cause, s) == NULL);
		}
		free(cause);
		free(s);
		return (0);
	}
	FUZZ_ASSERT(t.port >= 1 && t.port <= 65535);
	FUZZ_ASSERT(*t.host != '\0' && digest_valid(t.pin));
	back = target_format(&t);
	FUZZ_ASSERT(strchr(back, '\n') == NULL);
	FUZZ_ASSERT(target_parse(back, &t2, &cause) == 0);
	FUZZ_ASSERT(strcmp(t.token, t2.token) == 0);
	FUZZ_ASSERT(strcmp(t.host, t2.host) == 0 && t.port == t2.port);
	FUZZ_ASSERT(strcmp(t.pin, t2.pin) == 0);
	target_clear(&t);
	target_clear(&t2);
	free(back);
	free(s);
	return (0);
}
