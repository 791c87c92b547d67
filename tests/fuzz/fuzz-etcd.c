/*
 * fuzz-etcd.c: the parser of etcd's gateway replies (range, txn, lease,
 * election, watch lines): every decoded key is a C string, every value
 * has its stated length, and a failure leaves a cause.
 * seeds: tests/fuzz/seeds/etcd/
 */

#include "cluster-int.h"
#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct etcd_reply	 r;
	char			*cause = NULL;
	u_int			 i;
	int			 rc;

	rc = etcd_reply_parse((const char *)data, size, &r, &cause);
	if (rc != 0)
		FUZZ_ASSERT(rc == -1 && cause != NULL && *cause != '\0');
	else {
		FUZZ_ASSERT(cause == NULL);
		for (i = 0; i < r.nkvs; i++) {
			FUZZ_ASSERT(r.kvs[i].key != NULL);
			FUZZ_ASSERT(r.kvs[i].value != NULL);
			FUZZ_ASSERT(r.kvs[i].value[r.kvs[i].vlen] == '\0');
			FUZZ_ASSERT(etcd_reply_find(&r, r.kvs[i].key) != NULL);
		}
	}
	etcd_reply_clear(&r);
	free(cause);
	return (0);
}
