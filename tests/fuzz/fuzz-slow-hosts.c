/*
 * fuzz-slow-hosts.c: the client's file of hosts that did not answer in
 * time (hosts-slow.c).
 * seeds: tests/fuzz/seeds/slow-hosts/
 */

#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	*text = fuzz_text(data, size);
	u_int	 n;

	n = hosts_slow_parse(text, 1800000000000LL);
	FUZZ_ASSERT(n <= 64);
	hosts_slow_forget();
	free(text);
	return (0);
}
