/* test-card-amd.c: amd-smi and rocm-smi JSON, recorded and broken. */

#include "gmux.h"
#include "card-int.h"
#include "unit.h"
#include "fixture.h"

#define MIB(n)	((uint64_t)(n) << 20)

static const char *mi300_uuids[] = {
	"7cff74a1-0000-1000-8024-20c32da5a4cf",
	"dcff74a1-0000-1000-802a-01169abdb618",
	"dcff74a1-0000-1000-80ed-651e3ada8767",
	"b2ff74a1-0000-1000-801e-fb259a591f06",
	"b0ff74a1-0000-1000-8063-9cf484c0e736",
	"66ff74a1-0000-1000-8032-dd79ab7e29ed",
	"e1ff74a1-0000-1000-8061-2035ad92bc49",
	"beff74a1-0000-1000-8000-9f067eeb0080",
};

/* Parses amd-smi static and list fixtures as detection does. */
static struct cards
amdsmi(const char *stat, const char *list)
{
	struct cards	 cs = { NULL, 0 };
	char		*text, *cause = NULL;

	text = fixture(stat);
	if (card_amd_parse_amdsmi(text, &cs, &cause) != 0) {
		fprintf(stderr, "%s: %s\n", stat, cause);
		unit_failed_checks++;
		free(cause);
		cause = NULL;
	}
	free(text);
	text = fixture(list);
	if (card_amd_parse_amdsmi_list(text, &cs, 0, &cause) != 0) {
		fprintf(stderr, "%s: %s\n", list, cause);
		unit_failed_checks++;
		free(cause);
	}
	free(text);
	return (cs);
}

static void
test_amdsmi_mi300x(void)
{
	struct cards	 cs = amdsmi("amd/amdsmi-static-mi300x.json",
	    "amd/amdsmi-list-mi300x.json");
	u_int		 i;

	CHECK(cs.n == 8);
	for (i = 0; i < cs.n && i < 8; i++) {
		CHECK(cs.v[i].vendor == VENDOR_AMD && !cs.v[i].fake);
		CHECK(cs.v[i].index == i && cs.v[i].vendor_index == (int)i);
		CHECK_STR(cs.v[i].model, "AMD Instinct MI300X");
		CHECK(cs.v[i].memory == MIB(196592));
		CHECK(cs.v[i].cus == 304);
		CHECK_STR(cs.v[i].uuid, mi300_uuids[i]);
	}
	if (cs.n == 8) {
		CHECK_STR(cs.v[0].bus_id, "0000:0c:00.0");
		CHECK_STR(cs.v[7].bus_id, "0000:df:00.0");
	}
	cards_free(&cs);
}

static void
test_amdsmi_mi250x(void)
{
	struct cards	 cs = amdsmi("amd/amdsmi-static-mi250x.json",
	    "amd/amdsmi-list-mi250x.json");

	CHECK(cs.n == 4);
	if (cs.n == 4) {
		CHECK_STR(cs.v[3].model, "AMD Instinct MI250X");
		CHECK(cs.v[3].memory == MIB(65520) && cs.v[3].cus == 110);
		CHECK(cs.v[3].vendor_index == 3);
		CHECK_STR(cs.v[3].bus_id, "0000:ce:00.0");
		CHECK_STR(cs.v[0].uuid, "52ff740c-0000-1000-801c-bdaa33822d0f");
		CHECK_STR(cs.v[3].uuid, "94ff740c-0000-1000-8064-9ddaead73b6f");
	}
	cards_free(&cs);
}

static void
test_amdsmi_mi210(void)
{
	struct cards	 cs = amdsmi("amd/amdsmi-static-mi210.json",
	    "amd/amdsmi-list-mi210.json");

	CHECK(cs.n == 1);
	if (cs.n == 1) {
		CHECK_STR(cs.v[0].model, "AMD Instinct MI210");
		CHECK(cs.v[0].memory == MIB(65520));
		CHECK(cs.v[0].cus == 0);	/* older amd-smi: no CU count */
		CHECK_STR(cs.v[0].uuid, "76ff740f-0000-1000-8029-18a03bebb6e0");
		CHECK_STR(cs.v[0].bus_id, "0000:03:00.0");
	}
	cards_free(&cs);
}

static void
test_amdsmi_shapes(void)
{
	struct cards	 cs = { NULL, 0 };
	char		*cause = NULL;

	/* Sizes as strings, bare numbers, N/A; names from the board. */
	CHECK(card_amd_parse_amdsmi("[{\"gpu\":0,\"vram\":{\"size\":"
	    "\"65520 MB\"}},{\"gpu\":1,\"vram\":{\"size\":1024},\"board\":"
	    "{\"product_name\":\"AMD Instinct MI300A\"},\"asic\":{"
	    "\"market_name\":\"N/A\",\"num_compute_units\":\"228\"}},"
	    "{\"gpu\":2,\"vram\":{\"size\":\"N/A\"}}]", &cs, &cause) == 0);
	CHECK(cs.n == 3);
	if (cs.n == 3) {
		CHECK(cs.v[0].memory == MIB(65520));
		CHECK_STR(cs.v[0].model, "AMD GPU");
		CHECK(cs.v[1].memory == MIB(1024) && cs.v[1].cus == 228);
		CHECK_STR(cs.v[1].model, "AMD Instinct MI300A");
		CHECK(cs.v[2].memory == 0 && cs.v[2].uuid == NULL);
	}
	/* amd-smi list naming a GPU static did not is ignored. */
	CHECK(card_amd_parse_amdsmi_list("[{\"gpu\":9,\"uuid\":\"x\"}]", &cs,
	    0, &cause) == 0);
	cards_free(&cs);
}

