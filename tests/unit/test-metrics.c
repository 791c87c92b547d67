/* test-metrics.c: the /metrics page, exactly, and its documentation. */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "unit.h"

static const char expected[] =
    "# HELP gmux_build_info The running gmux's version; always 1.\n"
    "# TYPE gmux_build_info gauge\n"
    "gmux_build_info{version=\"0.1.0\"} 1\n"
    "# HELP gmux_start_time_seconds When the daemon started, in seconds "
    "since the epoch.\n"
    "# TYPE gmux_start_time_seconds gauge\n"
    "gmux_start_time_seconds 1793491200.5\n"
    "# HELP gmux_card_info A card the daemon manages; always 1.\n"
    "# TYPE gmux_card_info gauge\n"
    "gmux_card_info{card=\"0\",vendor=\"nvidia\",model=\"H100\","
    "uuid=\"GPU-1\"} 1\n"
    "gmux_card_info{card=\"1\",vendor=\"fake\",model=\"a \\\"b\\\" "
    "\\\\c\\n\",uuid=\"\"} 1\n"
    "# HELP gmux_card_memory_bytes Memory of the card in bytes.\n"
    "# TYPE gmux_card_memory_bytes gauge\n"
    "gmux_card_memory_bytes{card=\"0\"} 85899345920\n"
    "gmux_card_memory_bytes{card=\"1\"} 1073741824\n"
    "# HELP gmux_card_memory_allocated_bytes Sum of the memory caps of "
    "the jobs on the card, in bytes.\n"
    "# TYPE gmux_card_memory_allocated_bytes gauge\n"
    "gmux_card_memory_allocated_bytes{card=\"0\"} 42949672960\n"
    "gmux_card_memory_allocated_bytes{card=\"1\"} 0\n"
    "# HELP gmux_card_share_allocated Guaranteed compute share allocated "
    "on the card (0 to 1).\n"
    "# TYPE gmux_card_share_allocated gauge\n"
    "gmux_card_share_allocated{card=\"0\"} 0.75\n"
    "gmux_card_share_allocated{card=\"1\"} 0\n"
    "# HELP gmux_card_share_burst Compute share granted above their "
    "guarantees to bursting jobs (0 to 1).\n"
    "# TYPE gmux_card_share_burst gauge\n"
    "gmux_card_share_burst{card=\"0\"} 0.25\n"
    "gmux_card_share_burst{card=\"1\"} 0\n"
    "# HELP gmux_card_jobs Running jobs on the card.\n"
    "# TYPE gmux_card_jobs gauge\n"
    "gmux_card_jobs{card=\"0\"} 2\n"
    "gmux_card_jobs{card=\"1\"} 0\n"
    "# HELP gmux_card_utilization_ratio Measured compute utilization of "
    "the card (0 to 1); absent where it cannot be measured.\n"
    "# TYPE gmux_card_utilization_ratio gauge\n"
    "gmux_card_utilization_ratio{card=\"0\"} 0.4\n"
    "# HELP gmux_jobs Jobs the daemon knows, by state.\n"
    "# TYPE gmux_jobs gauge\n"
    "gmux_jobs{state=\"queued\"} 1\n"
    "gmux_jobs{state=\"running\"} 2\n"
    "gmux_jobs{state=\"exited\"} 7\n"
    "# HELP gmux_queue_length Jobs waiting for room on a card.\n"
    "# TYPE gmux_queue_length gauge\n"
    "gmux_queue_length 1\n"
    "# HELP gmux_usage_share_seconds_total Guaranteed compute used, per "
    "owner, in share-seconds (a whole card for one second is 1), since "
    "the books began.\n"
    "# TYPE gmux_usage_share_seconds_total counter\n"
    "gmux_usage_share_seconds_total{owner=\"alice\"} 4500\n"
    "gmux_usage_share_seconds_total{owner=\"bob\"} 0.00001\n"
    "# HELP gmux_usage_memory_byte_seconds_total Memory caps held, per "
    "owner, in byte-seconds, since the books began.\n"
    "# TYPE gmux_usage_memory_byte_seconds_total counter\n"
    "gmux_usage_memory_byte_seconds_total{owner=\"alice\"} "
    "386547056640000\n"
    "gmux_usage_memory_byte_seconds_total{owner=\"bob\"} 0.5\n";

static void
test_render(void)
{
	struct metrics_card	 cards[2] = {
		{ 0, "nvidia", "H100", "GPU-1", 80ULL << 30, 75, 25,
		    40ULL << 30, 2, 0.4 },
		{ 1, "fake", "a \"b\" \\c\n", NULL, 1ULL << 30, 0, 0, 0, 0,
		    -1 },
	};
	struct metrics_state	 states[3] = {
		{ "queued", 1 }, { "running", 2 }, { "exited", 7 },
	};
	struct ledger_total	 owners[2] = {
		{ (char *)"alice", 450000000, 386547056640000.0 },
		{ (char *)"bob", 1, 0.5 },
	};
	struct metrics_input	 in = {
		"0.1.0", 1793491200500LL, cards, 2, states, 3, 1, owners, 2
	};
	char			*s;

	s = metrics_render(&in);
	CHECK_STR(s, expected);
	free(s);
}

/* Every metric on the page is documented in docs/metrics.md. */
static void
test_documented(void)
{
	char	*doc, *cause = NULL, name[128], want[140];
	char	*p;
	size_t	 len;

	doc = read_file("docs/metrics.md", 1 << 20, &len, &cause);
	CHECK(doc != NULL);
	if (doc == NULL)
		return;
	for (p = strstr(expected, "# TYPE "); p != NULL;
	    p = strstr(p + 1, "# TYPE ")) {
		if (sscanf(p, "# TYPE %127s", name) != 1)
			continue;
		snprintf(want, sizeof want, "`%s`", name);
		if (strstr(doc, want) == NULL) {
			fprintf(stderr, "%s is not in docs/metrics.md\n", name);
			CHECK(0);
		}
	}
	free(doc);
}

int
main(void)
{
	RUN(test_render);
	RUN(test_documented);
	UNIT_EXIT();
}
