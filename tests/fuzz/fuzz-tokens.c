/*
 * fuzz-tokens.c: the host's token file (tokens_parse).  What is accepted
 * has valid owners and hashes, clusters granted that are cluster ids,
 * each once, and lists without the hashes.
 * seeds: tests/fuzz/seeds/tokens/
 */

#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tokens	 t;
	json_t		*j;
	char		*cause = NULL;
	u_int		 i, k;

	memset(&t, 0, sizeof t);
	if (tokens_parse((const char *)data, size, &t, &cause) != 0) {
		FUZZ_ASSERT(cause != NULL && t.n == 0);
		free(cause);
		return (0);
	}
	for (i = 0; i < t.n; i++) {
		FUZZ_ASSERT(token_owner_valid(t.v[i].owner));
		FUZZ_ASSERT(digest_valid(t.v[i].hash));
		FUZZ_ASSERT(t.v[i].granted || t.v[i].nclusters == 0);
		for (k = 0; k < t.v[i].nclusters; k++) {
			FUZZ_ASSERT(token_cluster_valid(t.v[i].clusters[k]));
			FUZZ_ASSERT(token_granted(&t.v[i],
			    t.v[i].clusters[k]));
		}
	}
	j = tokens_to_json(&t, NULL);
	FUZZ_ASSERT(json_array_size(j) == t.n);
	json_decref(j);
	tokens_clear(&t);
	return (0);
}
