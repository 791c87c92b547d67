/* test-card-nvidia.c: nvidia-smi's CSV, recorded and broken. */

#include "gmux.h"
#include "card-int.h"
#include "unit.h"
#include "fixture.h"

#define MIB(n)	((uint64_t)(n) << 20)

static struct cards
parse_fixture(const char *name)
{
	return (fixture_cards(name, card_nvidia_parse));
}

static void
test_nvidia_h100x8(void)
{
	struct cards	 cs = parse_fixture("nvidia/gpus-h100x8.csv");
	u_int		 i;

	CHECK(cs.n == 8);
	for (i = 0; i < cs.n; i++) {
		CHECK(cs.v[i].index == i && cs.v[i].vendor_index == (int)i);
		CHECK(cs.v[i].vendor == VENDOR_NVIDIA && !cs.v[i].fake);
		CHECK_STR(cs.v[i].model, "NVIDIA H100 80GB HBM3");
		CHECK(cs.v[i].memory == MIB(81559));
		CHECK(cs.v[i].cus == 0);
	}
	if (cs.n == 8) {
		CHECK_STR(cs.v[0].uuid,
		    "GPU-a84bba07-931d-b925-306a-0799dc6ebd71");
		CHECK_STR(cs.v[0].bus_id, "00000000:18:00.0");
		CHECK_STR(cs.v[7].uuid,
		    "GPU-7fa42f93-ceaf-2ffb-f3e0-b6e9aba45ee6");
		CHECK_STR(cs.v[7].bus_id, "00000000:DB:00.0");
	}
	cards_free(&cs);
}

static void
test_nvidia_a100_l40s(void)
{
	struct cards	 cs = parse_fixture("nvidia/gpus-a100x4.csv");

	CHECK(cs.n == 4);
	if (cs.n == 4) {
		CHECK_STR(cs.v[3].model, "NVIDIA A100-SXM4-80GB");
		CHECK(cs.v[3].memory == MIB(81920));
		CHECK_STR(cs.v[3].bus_id, "00000000:4E:00.0");
		CHECK_STR(cs.v[1].uuid,
		    "GPU-3d8b6da2-5a43-a846-eb31-e7ea468c6414");
	}
	cards_free(&cs);
	cs = parse_fixture("nvidia/gpus-l40sx2.csv");
	CHECK(cs.n == 2);
	if (cs.n == 2) {
		CHECK_STR(cs.v[1].model, "NVIDIA L40S");
		CHECK(cs.v[1].memory == MIB(46068));
		CHECK_STR(cs.v[1].uuid,
		    "GPU-171b2f3a-9f88-9eea-f77e-e09a4496e0ed");
	}
	cards_free(&cs);
}

static void
test_nvidia_odd_output(void)
{
	struct cards	 cs = parse_fixture("nvidia/gpus-rtx4090-crlf.csv");

	CHECK(cs.n == 1);
	if (cs.n == 1) {
		CHECK_STR(cs.v[0].model, "NVIDIA GeForce RTX 4090");
		CHECK_STR(cs.v[0].bus_id, "00000000:01:00.0");
		CHECK(cs.v[0].memory == MIB(24564));
	}
	cards_free(&cs);
	cs = parse_fixture("nvidia/gpus-mixed-spacing.csv");
	CHECK(cs.n == 2);
	if (cs.n == 2) {
		CHECK_STR(cs.v[0].model, "NVIDIA A100 80GB PCIe");
		CHECK_STR(cs.v[1].model, "NVIDIA GeForce RTX 4090");
		CHECK_STR(cs.v[1].uuid,
		    "GPU-381f412a-0a4f-9fa4-2335-0b233931da53");
		CHECK(cs.v[1].memory == MIB(24564) && cs.v[1].index == 1);
		CHECK_STR(cs.v[1].bus_id, "00000000:65:00.0");
	}
	cards_free(&cs);
	cs = parse_fixture("nvidia/gpus-gb10-na.csv");
	CHECK(cs.n == 1);
	if (cs.n == 1) {
		CHECK_STR(cs.v[0].model, "NVIDIA GB10");
		CHECK(cs.v[0].memory == 0);
		CHECK_STR(cs.v[0].bus_id, "0000000F:01:00.0");
	}
	cards_free(&cs);
}

