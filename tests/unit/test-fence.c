/* test-fence.c: --allow parsing, the policy as JSON and text, matching. */

#include <sys/socket.h>

#include <netinet/in.h>

#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "fence-int.h"
#include "unit.h"

/* Parses spec and returns its canonical text ("ERR" on failure). */
static char *
canon(const char *spec)
{
	static char		 buf[512];
	struct fence_rule	 r;
	char			*cause = NULL;

	if (fence_parse_allow(spec, &r, &cause) != 0) {
		free(cause);
		return ("ERR");
	}
	snprintf(buf, sizeof buf, "%s", r.text);
	free(r.name);
	free(r.path);
	free(r.text);
	return (buf);
}

static void
test_allow_forms(void)
{
	CHECK_STR(canon("api.openai.com"), "api.openai.com");
	CHECK_STR(canon("pypi.org:443"), "pypi.org:443");
	CHECK_STR(canon("Example.COM."), "example.com");
	CHECK_STR(canon("127.0.0.1:8080"), "127.0.0.1:8080");
	CHECK_STR(canon("127.0.0.1"), "127.0.0.1");
	CHECK_STR(canon("10.0.0.0/8"), "10.0.0.0/8");
	CHECK_STR(canon("10.0.0.0/8:443"), "10.0.0.0/8:443");
	CHECK_STR(canon("0.0.0.0/0"), "0.0.0.0/0");
	CHECK_STR(canon("[::1]:9000"), "[::1]:9000");
	CHECK_STR(canon("[::1]"), "::1");
	CHECK_STR(canon("::1"), "::1");
	CHECK_STR(canon("2001:db8::/32"), "2001:db8::/32");
	CHECK_STR(canon("[2001:DB8::/32]:443"), "[2001:db8::/32]:443");
	CHECK_STR(canon("host:8000-8100"), "host:8000-8100");
	CHECK_STR(canon("_svc.example.com:53"), "_svc.example.com:53");
	CHECK_STR(canon("localhost"), "localhost");
	CHECK_STR(canon("unix:/run/x.sock"), "unix:/run/x.sock");
	CHECK_STR(canon("UNIX:/run/x.sock"), "unix:/run/x.sock");
	CHECK_STR(canon("unix:dgram"), "unix:dgram");
}

static void
test_allow_errors(void)
{
	static const char	*bad[] = {
		"", "host:0", "host:65536", "host:abc", "host:", "host:80-70",
		"host:1-", "10.0.0.1/8", "10.0.0.0/33", "10.0.0.0/", "1.2.3",
		"256.1.1.1", "1.2.3.4.5", "[1.2.3.4]:80", "a..b", "-a.com",
		"a-.com", "[::1", "[::1]x", "[::1]:", "foo bar", "host/8",
		"[host]:80", "::1/129", "a.b:1:2", ".", "x/8:80",
		"01.2.3.4", "fe80::1%eth0", "12345", "unix:", "unix:rel.sock",
		"uNix:572", "unix:dgrams", "unix:DGRAM",
		"unix:/0123456789012345678901234567890123456789012345678901234"
		    "5678901234567890123456789012345678901234567890123456789",
	};
	struct fence_rule	 r;
	char			*cause;
	u_int			 i;

	for (i = 0; i < nitems(bad); i++) {
		cause = NULL;
		if (fence_parse_allow(bad[i], &r, &cause) == 0) {
			fprintf(stderr, "accepted: '%s'\n", bad[i]);
			CHECK(0);
			free(r.name);
			free(r.path);
			free(r.text);
			continue;
		}
		CHECK(cause != NULL && strstr(cause, "'") != NULL);
		free(cause);
	}
}

