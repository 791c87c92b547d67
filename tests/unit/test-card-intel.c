/* test-card-intel.c: xpu-smi discovery JSON, recorded and broken. */

#include "gmux.h"
#include "card-int.h"
#include "unit.h"
#include "fixture.h"

static struct cards
parse_fixture(const char *name)
{
	return (fixture_cards(name, card_intel_parse));
}

static void
test_intel_max1550(void)
{
	struct cards	 cs;
	u_int		 i;

	cs = parse_fixture("intel/xpusmi-discovery-max1550x4.json");
	CHECK(cs.n == 4);
	for (i = 0; i < cs.n; i++) {
		CHECK(cs.v[i].vendor == VENDOR_INTEL && !cs.v[i].fake);
		CHECK(cs.v[i].vendor_index == (int)i);
		CHECK_STR(cs.v[i].model, "Intel(R) Data Center GPU Max 1550");
		CHECK(cs.v[i].memory == 0);	/* the list has none */
	}
	if (cs.n == 4) {
		CHECK_STR(cs.v[0].uuid, "00000000-0000-0029-0000-00000bd58086");
		CHECK_STR(cs.v[3].bus_id, "0000:ca:00.0");
	}
	cards_free(&cs);
	cs = parse_fixture("intel/xpusmi-detail-max1550.json");
	CHECK(cs.n == 1);
	if (cs.n == 1) {
		CHECK(cs.v[0].vendor_index == 0);
		CHECK(cs.v[0].memory == 137438953472ULL);
		CHECK_STR(cs.v[0].model, "Intel(R) Data Center GPU Max 1550");
		CHECK_STR(cs.v[0].bus_id, "0000:29:00.0");
	}
	cards_free(&cs);
}

static void
test_intel_flex_sriov(void)
{
	struct cards	 cs;

	cs = parse_fixture("intel/xpusmi-discovery-flex170x2-sriov.json");
	CHECK(cs.n == 2);	/* the four VFs are skipped */
	if (cs.n == 2) {
		CHECK(cs.v[0].vendor_index == 0 && cs.v[1].vendor_index == 3);
		CHECK_STR(cs.v[1].bus_id, "0000:8e:00.0");
		CHECK_STR(cs.v[1].model, "Intel(R) Data Center GPU Flex 170");
		CHECK_STR(cs.v[1].uuid, "00000000-0000-008e-0000-000056c08086");
	}
	cards_free(&cs);
	cs = parse_fixture("intel/xpusmi-detail-flex170.json");
	CHECK(cs.n == 1 && cs.v[0].memory == 17179869184ULL);
	cards_free(&cs);
}

static void
test_intel_a770(void)
{
	struct cards	 cs = parse_fixture("intel/xpusmi-discovery-a770.json");

	CHECK(cs.n == 1);
	if (cs.n == 1) {
		CHECK_STR(cs.v[0].model, "Intel(R) Arc(TM) A770 Graphics");
		CHECK(cs.v[0].memory == 17102532608ULL);
		CHECK_STR(cs.v[0].uuid, "00000000-0000-0003-0000-000056a08086");
		CHECK_STR(cs.v[0].bus_id, "0000:03:00.0");
	}
	cards_free(&cs);
}

static void
test_intel_shapes(void)
{
	struct cards	 cs = { NULL, 0 };
	char		*cause = NULL;

	CHECK(card_intel_parse("{\"device_list\":[{\"device_id\":2,"
	    "\"device_type\":\"NNP\"},{\"device_id\":\"1\","
	    "\"memory_physical_size\":\"16288.50\"},{\"device_id\":0,"
	    "\"device_function_type\":\"virtual\"}]}", &cs, &cause) == 0);
	CHECK(cs.n == 2);	/* no PF beside it: the VF stays */
	if (cs.n == 2) {
		CHECK(cs.v[0].vendor_index == 1);
		CHECK(cs.v[0].memory == (16288ULL << 20) + (1ULL << 19));
		CHECK_STR(cs.v[0].model, "Intel GPU");
		CHECK(cs.v[1].vendor_index == 0 && cs.v[1].uuid == NULL);
	}
	cards_free(&cs);
	CHECK(card_intel_parse("{\"device_list\":[]}", &cs, &cause) == 0);
	CHECK(cs.n == 0);
}

static void
test_intel_bad(void)
{
	struct cards	 cs = { NULL, 0 };
	char		*cause, *text;

	text = fixture("intel/xpusmi-error.json");
	CHECK_FAILS(card_intel_parse(text, &cs, &cause), cause,
	    "xpu-smi discovery: Level Zero Initialization Error");
	free(text);
	CHECK_FAILS(card_intel_parse("", &cs, &cause), cause, "no JSON");
	CHECK_FAILS(card_intel_parse("[1,2]", &cs, &cause), cause,
	    "expected a device_list");
	CHECK_FAILS(card_intel_parse("{\"device_list\":[{\"device_id\":0},"
	    "{\"device_id\":0}]}", &cs, &cause), cause, "listed twice");
	CHECK_FAILS(card_intel_parse("{\"device_list\":[{\"device_id\":0},"
	    "{\"device_name\":\"x\"}]}", &cs, &cause), cause,
	    "without a device_id");
	CHECK_FAILS(card_intel_parse("{\"device_list\":[3]}", &cs, &cause),
	    cause, "without a device_id");
	CHECK_FAILS(card_intel_parse("{\"device_list\":[{\"device_id\":-1}]}",
	    &cs, &cause), cause, "without a device_id");
	text = fixture("intel/xpusmi-discovery-max1550x4.json");
	text[strlen(text) - 20] = '\0';
	CHECK_FAILS(card_intel_parse(text, &cs, &cause), cause, "bad JSON");
	free(text);
	CHECK(cs.n == 0);
	cards_free(&cs);
}

int
main(void)
{
	RUN(test_intel_max1550);
	RUN(test_intel_flex_sriov);
	RUN(test_intel_a770);
	RUN(test_intel_shapes);
	RUN(test_intel_bad);
	UNIT_EXIT();
}
