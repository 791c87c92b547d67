/*
 * fuzz-cluster-workers.c: a member's answer to GET /v1/workers?here=1 as
 * the merged listing takes it (cluster-workers.c).  Input: the status
 * (0: the member did not answer) on the first line, then the body.
 * seeds: tests/fuzz/seeds/cluster-workers/
 */

#include "fuzz.h"
#include "cluster-int.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	*s = fuzz_text(data, size), *body;
	json_t	*hosts = json_object(), *out, *w;
	size_t	 i;
	int	 code;

	if ((body = strchr(s, '\n')) != NULL)
		*body++ = '\0';
	code = atoi(s);
	if (code == 0)
		cluster_workers_take(hosts, "b", 0, NULL, 0, "no answer");
	else
		cluster_workers_take(hosts, "b", code, body != NULL ? body : "",
		    body != NULL ? size - (size_t)(body - s) : 0, NULL);
	cluster_workers_take(hosts, "a", 200, "[]", 2, NULL);
	out = cluster_workers_merge(hosts);
	/* each row an object of member b's, or the row that says b is gone */
	FUZZ_ASSERT(json_is_array(out));
	json_array_foreach(out, i, w) {
		FUZZ_ASSERT(json_is_object(w));
		FUZZ_ASSERT(strcmp(json_string_value(json_object_get(w,
		    "host")), "b") == 0);
	}
	if (code != 200)
		FUZZ_ASSERT(json_array_size(out) == 1 && strcmp(
		    json_string_value(json_object_get(json_array_get(out, 0),
		    "state")), "missing") == 0);
	json_decref(out);
	json_decref(hosts);
	free(s);
	return (0);
}
