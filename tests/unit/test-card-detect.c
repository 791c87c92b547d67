/*
 * test-card-detect.c: detection end to end, with fake vendor tools (shell
 * scripts that print the recorded fixtures) alone on $PATH.
 */

#include <sys/stat.h>

#include <limits.h>
#include <unistd.h>

#include <event2/event.h>

#include "gmux.h"
#include "card-int.h"
#include "unit.h"
#include "fixture.h"

static char	 tooldir[] = "/tmp/gmux-test-tools.XXXXXX";
static char	 fixdir[PATH_MAX];

/* Writes a script name into the tool directory; $F is the fixtures. */
static void
tool(const char *name, const char *body)
{
	char	*script;

	xasprintf(&script, "F=%s\n%s", fixdir, body);
	fixture_tool(tooldir, name, script);
	free(script);
}

static void
untool(const char *name)
{
	char	*path;

	xasprintf(&path, "%s/%s", tooldir, name);
	unlink(path);
	free(path);
}

static void
tools_all(void)
{
	tool("nvidia-smi", "case \"$*\" in\n"
	    "*query-gpu=index,uuid*) /bin/cat $F/nvidia/gpus-h100x8.csv;;\n"
	    "*query-compute-apps*) /bin/cat $F/nvidia/apps-h100x8.csv;;\n"
	    "*utilization*) /bin/cat $F/nvidia/util-h100x8.csv;;\n"
	    "*) exit 2;;\nesac");
	tool("amd-smi", "case \"$1\" in\n"
	    "static) /bin/cat $F/amd/amdsmi-static-mi300x.json;;\n"
	    "list) /bin/cat $F/amd/amdsmi-list-mi300x.json;;\n"
	    "process) /bin/cat $F/amd/amdsmi-process-mi300x.json;;\n"
	    "metric) /bin/cat $F/amd/amdsmi-metric-mi300x.json;;\n"
	    "*) exit 2;;\nesac");
	tool("xpu-smi", "if [ \"$2\" = -d ]; then /bin/sed "
	    "\"s/\\\"device_id\\\": 0/\\\"device_id\\\": $3/\" "
	    "$F/intel/xpusmi-detail-max1550.json; else "
	    "/bin/cat $F/intel/xpusmi-discovery-max1550x4.json; fi");
}

static void
tools_none(void)
{
	untool("nvidia-smi");
	untool("amd-smi");
	untool("rocm-smi");
	untool("xpu-smi");
}

static void
test_detect_all(void)
{
	struct cards	 cs = { NULL, 0 };
	char		*cause = NULL;
	u_int		 i;

	tools_all();
	CHECK(cards_detect(&cs, "1xH100:80G", &cause) == 0);
	CHECK(cs.n == 8 + 8 + 4 + 1);
	for (i = 0; i < cs.n; i++)
		CHECK(cs.v[i].index == i);
	if (cs.n == 21) {
		CHECK(cs.v[0].vendor == VENDOR_NVIDIA && !cs.v[0].fake);
		CHECK_STR(cs.v[7].bus_id, "00000000:DB:00.0");
		CHECK(cs.v[8].vendor == VENDOR_AMD && cs.v[8].cus == 304);
		CHECK_STR(cs.v[15].uuid,
		    "beff74a1-0000-1000-8000-9f067eeb0080");
		CHECK(cs.v[16].vendor == VENDOR_INTEL);
		CHECK(cs.v[16].memory == 137438953472ULL);
		CHECK(cs.v[19].memory == 137438953472ULL);
		CHECK(cs.v[19].vendor_index == 3);
		CHECK(cs.v[20].fake && cs.v[20].vendor == VENDOR_NVIDIA);
		CHECK(cs.v[20].memory == 80ULL << 30);
	}
	cards_free(&cs);
	tools_none();
}