static void
test_nvidia_appends(void)
{
	struct cards	 cs = { NULL, 0 };
	char		*cause = NULL;

	CHECK(card_fake_parse("1xMI300X:192G", &cs, &cause) == 0);
	CHECK(card_nvidia_parse("0, GPU-1, NVIDIA Foo, Bar, 1024, [N/A]\n",
	    &cs, &cause) == 0);
	CHECK(cs.n == 2);
	if (cs.n == 2) {
		CHECK(cs.v[1].index == 1 && cs.v[1].vendor_index == 0);
		CHECK_STR(cs.v[1].model, "NVIDIA Foo, Bar");
		CHECK(cs.v[1].bus_id == NULL);
	}
	CHECK(card_nvidia_parse("", &cs, &cause) == 0 && cs.n == 2);
	CHECK(card_nvidia_parse("\r\n\n  \n", &cs, &cause) == 0 && cs.n == 2);
	CHECK(card_nvidia_parse("3, GPU-2, [N/A], 1, 0:1\n", &cs, &cause) == 0);
	CHECK(cs.n == 3 && strcmp(cs.v[2].model, "NVIDIA GPU") == 0);
	cards_free(&cs);
}

static void
test_nvidia_bad_gpus(void)
{
	struct cards	 cs = { NULL, 0 };
	char		*cause, *text;

	text = fixture("nvidia/failed.txt");
	CHECK_FAILS(card_nvidia_parse(text, &cs, &cause), cause,
	    "line 1: expected 5 fields");
	free(text);
	CHECK_FAILS(card_nvidia_parse("0, GPU-abc, NVIDIA H1", &cs, &cause),
	    cause, "expected 5 fields");
	CHECK_FAILS(card_nvidia_parse("\x01\xff\xfe,,,,\n", &cs, &cause),
	    cause, "index");
	CHECK_FAILS(card_nvidia_parse("0, GPU-a, H100, 99999999999999999999, "
	    "0:1\n", &cs, &cause), cause, "memory.total");
	CHECK_FAILS(card_nvidia_parse("0, GPU-a, H100, 17592186044416, 0:1\n",
	    &cs, &cause), cause, "memory.total");
	CHECK_FAILS(card_nvidia_parse("0, GPU-a, H100, -5, 0:1\n", &cs,
	    &cause), cause, "memory.total");
	CHECK_FAILS(card_nvidia_parse("-1, GPU-a, H100, 5, 0:1\n", &cs,
	    &cause), cause, "index");
	CHECK_FAILS(card_nvidia_parse("1024, GPU-a, H100, 5, 0:1\n", &cs,
	    &cause), cause, "index");
	CHECK_FAILS(card_nvidia_parse("0, [N/A], H100, 5, 0:1\n", &cs,
	    &cause), cause, "uuid");
	CHECK_FAILS(card_nvidia_parse("0, GPU-a, H\x01, 5, 0:1\n", &cs,
	    &cause), cause, "name");
	CHECK_FAILS(card_nvidia_parse("0, GPU-a, H100, 5, 0:1\n"
	    "1, GPU-a, H100, 5, 0:2\n", &cs, &cause), cause,
	    "line 2: uuid: GPU-a is listed twice");
	CHECK(cs.n == 0);	/* all or nothing */
	cards_free(&cs);
}

static void
test_nvidia_too_many(void)
{
	struct cards	 cs = { NULL, 0 };
	char		*text, *cause;
	size_t		 len = 0, i;

	text = xmalloc((CARDS_MAX + 1) * 32);
	for (i = 0; i <= CARDS_MAX; i++)
		len += (size_t)sprintf(text + len, "%zu, GPU-%zu, X, 1, 0:1\n",
		    i % CARDS_MAX, i);
	CHECK_FAILS(card_nvidia_parse(text, &cs, &cause), cause,
	    "more than 1024 cards");
	CHECK(cs.n == 0);
	free(text);
	cards_free(&cs);
}

