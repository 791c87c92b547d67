/*
 * fuzz-doctor-etcd.c: gmux doctor reading an etcd's answer to GET /version.
 * seeds: tests/fuzz/seeds/doctor-etcd
 */

#include "fuzz.h"
#include "doctor-int.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	*text = fuzz_text(data, size), *seen = NULL;
	int	 rc;

	rc = doctor_etcd_answer(text, &seen);
	FUZZ_ASSERT(seen != NULL && strlen(seen) <= size + 32);
	if (rc == 0)
		FUZZ_ASSERT(strncmp(seen, "etcd ", 5) == 0 &&
		    strchr(seen, '\n') == NULL);
	free(seen);
	free(text);
	return (0);
}
