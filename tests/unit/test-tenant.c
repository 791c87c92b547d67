/*
 * test-tenant.c: tenants' names, their UIDs' derivation and range, the
 * records file read back, and published interpreters (docs/tenants.md).
 */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "tenant-int.h"
#include "unit.h"

static void
test_names(void)
{
	char	*cause = NULL;

	setenv("GMUX_TENANT_ACCOUNT_PREFIX", "gmux-", 1);
	CHECK(tenant_name_check("alice", &cause) == 0);
	CHECK(tenant_name_check("a_b-9", &cause) == 0);
	CHECK(tenant_name_check("Alice", &cause) == -1);
	CHECK(strstr(cause, "lower-case") != NULL);
	free(cause);
	cause = NULL;
	CHECK(tenant_name_check("a.b", &cause) == -1);
	free(cause);
	cause = NULL;
	/* 5 + 27 = 32 is the most */
	CHECK(tenant_name_check("abcdefghijklmnopqrstuvwxyza", &cause) == 0);
	CHECK(tenant_name_check("abcdefghijklmnopqrstuvwxyzab", &cause) == -1);
	CHECK(strstr(cause, "32 characters") != NULL);
	free(cause);
	cause = NULL;
	setenv("GMUX_TENANT_ACCOUNT_PREFIX", "", 1);
	CHECK(tenant_name_check("9lives", &cause) == -1); /* a digit first */
	free(cause);
	unsetenv("GMUX_TENANT_ACCOUNT_PREFIX");
}

static void
test_uids(void)
{
	uid_t	 lo, hi, u;

	CHECK(tenant_uid_range(&lo, &hi) == 0 && lo == 200000 && hi == 299999);
	setenv("GMUX_TENANT_UID_RANGE", "5000-5009", 1);
	CHECK(tenant_uid_range(&lo, &hi) == 0 && lo == 5000 && hi == 5009);
	setenv("GMUX_TENANT_UID_RANGE", "10-20", 1);	/* system UIDs */
	CHECK(tenant_uid_range(&lo, &hi) == -1 && lo == 200000);
	setenv("GMUX_TENANT_UID_RANGE", "9-", 1);
	CHECK(tenant_uid_range(&lo, &hi) == -1);
	unsetenv("GMUX_TENANT_UID_RANGE");
	/* the same on every host, inside the range, spread */
	u = tenant_uid_derive("bob", 200000, 299999);
	CHECK(u == tenant_uid_derive("bob", 200000, 299999));
	CHECK(u >= 200000 && u <= 299999);
	CHECK(u != tenant_uid_derive("alice", 200000, 299999));
	CHECK(tenant_uid_derive("x", 7, 7) == 7);
	CHECK(tenant_uid_taken(0, NULL));	/* root's */
}

static void
test_records(void)
{
	const char	*text = "{\"tenants\": [{\"name\": \"alice\", "
	    "\"account\": \"gmux-alice\", \"uid\": 201234, \"gid\": 201234, "
	    "\"home\": \"/h/gmux-alice\", \"state\": \"active\", "
	    "\"quota\": {\"jobs\": 3}}, {\"name\": \"eve\", \"account\": "
	    "\"-rf\", \"home\": \"/h/x\", \"state\": \"active\"}, "
	    "{\"name\": \"bob\", \"account\": \"gmux-bob\", \"home\": "
	    "\"/h/../etc\", \"state\": \"active\"}]}";
	struct tenant	*t;

	CHECK(tenants_parse("[]", 2) == -1);
	CHECK(tenants_parse(text, strlen(text)) == 0);
	t = tenant_find("alice");
	CHECK(t != NULL && t->has_uid && t->uid == 201234);
	CHECK(t->q_jobs == 3 && t->state == TENANT_ACTIVE);
	/* an account that would be an option, a home with "..": left out */
	CHECK(tenant_find("eve") == NULL && tenant_find("bob") == NULL);
	tenants_reset();
}

static void
test_python(void)
{
	char	*path = NULL, *cause = NULL;

	setenv("GMUX_PYTHON_INTERPRETERS", "py311=/opt/py311/bin/python3, "
	    "py3 = /usr/bin/python3,bad,rel=bin/python", 1);
	CHECK(tenant_python("py3", &path, &cause) == 0);
	CHECK_STR(path, "/usr/bin/python3");
	free(path);
	CHECK(tenant_python("rel", &path, &cause) == -1 && path == NULL);
	CHECK_STR(cause, "python: no interpreter 'rel' here (py311, py3)");
	free(cause);
	unsetenv("GMUX_PYTHON_INTERPRETERS");
	CHECK(tenant_python("py3", &path, &cause) == -1);
	CHECK(strstr(cause, "names none") != NULL);
	free(cause);
}

int
main(void)
{
	char	 dir[] = "/tmp/gmux-tenant-XXXXXX";

	CHECK(mkdtemp(dir) != NULL);
	setenv("GMUX_HOME", dir, 1);	/* no records file there */
	RUN(test_names);
	RUN(test_uids);
	RUN(test_records);
	RUN(test_python);
	rmdir(dir);
	UNIT_EXIT();
}
