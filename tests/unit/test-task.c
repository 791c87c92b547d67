/* test-task.c: the task broker's pure part: leases, attempts, deadlines. */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "task-int.h"
#include "unit.h"

#define S1	"0123456789abcdef"
#define S2	"fedcba9876543210"

static void
test_names(void)
{
	CHECK(task_pool_valid("share=0.25,mem=8G:py3.11"));
	CHECK(!task_pool_valid(""));
	CHECK(!task_pool_valid("a/b"));
	CHECK(!task_pool_valid("a b"));
	CHECK(task_session_valid(S1));
	CHECK(!task_session_valid("0123"));
	CHECK(!task_session_valid("0123456789abcdeg"));
	CHECK(task_file_valid("v-1.pkl"));
	CHECK(!task_file_valid("../x"));
	CHECK(!task_file_valid(".hidden"));
	CHECK(!task_file_valid("a/b"));
	CHECK(!task_file_valid(""));
}

static void
test_order_and_dedup(void)
{
	struct task_broker	*b = task_broker_create();
	struct task_worker	*w;
	struct task		*t1, *t2, *t;
	int			 isnew;

	t1 = task_submit(b, "alice", S1, 1, "p", 0, &isnew);
	CHECK(isnew);
	t2 = task_submit(b, "alice", S1, 2, "p", 0, &isnew);
	CHECK(task_submit(b, "alice", S1, 1, "p", 0, &isnew) == t1);
	CHECK(!isnew);
	CHECK(task_find(b, S1, 2) == t2);
	CHECK(task_find(b, S2, 2) == NULL);
	w = task_worker_add(b, "alice", "p");
	CHECK(task_lease(b, w, 0) == t1);
	CHECK(task_lease(b, w, 0) == NULL);	/* one at a time */
	CHECK(task_complete(b, w, t2->id) == NULL);	/* not its task */
	t = task_complete(b, w, t1->id);
	CHECK(t == t1 && t1->state == TASK_DONE && w->done == 1);
	CHECK(task_lease(b, w, 0) == t2);
	task_broker_free(b);
}

/* The idle list hands the next lease to the worker idle longest. */
static void
test_longest_idle_first(void)
{
	struct task_broker	*b = task_broker_create();
	struct task_worker	*w1, *w2;
	struct task		*t1, *t2;
	int			 isnew;

	w1 = task_worker_add(b, "alice", "p");
	w2 = task_worker_add(b, "alice", "p");
	CHECK(TAILQ_FIRST(&b->idle) == w1);
	t1 = task_submit(b, "alice", S1, 1, "p", 0, &isnew);
	t2 = task_submit(b, "alice", S1, 2, "p", 0, &isnew);
	CHECK(task_lease(b, w1, 0) == t1);
	CHECK(TAILQ_FIRST(&b->idle) == w2 && TAILQ_NEXT(w2, ientry) == NULL);
	CHECK(task_complete(b, w1, t1->id) == t1);
	CHECK(TAILQ_FIRST(&b->idle) == w2);	/* w1 went behind it */
	CHECK(TAILQ_NEXT(w2, ientry) == w1);
	CHECK(task_lease(b, w2, 0) == t2);
	CHECK(task_lose(b, t2, "killed") == 0);	/* back, and w2 idle */
	CHECK(TAILQ_FIRST(&b->idle) == w1 && TAILQ_NEXT(w1, ientry) == w2);
	CHECK(task_lease(b, w1, 0) == t2);
	CHECK(task_worker_remove(b, w1, "gone") == NULL);
	CHECK(TAILQ_FIRST(&b->idle) == w2 && TAILQ_NEXT(w2, ientry) == NULL);
	CHECK(task_worker_remove(b, w2, "gone") == NULL);
	CHECK(TAILQ_EMPTY(&b->idle));
	task_broker_free(b);
}