static void
test_amdsmi_bad(void)
{
	struct cards	 cs = { NULL, 0 };
	char		*cause, *text;

	CHECK_FAILS(card_amd_parse_amdsmi("", &cs, &cause), cause,
	    "no JSON");
	CHECK_FAILS(card_amd_parse_amdsmi("garbage\n", &cs, &cause), cause,
	    "no JSON");
	text = fixture("amd/amdsmi-static-mi300x.json");
	text[strlen(text) / 2] = '\0';
	CHECK_FAILS(card_amd_parse_amdsmi(text, &cs, &cause), cause,
	    "bad JSON");
	free(text);
	CHECK_FAILS(card_amd_parse_amdsmi("{\"gpus\":[]}", &cs, &cause),
	    cause, "expected a list of GPUs");
	CHECK_FAILS(card_amd_parse_amdsmi("[{\"gpu\":\"0\"}]", &cs, &cause),
	    cause, "entry 0 has no GPU index");
	CHECK_FAILS(card_amd_parse_amdsmi("[{\"gpu\":99999999999}]", &cs,
	    &cause), cause, "no GPU index");
	CHECK_FAILS(card_amd_parse_amdsmi("[{\"gpu\":0},{\"gpu\":0}]", &cs,
	    &cause), cause, "GPU 0: listed twice");
	CHECK_FAILS(card_amd_parse_amdsmi("[{\"gpu\":0,\"gpu\":1}]", &cs,
	    &cause), cause, "bad JSON");
	CHECK_FAILS(card_amd_parse_amdsmi("[{\"gpu\":0,\"vram\":{\"size\":"
	    "{\"value\":1e300,\"unit\":\"MB\"}}}, 7]", &cs, &cause), cause,
	    "entry 1");
	CHECK(cs.n == 0);
	CHECK(card_amd_parse_amdsmi("[{\"gpu\":0,\"vram\":{\"size\":{\"value\":"
	    "99999999999999,\"unit\":\"TB\"}}}]", &cs, &cause) == 0);
	CHECK(cs.n == 1 && cs.v[0].memory == 0);	/* too big: unknown */
	cards_free(&cs);
}

static void
test_rocmsmi(void)
{
	struct cards	 cs = { NULL, 0 };
	char		*text, *cause = NULL;

	text = fixture("amd/rocmsmi-mi300x.json");
	CHECK(card_amd_parse_rocmsmi(text, &cs, &cause) == 0);
	free(text);
	CHECK(cs.n == 8);
	if (cs.n == 8) {
		CHECK_STR(cs.v[7].model, "AMD Instinct MI300X");
		CHECK(cs.v[7].memory == 206141652992ULL);
		CHECK(cs.v[7].vendor_index == 7);
		CHECK_STR(cs.v[0].uuid, "0x99a4fb6bb0a42b75");
		CHECK_STR(cs.v[0].bus_id, "0000:0C:00.0");
	}
	cards_free(&cs);
	text = fixture("amd/rocmsmi-mi250x.json");
	CHECK(card_amd_parse_rocmsmi(text, &cs, &cause) == 0);
	free(text);
	CHECK(cs.n == 4);
	if (cs.n == 4) {
		CHECK_STR(cs.v[2].model,
		    "Aldebaran/MI200 [Instinct MI250X/MI250]");
		CHECK(cs.v[2].memory == 68702699520ULL);
		CHECK_STR(cs.v[3].uuid, "0x058a17f685b16eac");
	}
	cards_free(&cs);
	text = fixture("amd/rocmsmi-mi210-warning.json");
	CHECK(card_amd_parse_rocmsmi(text, &cs, &cause) == 0);
	free(text);
	CHECK(cs.n == 1 && strcmp(cs.v[0].model, "AMD Instinct MI210") == 0);
	CHECK(cs.n == 1 && cs.v[0].memory == 68702699520ULL);
	cards_free(&cs);
}