static void
test_match(void)
{
	struct fence	*f = fence_create();
	u_char		 a[16];
	char		*cause = NULL;

	CHECK(fence_allow(f, "10.0.0.0/8", &cause) == 0);
	CHECK(fence_allow(f, "127.0.0.1:8080", &cause) == 0);
	CHECK(fence_allow(f, "[::1]:9000", &cause) == 0);
	CHECK(fence_allow(f, "192.168.0.0/23:1-1024", &cause) == 0);
	CHECK(fence_parse_addr("10.200.3.4", a) == AF_INET);
	CHECK(fence_match_addr(f, AF_INET, a, 1) == 0);
	CHECK(fence_parse_addr("11.0.0.1", a) == AF_INET);
	CHECK(fence_match_addr(f, AF_INET, a, 1) == -1);
	CHECK(fence_parse_addr("127.0.0.1", a) == AF_INET);
	CHECK(fence_match_addr(f, AF_INET, a, 8080) == 1);
	CHECK(fence_match_addr(f, AF_INET, a, 8081) == -1);
	CHECK(fence_parse_addr("::1", a) == AF_INET6);
	CHECK(fence_match_addr(f, AF_INET6, a, 9000) == 2);
	CHECK(fence_match_addr(f, AF_INET6, a, 8080) == -1);
	CHECK(fence_match_addr(f, AF_INET, a, 9000) == -1);
	CHECK(fence_parse_addr("192.168.1.255", a) == AF_INET);
	CHECK(fence_match_addr(f, AF_INET, a, 1024) == 3);
	CHECK(fence_match_addr(f, AF_INET, a, 1025) == -1);
	CHECK(fence_parse_addr("192.168.2.0", a) == AF_INET);
	CHECK(fence_match_addr(f, AF_INET, a, 80) == -1);
	fence_free(f);
}

/* Host loopback, as a remote job's connect sees it (mapped: IPv4). */
static void
test_loopback(void)
{
	static const struct {
		const char	*addr;
		int		 loop;
	} t[] = {
		{ "127.0.0.1", 1 }, { "127.255.255.254", 1 }, { "0.0.0.0", 1 },
		{ "::1", 1 }, { "::", 1 }, { "126.255.255.255", 0 },
		{ "128.0.0.1", 0 }, { "10.0.0.1", 0 }, { "::2", 0 },
		{ "1::1", 0 }, { "fe80::1", 0 }, { "0.0.0.1", 0 },
	};
	u_char	 a[16];
	u_int	 i;
	int	 family;

	for (i = 0; i < nitems(t); i++) {
		family = fence_parse_addr(t[i].addr, a);
		CHECK(family != 0);
		if (fence_loopback(family, a) != t[i].loop)
			fprintf(stderr, "%s: loopback is not %d\n", t[i].addr,
			    t[i].loop);
		CHECK(fence_loopback(family, a) == t[i].loop);
	}
}