static void
test_owner_and_pool(void)
{
	struct task_broker	*b = task_broker_create();
	struct task_worker	*bob, *other;
	int			 isnew;

	task_submit(b, "alice", S1, 1, "p", 0, &isnew);
	bob = task_worker_add(b, "bob", "p");
	other = task_worker_add(b, "alice", "q");
	CHECK(task_lease(b, bob, 0) == NULL);
	CHECK(task_lease(b, other, 0) == NULL);
	task_broker_free(b);
}

static void
test_lost_three_times(void)
{
	struct task_broker	*b = task_broker_create();
	struct task_worker	*w;
	struct task		*t, *t2;
	int			 isnew, i;

	t = task_submit(b, "alice", S1, 1, "p", 0, &isnew);
	t2 = task_submit(b, "alice", S1, 2, "p", 0, &isnew);
	for (i = 1; i <= 3; i++) {
		w = task_worker_add(b, "alice", "p");
		CHECK(task_lease(b, w, 0) == t);	/* back at the head */
		CHECK(t->attempts == (u_int)i);
		CHECK(task_worker_remove(b, w, "killed") == (i == 3 ? t :
		    NULL));
	}
	CHECK(t->state == TASK_FAILED);
	CHECK_STR(t->error, "lost 3 times: killed");
	w = task_worker_add(b, "alice", "p");
	CHECK(task_lease(b, w, 0) == t2);
	CHECK(task_lose(b, t2, "child killed by signal 9") == 0);
	CHECK(t2->state == TASK_QUEUED && w->task == NULL);
	task_broker_free(b);
}

static void
test_deadline(void)
{
	struct task_broker	*b = task_broker_create();
	struct task_worker	*w;
	struct task		*t;
	int			 isnew;

	t = task_submit(b, "alice", S1, 1, "p", 500, &isnew);
	w = task_worker_add(b, "alice", "p");
	CHECK(task_lease(b, w, 1000) == t);
	CHECK(task_expired(b, 1499) == NULL);
	CHECK(task_expired(b, 1500) == t);
	task_fail(b, t, "timed out after %d ms", 500);
	CHECK(t->state == TASK_FAILED && w->task == NULL);
	CHECK(task_expired(b, 5000) == NULL);
	task_drop(b, t);
	CHECK(task_find(b, S1, 1) == NULL);
	task_broker_free(b);
}

static void
test_withdraw(void)
{
	struct task_broker	*b = task_broker_create();
	struct task_worker	*w;
	struct task		*t1, *t2, *t3, *other;
	int			 isnew;

	t1 = task_submit(b, "alice", S1, 1, "p", 0, &isnew);
	t2 = task_submit(b, "alice", S1, 2, "p", 0, &isnew);
	t3 = task_submit(b, "alice", S1, 3, "p", 0, &isnew);
	other = task_submit(b, "alice", S2, 1, "p", 0, &isnew);
	w = task_worker_add(b, "alice", "p");
	CHECK(task_lease(b, w, 0) == t1);		/* leased: it stays */
	CHECK(task_withdraw(b, "bob", S1, "p", "x") == NULL);
	CHECK(task_withdraw(b, "alice", S1, "q", "x") == NULL);
	CHECK(task_withdraw(b, "alice", S1, "p", "no worker") == t2);
	CHECK(t2->state == TASK_FAILED);
	CHECK_STR(t2->error, "no worker");
	CHECK(task_withdraw(b, "alice", S1, "p", "no worker") == t3);
	CHECK(task_withdraw(b, "alice", S1, "p", "no worker") == NULL);
	CHECK(t1->state == TASK_LEASED && other->state == TASK_QUEUED);
	CHECK(task_complete(b, w, t1->id) == t1);
	CHECK(task_lease(b, w, 0) == other);		/* another session's */
	task_broker_free(b);
}

int
main(void)
{
	RUN(test_names);
	RUN(test_order_and_dedup);
	RUN(test_longest_idle_first);
	RUN(test_owner_and_pool);
	RUN(test_lost_three_times);
	RUN(test_deadline);
	RUN(test_withdraw);
	UNIT_EXIT();
}