static void
test_rocmsmi_order_and_bad(void)
{
	struct cards	 cs = { NULL, 0 };
	char		*cause = NULL;

	CHECK(card_amd_parse_rocmsmi("{\"system\":{\"Driver version\":\"6\"},"
	    "\"card10\":{\"Card Model\":\"0x74a1\"},\"card2\":{}}", &cs,
	    &cause) == 0);
	CHECK(cs.n == 2);
	if (cs.n == 2) {
		CHECK(cs.v[0].vendor_index == 2 && cs.v[1].vendor_index == 10);
		CHECK_STR(cs.v[0].model, "AMD GPU");
		CHECK_STR(cs.v[1].model, "0x74a1");
	}
	cards_free(&cs);
	CHECK_FAILS(card_amd_parse_rocmsmi("[]", &cs, &cause), cause,
	    "expected an object");
	CHECK_FAILS(card_amd_parse_rocmsmi("{\"cardX\":{}}", &cs, &cause),
	    cause, "'cardX' is not a card");
	CHECK_FAILS(card_amd_parse_rocmsmi("{\"card1\":{},\"card01\":{}}", &cs,
	    &cause), cause, "listed twice");
	CHECK_FAILS(card_amd_parse_rocmsmi("{\"card0\":{},\"card1\":3}", &cs,
	    &cause), cause, "card1 is not an object");
	CHECK_FAILS(card_amd_parse_rocmsmi("{\"card0\":", &cs, &cause), cause,
	    "bad JSON");
	CHECK(cs.n == 0);
	cards_free(&cs);
}

static void
test_amd_procs(void)
{
	struct card_procs	 ps = { NULL, 0 };
	char			*text, *cause = NULL;

	text = fixture("amd/amdsmi-process-mi300x.json");
	CHECK(card_amd_parse_procs(text, &ps, &cause) == 0);
	free(text);
	CHECK(ps.n == 3);
	if (ps.n == 3) {
		CHECK(ps.v[0].pid == 41235 && ps.v[0].vendor_index == 0);
		CHECK(ps.v[0].mem == 21474836480ULL && ps.v[0].uuid == NULL);
		CHECK(ps.v[1].pid == 41240 && ps.v[1].mem == 2147483648ULL);
		CHECK(ps.v[2].pid == 52771 && ps.v[2].vendor_index == 5);
		CHECK(ps.v[2].vendor == VENDOR_AMD);
	}
	CHECK(card_amd_parse_procs("{\"gpu_data\":[{\"gpu\":1,\"process_list\":"
	    "[{\"pid\":77,\"name\":\"x\"}]}]}", &ps, &cause) == 0);
	CHECK(ps.n == 4 && ps.v[3].pid == 77 && ps.v[3].mem == CARD_UNKNOWN);
	CHECK_FAILS(card_amd_parse_procs("[{\"gpu\":0,\"process_list\":[{"
	    "\"process_info\":{\"pid\":-4}}]}]", &ps, &cause), cause,
	    "no process id");
	CHECK(ps.n == 4);
	/* VRAM as {"value", "unit": "MB"} (MiB), or as a number of bytes. */
	CHECK(card_amd_parse_procs("[{\"gpu\":0,\"process_list\":[{"
	    "\"process_info\":{\"pid\":5101,\"memory_usage\":{\"vram_mem\":"
	    "{\"value\":4096,\"unit\":\"MB\"}}}}]},{\"gpu\":1,\"process_list\":"
	    "[{\"process_info\":{\"pid\":5202,\"memory_usage\":{\"vram_mem\":"
	    "1048576}}}]}]", &ps, &cause) == 0);
	CHECK(ps.n == 6 && ps.v[4].pid == 5101 && ps.v[4].mem == MIB(4096));
	CHECK(ps.n == 6 && ps.v[5].vendor_index == 1 &&
	    ps.v[5].mem == 1048576);
	CHECK_FAILS(card_amd_parse_procs("[{", &ps, &cause), cause,
	    "bad JSON");
	CHECK(ps.n == 6);
	card_procs_free(&ps);
}

static void
test_amd_usage(void)
{
	struct card_usages	 us = { NULL, 0 };
	char			*text, *cause = NULL;

	text = fixture("amd/amdsmi-metric-mi300x.json");
	CHECK(card_amd_parse_usage(text, &us, &cause) == 0);
	free(text);
	CHECK(us.n == 8);
	if (us.n == 8) {
		CHECK(us.v[0].util == 98 && us.v[0].mem_used == MIB(22811));
		CHECK(us.v[5].util == 83 && us.v[5].mem_used == MIB(164123));
		CHECK(us.v[1].util == 0 && us.v[1].mem_used == MIB(283));
	}
	card_usages_free(&us);
	text = fixture("amd/amdsmi-metric-mi250x.json");
	CHECK(card_amd_parse_usage(text, &us, &cause) == 0);
	free(text);
	CHECK(us.n == 4);
	if (us.n == 4) {
		CHECK(us.v[0].util == 100 && us.v[0].mem_used == MIB(30102));
		CHECK(us.v[2].util == -1 && us.v[2].vendor_index == 2);
	}
	CHECK_FAILS(card_amd_parse_usage("[1]", &us, &cause), cause,
	    "no GPU index");
	CHECK(us.n == 4);
	card_usages_free(&us);
}

int
main(void)
{
	RUN(test_amdsmi_mi300x);
	RUN(test_amdsmi_mi250x);
	RUN(test_amdsmi_mi210);
	RUN(test_amdsmi_shapes);
	RUN(test_amdsmi_bad);
	RUN(test_rocmsmi);
	RUN(test_rocmsmi_order_and_bad);
	RUN(test_amd_procs);
	RUN(test_amd_usage);
	UNIT_EXIT();
}
