/* test-config.c: the settings file and its environment overrides. */

#include <stdlib.h>
#include <unistd.h>

#include "gmux.h"
#include "unit.h"

static void
test_parse(void)
{
	struct config_entry	*e;
	u_int			 n;
	char			*cause = NULL;

	CHECK(config_parse("# c\n\nA_B = 1 \n  C=two words\nD=\n", &e, &n,
	    &cause) == 0);
	CHECK(n == 3);
	CHECK_STR(e[0].key, "A_B");
	CHECK_STR(e[0].value, "1");
	CHECK_STR(e[1].value, "two words");
	CHECK_STR(e[2].value, "");
	config_free(e, n);
	CHECK(config_parse("A=1\nnot a pair\n", &e, &n, &cause) == -1);
	CHECK(cause != NULL && strstr(cause, "line 2") != NULL);
	free(cause);
	cause = NULL;
	CHECK(config_parse("lower=1\n", &e, &n, &cause) == -1);
	free(cause);
}

static void
test_get_and_override(void)
{
	char	 dir[] = "/tmp/gmux-config-XXXXXX", *path, *cause = NULL;

	CHECK(mkdtemp(dir) != NULL);
	setenv("GMUX_HOME", dir, 1);
	xasprintf(&path, "%s/config", dir);
	CHECK(write_file_atomic(path, "JOB_RETENTION_DAYS=7\n", 21, 0600,
	    &cause) == 0);
	CHECK(config_load(&cause) == 0);
	CHECK(config_uint("JOB_RETENTION_DAYS", 30, 0, 100) == 7);
	setenv("GMUX_JOB_RETENTION_DAYS", "9", 1);
	CHECK(config_uint("JOB_RETENTION_DAYS", 30, 0, 100) == 9);
	setenv("GMUX_JOB_RETENTION_DAYS", "many", 1);
	CHECK(config_uint("JOB_RETENTION_DAYS", 30, 0, 100) == 30);
	unsetenv("GMUX_JOB_RETENTION_DAYS");
	CHECK(config_uint("NOT_SET", 5, 0, 100) == 5);
	unlink(path);
	rmdir(dir);
	free(path);
}

int
main(void)
{
	RUN(test_parse);
	RUN(test_get_and_override);
	UNIT_EXIT();
}
