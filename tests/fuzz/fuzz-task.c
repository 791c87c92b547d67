/*
 * fuzz-task.c: a task frame's payload (header length, JSON, bytes) and a
 * task journal replayed into a broker, which must stay consistent.
 */

#include "fuzz.h"
#include "task-int.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct task_broker	*b;
	struct task		*t;
	const u_char		*rest;
	size_t			 len, n = 0;
	json_t			*hdr;

	if ((hdr = task_payload_parse(data, size, &rest, &len)) != NULL) {
		FUZZ_ASSERT(json_is_object(hdr));
		FUZZ_ASSERT(rest >= data && rest + len == data + size);
		json_decref(hdr);
	}
	b = task_broker_create();
	task_spool_replay(b, (const char *)data, size);
	TAILQ_FOREACH(t, &b->tasks, entry) {
		FUZZ_ASSERT(task_find(b, t->session, t->cid) == t);
		FUZZ_ASSERT(t->state != TASK_LEASED);
		n++;
	}
	FUZZ_ASSERT(hmap_count(b->bykey) == n);
	task_broker_free(b);
	return (0);
}