static void
test_detect_procs_usage(void)
{
	struct cards		 cs = { NULL, 0 };
	struct card_procs	 ps = { NULL, 0 };
	struct card_usages	 us = { NULL, 0 };
	char			*cause = NULL;

	tools_all();
	CHECK(cards_detect(&cs, "1xMI300X:192G", &cause) == 0);
	CHECK(cards_procs(&cs, &ps, &cause) == 0);
	CHECK(ps.n == 4 + 3);
	if (ps.n == 7) {
		CHECK(ps.v[0].pid == 41235 && ps.v[0].card == 0);
		CHECK(ps.v[2].pid == 52771 && ps.v[2].card == 3);
		CHECK(ps.v[3].pid == 60002 && ps.v[3].card == 7);
		CHECK(ps.v[4].pid == 41235 && ps.v[4].card == 8);
		CHECK(ps.v[6].pid == 52771 && ps.v[6].card == 13);
	}
	CHECK(cards_usage(&cs, &us, &cause) == 0);
	CHECK(us.n == 16);
	if (us.n == 16) {
		CHECK(us.v[3].card == 3 && us.v[3].util == 97);
		CHECK(us.v[13].card == 13 && us.v[13].util == 83);
	}
	card_procs_free(&ps);
	card_usages_free(&us);
	cards_free(&cs);
	tools_none();
}

/* What an asynchronous query handed to its callback. */
struct answer {
	int	 called;
	u_int	 n;
	int	 cards[16];
	int	 util3;
	char	*cause;
};

static void
got_procs(struct card_procs *ps, const char *cause, void *arg)
{
	struct answer	*a = arg;
	u_int		 i;

	a->called++;
	a->n = ps->n;
	for (i = 0; i < ps->n && i < nitems(a->cards); i++)
		a->cards[i] = ps->v[i].card;
	a->cause = cause != NULL ? xstrdup(cause) : NULL;
}

static void
got_usage(struct card_usages *us, const char *cause, void *arg)
{
	struct answer	*a = arg;
	u_int		 i;

	a->called++;
	a->n = us->n;
	for (i = 0; i < us->n && i < nitems(a->cards); i++)
		a->cards[i] = us->v[i].card;
	a->util3 = us->n > 3 ? us->v[3].util : -2;
	a->cause = cause != NULL ? xstrdup(cause) : NULL;
}

static void
await(struct event_base *base, struct answer *a)
{
	struct timeval	 tick = { 0, 10000 };
	int64_t		 end = clock_mono_ms() + 10000;

	while (!a->called && clock_mono_ms() < end) {
		event_base_loopexit(base, &tick);
		event_base_dispatch(base);
	}
}

/* The same answers on the loop as waiting, through the same parsers. */
static void
test_detect_procs_usage_async(void)
{
	struct cards		 cs = { NULL, 0 };
	struct event_base	*base = event_base_new();
	struct answer		 a;
	char			*cause = NULL;

	proc_async_init(base);
	tools_all();
	CHECK(cards_detect(&cs, "1xMI300X:192G", &cause) == 0);
	memset(&a, 0, sizeof a);
	CHECK(cards_procs_start(&cs, got_procs, &a, &cause) == 0);
	CHECK(a.called == 0);
	await(base, &a);
	CHECK(a.called == 1 && a.n == 4 + 3 && a.cause == NULL);
	CHECK(a.cards[0] == 0 && a.cards[2] == 3 && a.cards[3] == 7);
	CHECK(a.cards[4] == 8 && a.cards[6] == 13);
	memset(&a, 0, sizeof a);
	CHECK(cards_usage_start(&cs, got_usage, &a, &cause) == 0);
	await(base, &a);
	CHECK(a.called == 1 && a.n == 16 && a.util3 == 97);
	CHECK(a.cards[3] == 3 && a.cards[13] == 13);
	/* One vendor's failure is the cause; the other's answer stays. */
	tool("amd-smi", "echo 'amd-smi: no GPU'; exit 5");
	memset(&a, 0, sizeof a);
	CHECK(cards_procs_start(&cs, got_procs, &a, &cause) == 0);
	await(base, &a);
	CHECK(a.called == 1 && a.n == 4);
	CHECK(a.cause != NULL && strstr(a.cause, "amd-smi: exit status 5"));
	free(a.cause);
	tools_none();
	/* No tool installed: nothing to ask, and no callback. */
	memset(&a, 0, sizeof a);
	CHECK(cards_procs_start(&cs, got_procs, &a, &cause) == 1);
	cards_free(&cs);
	CHECK(cards_usage_start(&cs, got_usage, &a, &cause) == 1);
	CHECK(a.called == 0);
	proc_async_init(NULL);
	event_base_free(base);
}