static void
test_add_host(void)
{
	struct fence	*f = fence_create();
	char		*cause = NULL, *s;

	CHECK(fence_add_host(f, "myapi.test=127.0.0.5", &cause) == 0);
	CHECK(fence_add_host(f, "v6.test=[::1]", &cause) == 0);
	CHECK(fence_add_host(f, "docker.test:10.1.2.3", &cause) == 0);
	CHECK(f->npins == 3 && f->pins[1].family == AF_INET6);
	CHECK(fence_add_host(f, "noaddr", &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(fence_add_host(f, "x.test=not-an-ip", &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(fence_add_host(f, "bad name=1.2.3.4", &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(fence_check(f, &cause) == -1);
	CHECK(cause != NULL && strncmp(cause, "add_host[0]: ", 13) == 0);
	free(cause);
	cause = NULL;
	CHECK(fence_allow(f, "myapi.test:8080", &cause) == 0);
	CHECK(fence_allow(f, "v6.test", &cause) == 0);
	CHECK(fence_allow(f, "docker.test", &cause) == 0);
	CHECK(fence_check(f, &cause) == 0);
	s = fence_text(f);
	CHECK_STR(s, "allow myapi.test:8080,v6.test,docker.test (add-host "
	    "myapi.test=127.0.0.5,v6.test=::1,docker.test=10.1.2.3)");
	free(s);
	fence_free(f);
}

static struct fence *
from(const char *text, char **cause)
{
	struct fence	*f = NULL;
	json_t		*j = json_loads(text, 0, NULL);

	*cause = NULL;
	if (fence_from_json(j, &f, cause) != 0)
		f = (struct fence *)-1;
	json_decref(j);
	return (f);
}

static void
test_json(void)
{
	struct fence	*f, *g;
	json_t		*j;
	char		*cause, *s, *t;

	f = from("{\"allow\":[\"a.com\",\"1.2.3.4:5\",\"[::1]:6\"],"
	    "\"add_host\":[\"a.com=127.0.0.5\"]}", &cause);
	CHECK(f != NULL && f != (struct fence *)-1);
	j = json_object();
	fence_to_json(f, j);
	s = json_dumps(j, JSON_COMPACT|JSON_SORT_KEYS);
	CHECK_STR(s, "{\"add_host\":[\"a.com=127.0.0.5\"],\"allow\":"
	    "[\"a.com\",\"1.2.3.4:5\",\"[::1]:6\"]}");
	g = from(s, &cause);
	t = fence_text(g);
	CHECK_STR(t, "allow a.com,1.2.3.4:5,[::1]:6 "
	    "(add-host a.com=127.0.0.5)");
	free(t);
	free(s);
	json_decref(j);
	fence_free(g);
	fence_free(f);

	CHECK(from("{}", &cause) == NULL && cause == NULL);
	/* An empty allow list is a closed fence, not none (issue 11). */
	f = from("{\"allow\":[],\"deny_net\":false}", &cause);
	CHECK(f != NULL && f != (struct fence *)-1 && f->deny_net);
	fence_free(f);
	f = from("{\"deny_net\":true,\"allow\":[\"unix:/a\"]}", &cause);
	CHECK(f != NULL && f != (struct fence *)-1 && fence_has_unix(f));
	s = fence_text(f);
	CHECK_STR(s, "deny-net, allow unix:/a");
	free(s);
	CHECK(!fence_unix_dgram(f));
	fence_free(f);
	/* Datagram sockets are asked for, and are the host's too. */
	f = from("{\"deny_net\":true,\"allow\":[\"unix:dgram\"]}", &cause);
	CHECK(f != NULL && f != (struct fence *)-1 && fence_unix_dgram(f) &&
	    fence_has_unix(f));
	fence_free(f);
	CHECK(from("{\"allow\":null}", &cause) == NULL);
	f = from("{\"deny_net\":true}", &cause);
	CHECK(f != NULL && f != (struct fence *)-1 && f->deny_net);
	s = fence_text(f);
	CHECK_STR(s, "deny-net");
	free(s);
	fence_free(f);
	s = fence_text(NULL);
	CHECK_STR(s, "none");
	free(s);
}

static void
test_json_errors(void)
{
	static const struct {
		const char	*json;
		const char	*cause;
	} bad[] = {
		{ "{\"allow\":\"a.com\"}",
		    "allow: must be an array of strings" },
		{ "{\"allow\":[1]}", "allow[0]: must be a string" },
		{ "{\"allow\":[\"a.com\",\"x:0\"]}",
		    "allow[1]: 'x:0': port 0 is not from 1 to 65535" },
		{ "{\"deny_net\":\"yes\"}", "deny_net: must be true or false" },
		{ "{\"deny_net\":true,\"allow\":[\"a.com\"]}",
		    "allow: only unix: rules can be combined with deny_net" },
		{ "{\"allow\":[],\"add_host\":[\"b.com=1.2.3.4\"]}",
		    "add_host[0]: b.com is not allowed (allow it too)" },
		{ "{\"add_host\":[\"b.com=1.2.3.4\"],\"allow\":[\"a.com\"]}",
		    "add_host[0]: b.com is not allowed (allow it too)" },
		{ "{\"add_host\":[\"b.com\"]}",
		    "add_host[0]: 'b.com': not NAME=ADDR" },
	};
	char	*cause;
	u_int	 i;

	for (i = 0; i < nitems(bad); i++) {
		CHECK(from(bad[i].json, &cause) == (struct fence *)-1);
		CHECK_STR(cause, bad[i].cause);
		free(cause);
	}
}

static void
test_copy(void)
{
	struct fence	*f = fence_create(), *c;
	char		*cause = NULL, *a, *b;

	CHECK(fence_allow(f, "a.com:1", &cause) == 0);
	CHECK(fence_allow(f, "10.0.0.0/8", &cause) == 0);
	CHECK(fence_add_host(f, "a.com=1.2.3.4", &cause) == 0);
	c = fence_copy(f);
	a = fence_text(f);
	b = fence_text(c);
	CHECK_STR(a, b);
	free(a);
	free(b);
	fence_free(f);
	fence_free(c);
	CHECK(fence_copy(NULL) == NULL);
}

int
main(void)
{
	RUN(test_allow_forms);
	RUN(test_allow_errors);
	RUN(test_match);
	RUN(test_loopback);
	RUN(test_add_host);
	RUN(test_json);
	RUN(test_json_errors);
	RUN(test_copy);
	UNIT_EXIT();
}
