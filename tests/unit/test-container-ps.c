/*
 * test-container-ps.c: the orphan sweeps' reading of podman ps -a
 * (container_orphans): only a line that is a container's ID and a job's
 * number, whole, names an orphan (fuzz-ps found the rest taken: "12x" and
 * "-1" read as jobs 12 and 4294967295).
 */

#include "gmux.h"
#include "container-int.h"
#include "unit.h"

static int
none_running(u_int id)
{
	return (0);
}

static int
seven_running(u_int id)
{
	return (id == 7);
}

/* Appends "jN " to the string arg holds. */
static void
collect(u_int id, void *arg)
{
	char	*s = arg;

	snprintf(s + strlen(s), 256 - strlen(s), "j%u ", id);
}

/* The orphans container_orphans names in text. */
static const char *
orphans(const char *text, int (*running)(u_int))
{
	static char	 got[256];
	char		*out = xstrdup(text);

	got[0] = '\0';
	container_orphans(out, running, collect, got);
	free(out);
	return (got);
}

static void
test_ps_lines_taken(void)
{
	CHECK_STR(orphans("0123abcd 12\n89ef 7\n", none_running), "j12 j7 ");
	CHECK_STR(orphans("0123abcd 12\n89ef 7", seven_running), "j12 ");
	CHECK_STR(orphans("a1 4294967295\n", none_running), "j4294967295 ");
	CHECK_STR(orphans("", none_running), "");
}

static void
test_ps_lines_refused(void)
{
	CHECK_STR(orphans("deadbeef <no value>\n", none_running), "");
	CHECK_STR(orphans("a1 12x\nb2 -1\nc3 +4\nd4 012\n", none_running),
	    "");
	CHECK_STR(orphans("a1 4294967296\ne5  3\nf6 3 \n 3\nG7 3\n",
	    none_running), "");
	CHECK_STR(orphans("a1 12x\nb2 5\n", none_running), "j5 ");
}

int
main(void)
{
	RUN(test_ps_lines_taken);
	RUN(test_ps_lines_refused);
	UNIT_EXIT();
}