static void
test_detect_failures(void)
{
	struct cards	 cs = { NULL, 0 };
	char		*cause = NULL;

	tool("nvidia-smi", "/bin/cat $F/nvidia/failed.txt; exit 9");
	CHECK_FAILS(card_nvidia_detect(&cs, &cause), cause,
	    "nvidia-smi: exit status 9: NVIDIA-SMI has failed because");
	tool("nvidia-smi", "echo '0, GPU-1, H100, lots, 0:1'");
	CHECK_FAILS(card_nvidia_detect(&cs, &cause), cause,
	    "line 1: memory.total: 'lots'");
	tool("nvidia-smi", "exec /bin/sleep 5");
	card_tool_timeout(300);
	CHECK_FAILS(card_nvidia_detect(&cs, &cause), cause,
	    "nvidia-smi: did not finish within 300 ms");
	card_tool_timeout(0);
	tool("xpu-smi", "/bin/cat $F/intel/xpusmi-error.json");
	CHECK_FAILS(card_intel_detect(&cs, &cause), cause,
	    "Level Zero Initialization Error");
	/* A failing vendor does not stop the others. */
	untool("nvidia-smi");
	tool("amd-smi", "[ \"$1\" = static ] && "
	    "/bin/cat $F/amd/amdsmi-static-mi210.json || exit 3");
	CHECK(cards_detect(&cs, NULL, &cause) == 0);
	CHECK(cs.n == 1 && cs.v[0].vendor == VENDOR_AMD);
	CHECK(cs.n == 1 && strcmp(cs.v[0].uuid, "AMD-0000:03:00.0") == 0);
	cards_free(&cs);
	CHECK_FAILS(cards_detect(&cs, "1xFoo:8G", &cause), cause, "Foo");
	CHECK(cs.n == 1);	/* the real card stays, the bad fakes go */
	cards_free(&cs);
	tools_none();
}

static void
test_detect_amd_fallback(void)
{
	struct cards	 cs = { NULL, 0 };
	char		*cause = NULL;

	tool("amd-smi", "echo 'Traceback (most recent call last):'; exit 1");
	tool("rocm-smi", "/bin/cat $F/amd/rocmsmi-mi250x.json");
	CHECK(card_amd_detect(&cs, &cause) == 0);
	CHECK(cs.n == 4 && cs.v[0].vendor == VENDOR_AMD);
	CHECK(cs.n == 4 && strcmp(cs.v[0].uuid, "0x75749f1f2e27cbbe") == 0);
	cards_free(&cs);
	tool("rocm-smi", "exit 4");
	CHECK_FAILS(card_amd_detect(&cs, &cause), cause,
	    "amd-smi: exit status 1: Traceback");
	untool("amd-smi");
	CHECK_FAILS(card_amd_detect(&cs, &cause), cause,
	    "rocm-smi: exit status 4");
	CHECK(cs.n == 0);
	tools_none();
}

static void
test_detect_nothing(void)
{
	struct cards	 cs = { NULL, 0 };
	char		*cause = NULL;

	CHECK(cards_detect(&cs, NULL, &cause) == 0 && cs.n == 0);
	CHECK(cards_detect(&cs, "2xMax1550:128G", &cause) == 0 && cs.n == 2);
	cards_free(&cs);
	tools_all();
	setenv("GMUX_NO_DETECT", "1", 1);
	CHECK(cards_detect(&cs, NULL, &cause) == 0 && cs.n == 0);
	unsetenv("GMUX_NO_DETECT");
	tools_none();
}

int
main(void)
{
	if (getcwd(fixdir, sizeof fixdir - 32) == NULL ||
	    mkdtemp(tooldir) == NULL) {
		perror("test-card-detect");
		return (1);
	}
	strcat(fixdir, "/" FIXTURES);
	setenv("PATH", tooldir, 1);
	RUN(test_detect_all);
	RUN(test_detect_procs_usage);
	RUN(test_detect_procs_usage_async);
	RUN(test_detect_failures);
	RUN(test_detect_amd_fallback);
	RUN(test_detect_nothing);
	rmdir(tooldir);
	UNIT_EXIT();
}
