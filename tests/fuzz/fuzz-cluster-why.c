/*
 * fuzz-cluster-why.c: what queued cluster jobs wait for (cluster-why.c),
 * from a range of the cluster's keys as etcd's gateway sends it: whatever
 * the member, assignment and queue records hold, corrupt or not, every
 * queued job whose request parses gets a reason, and nothing breaks.
 * seeds: tests/fuzz/seeds/cluster-why/
 */

#include "cluster-int.h"
#include "fuzz.h"

#define FUZZ_PREFIX	"/gmux/f/"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cluster	 c;
	static char		 prefix[] = FUZZ_PREFIX;
	struct etcd_reply	 r;
	struct cluster_shape	 s;
	json_t			*v[64], *o;
	u_int			 i, n = 0;
	char			*cause = NULL;

	c.prefix = prefix;
	cluster = &c;
	if (etcd_reply_parse((const char *)data, size, &r, &cause) != 0)
		goto out;
	for (i = 0; i < r.nkvs && n < nitems(v); i++) {
		if (strncmp(r.kvs[i].key, FUZZ_PREFIX "q/", 10) != 0)
			continue;
		o = json_loadb(r.kvs[i].value, r.kvs[i].vlen, 0, NULL);
		if (json_is_object(o))
			v[n++] = o;
		else
			json_decref(o);
	}
	cluster_why(v, n, &r);
	for (i = 0; i < n; i++) {
		if (cluster_shape_parse(v[i], &s, &cause) == 0)
			FUZZ_ASSERT(json_is_string(json_object_get(v[i],
			    "waits_for")));
		free(cause);
		cause = NULL;
		json_decref(v[i]);
	}
out:
	etcd_reply_clear(&r);
	free(cause);
	cluster = NULL;
	return (0);
}
