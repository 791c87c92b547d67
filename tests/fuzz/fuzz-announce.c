/*
 * fuzz-announce.c: a LAN announcement as gmux remote discover reads it
 * (announce.c): any bytes, NULs included; what is accepted is well formed.
 * seeds: tests/fuzz/seeds/announce/
 */

#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct announce	 a;
	char		*cause = NULL;

	if (announce_parse((const char *)data, size, &a, &cause) != 0) {
		FUZZ_ASSERT(cause != NULL);
		free(cause);
		return (0);
	}
	FUZZ_ASSERT(a.naddrs >= 1 && a.naddrs <= ANNOUNCE_ADDRS_MAX);
	FUZZ_ASSERT(a.port != 0 && *a.name != '\0');
	FUZZ_ASSERT(strlen(a.pin) == DIGEST_HEX - 1);
	return (0);
}
