/*
 * test-hosts-slow.c: the file of hosts that did not answer in time: what
 * it keeps, what it drops (old, malformed, twice), and the deadlines a
 * remembered host gets.
 */

#include "gmux.h"
#include "unit.h"

#define NOW	1800000000000LL

static void
test_parse(void)
{
	char	text[] = "gpu2 1799999990000 no connection within 1s\n"
	    "old 1799000000000 too long ago\n"
	    "future 1800000000001 not yet\n"
	    "gpu2 1799999999000 twice\n"
	    "bad/name 1799999990000 x\n"
	    "gpu3 -5 negative\n"
	    "gpu4 17999x99 junk\n"
	    "noreason\n"
	    "gpu5 1799999999999 ok\n";

	CHECK(hosts_slow_parse(text, NOW) == 2);
	hosts_slow_forget();
	CHECK(hosts_slow_parse(NULL, NOW) == 0);
	hosts_slow_forget();
}

static void
test_deadlines(void)
{
	char			 text[] = "gpu2 1799999990000 why\n";
	struct remote		 a = { .name = "gpu1" }, b = { .name = "gpu2" };
	struct client_req	 q;
	char			*note;

	hosts_slow_parse(text, NOW);
	CHECK(!hosts_slow(&a) && hosts_slow(&b));
	hosts_slow_deadlines(&a, &q);
	CHECK(q.connect_ms == 1000 && q.answer_ms == 2000);
	hosts_slow_deadlines(&b, &q);
	CHECK(q.connect_ms < 1000 && q.answer_ms < 2000);
	note = hosts_slow_note(&b);
	CHECK(strstr(note, "why; asked last") != NULL);
	free(note);
	note = hosts_slow_note(&a);
	CHECK_STR(note, "");
	free(note);
	hosts_slow_forget();
}

int
main(void)
{
	RUN(test_parse);
	RUN(test_deadlines);
	UNIT_EXIT();
}
