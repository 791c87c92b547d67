/*
 * test-top.c: gmux top's frames, exactly.  With --loop FILE it runs the
 * live loop on snapshots read from FILE, for tests/regress/test_top.py to
 * drive through tmux.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "unit.h"

#define T0	1793491200000LL		/* 2026-11-01T00:00:00Z */

static const char snapshot[] =
    "{\"cards\": [{\"index\": 0, \"vendor\": \"nvidia\", \"model\": \"H100\","
    " \"memory\": 85899345920, \"share_free\": 0.25, \"guaranteed\": 0.75,"
    " \"burst\": 0.25, \"mem_used\": 42949672960, \"util\": 0.4},"
    " {\"index\": 1, \"vendor\": \"fake\", \"model\": \"F\\u001b[2J\","
    " \"memory\": 1073741824, \"share_free\": 1.0, \"mem_free\": 1073741824}],"
    " \"jobs\": ["
    " {\"id\": \"j3\", \"owner\": \"carol\", \"share\": 0.5,"
    " \"mem\": 21474836480, \"state\": \"queued\", \"card\": -1},"
    " {\"id\": \"j1\", \"owner\": \"alice\", \"share\": 0.5,"
    " \"mem\": 21474836480, \"state\": \"running\", \"card\": 0,"
    " \"started\": 1793487477000},"
    " {\"id\": 2, \"owner\": \"bob-with-a-long-name\", \"share\": 25,"
    " \"mem\": 21474836480, \"state\": \"running\", \"card\": 0,"
    " \"started\": 1793401139000},"
    " {\"id\": \"j4\", \"owner\": \"dan\", \"share\": 1.0, \"mem\": 1073741824,"
    " \"state\": \"exited\", \"card\": 1, \"started\": 1793491080000,"
    " \"ended\": 1793491140000}]}";

static char *
render(u_int w, u_int h)
{
	json_t		*j;
	json_error_t	 err;
	char		*s;

	j = json_loads(snapshot, 0, &err);
	CHECK(j != NULL);
	s = top_render(j, j, w, h, T0 + 500);
	json_decref(j);
	return (s);
}

static void
test_frame(void)
{
	char	*s = render(80, 0);

	CHECK_STR(s,
	    "gmux top  2026-11-01T00:00:00Z  2 cards  4 jobs: 2 running, "
	    "1 queued\n"
	    "card 0  nvidia H100  80G  2 jobs\n"
	    "  guaranteed [###########....] 75%        burst      "
	    "[####...........] 25%\n"
	    "  memory     [########.......] 40G/80G    util       "
	    "[######.........] 40%\n"
	    "card 1  fake F?[2J  1G  0 jobs\n"
	    "  guaranteed [...............] 0%         burst      "
	    "[...............] 0%\n"
	    "  memory     [...............] 0B/1G      util       "
	    "[...............] n/a\n"
	    "JOB    OWNER      CARD SHARE MEM    STATE     RUNTIME\n"
	    "j1     alice      0    0.50  20G    running   1:02:03\n"
	    "j2     bob-with-a 0    0.25  20G    running   1d 01:01:01\n"
	    "j3     carol      -    0.50  20G    queued    -\n"
	    "j4     dan        1    1.00  1G     exited    1:00\n");
	free(s);
}

static void
test_small(void)
{
	char	*s;

	/* Ten lines: the last says what did not fit. */
	s = render(80, 10);
	CHECK(s != NULL && strstr(s, "j1     alice") != NULL);
	CHECK(s != NULL && strstr(s, "j2 ") == NULL);
	CHECK(s != NULL && strlen(s) > 16 &&
	    strcmp(s + strlen(s) - 16, "... 3 more jobs\n") == 0);
	free(s);

	/* Narrow: bars shrink to five, lines are cut at the width. */
	s = render(40, 4);
	CHECK_STR(s,
	    "gmux top  2026-11-01T00:00:00Z  2 cards\n"
	    "card 0  nvidia H100  80G  2 jobs\n"
	    "  guaranteed [####.] 75%        burst\n"
	    "  memory     [###..] 40G/80G    util\n");
	free(s);

	/* Wide: bars grow. */
	s = render(120, 3);
	CHECK(s != NULL && strstr(s, "[##########################"
	    ".........] 75%") != NULL);
	free(s);
}

static void
test_empty(void)
{
	char	*s;

	s = top_render(NULL, NULL, 80, 0, T0);
	CHECK_STR(s, "gmux top  2026-11-01T00:00:00Z  0 cards  0 jobs: "
	    "0 running, 0 queued\n"
	    "JOB    OWNER      CARD SHARE MEM    STATE     RUNTIME\n");
	free(s);
}

/* The snapshot file is read afresh each time: tests change it. */
static int
fetch_file(void *arg, json_t **cards, json_t **jobs, char **cause)
{
	json_error_t	 err;
	json_t		*j;

	if ((j = json_load_file(arg, 0, &err)) == NULL) {
		xasprintf(cause, "%s: %s", (char *)arg, err.text);
		return (-1);
	}
	*cards = json_incref(j);
	*jobs = j;
	return (0);
}

int
main(int argc, char **argv)
{
	char	*cause = NULL;

	if (argc == 3 && strcmp(argv[1], "--loop") == 0) {
		if (top_loop(fetch_file, argv[2], 0, &cause) != 0) {
			fprintf(stderr, "%s\n", cause);
			return (1);
		}
		return (0);
	}
	RUN(test_frame);
	RUN(test_small);
	RUN(test_empty);
	UNIT_EXIT();
}