static void
test_nvidia_apps(void)
{
	struct card_procs	 ps = { NULL, 0 };
	char			*text, *cause = NULL;

	text = fixture("nvidia/apps-h100x8.csv");
	CHECK(card_nvidia_parse_apps(text, &ps, &cause) == 0);
	free(text);
	CHECK(ps.n == 4);
	if (ps.n == 4) {
		CHECK(ps.v[0].pid == 41235 && ps.v[0].mem == MIB(20480));
		CHECK(ps.v[0].vendor == VENDOR_NVIDIA && ps.v[0].card == -1);
		CHECK_STR(ps.v[0].uuid,
		    "GPU-a84bba07-931d-b925-306a-0799dc6ebd71");
		CHECK(ps.v[2].pid == 52771 && ps.v[2].mem == MIB(79872));
		CHECK(ps.v[3].pid == 60002 && ps.v[3].mem == MIB(512));
	}
	card_procs_free(&ps);
	text = fixture("nvidia/apps-empty.csv");
	CHECK(card_nvidia_parse_apps(text, &ps, &cause) == 0 && ps.n == 0);
	free(text);
	text = fixture("nvidia/apps-mps-na.csv");
	CHECK(card_nvidia_parse_apps(text, &ps, &cause) == 0 && ps.n == 2);
	CHECK(ps.n == 2 && ps.v[1].pid == 7002 && ps.v[1].mem == CARD_UNKNOWN);
	free(text);
	CHECK(card_nvidia_parse_apps("No running processes found\n", &ps,
	    &cause) == 0 && ps.n == 2);
	CHECK_FAILS(card_nvidia_parse_apps("0, GPU-a, 1\n", &ps, &cause),
	    cause, "pid");
	CHECK_FAILS(card_nvidia_parse_apps("9999999999, GPU-a, 1\n", &ps,
	    &cause), cause, "pid");
	CHECK_FAILS(card_nvidia_parse_apps("12, GPU-a, lots\n", &ps, &cause),
	    cause, "used_memory");
	CHECK_FAILS(card_nvidia_parse_apps("12, GPU-a\n", &ps, &cause), cause,
	    "expected 3 fields");
	CHECK_FAILS(card_nvidia_parse_apps("12, GPU-a, 5\n13, , 5\n", &ps,
	    &cause), cause, "line 2: gpu_uuid");
	/* A line with one comma (fuzz-audit once read past such a line). */
	CHECK_FAILS(card_nvidia_parse_apps("/,1/\n", &ps, &cause), cause,
	    "expected 3 fields");
	/* The fields in another order (gpu_uuid first) are refused. */
	CHECK_FAILS(card_nvidia_parse_apps("GPU-a, 12, 5\n", &ps, &cause),
	    cause, "pid: 'GPU-a'");
	CHECK(ps.n == 2);
	card_procs_free(&ps);
}

static void
test_nvidia_usage(void)
{
	struct card_usages	 us = { NULL, 0 };
	char			*text, *cause = NULL;

	text = fixture("nvidia/util-h100x8.csv");
	CHECK(card_nvidia_parse_usage(text, &us, &cause) == 0);
	free(text);
	CHECK(us.n == 8);
	if (us.n == 8) {
		CHECK(us.v[0].vendor_index == 0 && us.v[0].util == 100);
		CHECK(us.v[0].mem_used == MIB(21504));
		CHECK(us.v[3].util == 97 && us.v[3].mem_used == MIB(79872));
		CHECK(us.v[7].vendor_index == 7 && us.v[7].util == 3);
		CHECK(us.v[7].vendor == VENDOR_NVIDIA);
	}
	card_usages_free(&us);
	text = fixture("nvidia/util-na.csv");
	CHECK(card_nvidia_parse_usage(text, &us, &cause) == 0 && us.n == 1);
	CHECK(us.n == 1 && us.v[0].util == -1 &&
	    us.v[0].mem_used == CARD_UNKNOWN);
	free(text);
	CHECK_FAILS(card_nvidia_parse_usage("0, 101, 5\n", &us, &cause), cause,
	    "utilization.gpu");
	CHECK_FAILS(card_nvidia_parse_usage("0, 5, 5, 5\n", &us, &cause),
	    cause, "expected 3 fields");
	CHECK(us.n == 1);
	card_usages_free(&us);
}

int
main(void)
{
	RUN(test_nvidia_h100x8);
	RUN(test_nvidia_a100_l40s);
	RUN(test_nvidia_odd_output);
	RUN(test_nvidia_appends);
	RUN(test_nvidia_bad_gpus);
	RUN(test_nvidia_too_many);
	RUN(test_nvidia_apps);
	RUN(test_nvidia_usage);
	UNIT_EXIT();
}
