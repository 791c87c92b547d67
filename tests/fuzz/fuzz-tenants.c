/*
 * fuzz-tenants.c: the tenants' records file (tenants.json) and the
 * PYTHON_INTERPRETERS list; the first byte picks which.
 * seeds: tests/fuzz/seeds/tenants/
 */

#include "fuzz.h"
#include "tenant-int.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tenant	*t;
	char		*text, *path = NULL, *cause = NULL;

	if (size == 0)
		return (0);
	text = fuzz_text(data + 1, size - 1);
	if (data[0] & 1) {
		setenv("GMUX_PYTHON_INTERPRETERS", text, 1);
		if (tenant_python("py3", &path, &cause) == 0)
			FUZZ_ASSERT(path != NULL && *path == '/' &&
			    cause == NULL);
		else
			FUZZ_ASSERT(path == NULL && cause != NULL);
	} else {
		tenants_parse(text, size - 1);
		TAILQ_FOREACH(t, tenants_all(), entry) {
			FUZZ_ASSERT(token_owner_valid(t->name));
			FUZZ_ASSERT(*t->home == '/' && *t->account != '-');
			json_decref(tenant_to_json(t));
		}
		tenants_reset();
	}
	free(path);
	free(cause);
	free(text);
	return (0);
}
