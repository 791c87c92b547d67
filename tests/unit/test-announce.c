/*
 * test-announce.c: serve --announce's datagram (announce.c): made with a
 * host's TLS identity, read back whole; every change to a signed byte, a
 * key that is not the pin's, and any line out of its place are refused.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "unit.h"
#include "tmpdir.h"

static struct tls_identity *
identity(const char *name)
{
	struct tls_identity	*id;
	char			*dir = tpath(name), *cause = NULL;

	id = tls_identity_load(dir, 1, &cause);
	CHECK(id != NULL);
	free(cause);
	free(dir);
	return (id);
}

static char *
made(struct tls_identity *id, size_t *len)
{
	struct announce	 a;

	memset(&a, 0, sizeof a);
	snprintf(a.name, sizeof a.name, "gpu1");
	a.port = 7070;
	snprintf(a.addrs[0], sizeof a.addrs[0], "10.0.0.5");
	snprintf(a.addrs[1], sizeof a.addrs[1], "192.168.1.7");
	a.naddrs = 2;
	a.time = 1796117260811LL;
	return (announce_format(&a, id, len));
}

static int
parses(const char *buf, size_t len)
{
	struct announce	 a;
	char		*cause = NULL;
	int		 rc;

	rc = announce_parse(buf, len, &a, &cause);
	CHECK((rc == 0) == (cause == NULL));
	free(cause);
	return (rc == 0);
}

static void
test_round_trip(void)
{
	struct tls_identity	*id = identity("one");
	struct announce		 a;
	char			*d, *cause = NULL;
	size_t			 len;

	d = made(id, &len);
	CHECK(d != NULL && len <= ANNOUNCE_MAX);
	CHECK(announce_parse(d, len, &a, &cause) == 0);
	CHECK_STR(a.name, "gpu1");
	CHECK(a.port == 7070 && a.naddrs == 2 && a.time == 1796117260811LL);
	CHECK_STR(a.addrs[1], "192.168.1.7");
	CHECK_STR(a.pin, tls_identity_pin(id));
	free(d);
	tls_identity_free(id);
}

static void
test_tampering(void)
{
	struct tls_identity	*id = identity("two");
	struct tls_identity	*other = identity("three");
	char			*d, *o, *p, *copy;
	size_t			 len, olen, i;

	d = made(id, &len);
	o = made(other, &olen);
	/* every signed byte, changed, breaks it (or its form) */
	for (i = 0; i < (size_t)(strstr(d, "\nsig ") - d); i++) {
		copy = xstrdup(d);
		copy[i] = copy[i] == '1' ? '2' : '1';
		CHECK(!parses(copy, len));
		free(copy);
	}
	/* another host's key and signature under this host's pin */
	copy = xstrdup(o);
	p = strstr(copy, "\npin ") + 5;
	memcpy(p, tls_identity_pin(id), DIGEST_HEX - 1);
	CHECK(!parses(copy, olen));
	free(copy);
	CHECK(parses(d, len) && parses(o, olen));
	CHECK(!parses(d, len - 1));		/* no final newline */
	CHECK(!parses(d, 0));
	copy = xmalloc(len + 8);
	memcpy(copy, d, len);
	memcpy(copy + len, "x 1\n", 4);		/* a line after the signature */
	CHECK(!parses(copy, len + 4));
	free(copy);
	free(d);
	free(o);
	tls_identity_free(id);
	tls_identity_free(other);
}

static void
test_what_is_not_made(void)
{
	struct tls_identity	*id = identity("four");
	struct announce		 a;
	size_t			 len;

	memset(&a, 0, sizeof a);
	snprintf(a.name, sizeof a.name, "bad name");
	a.port = 1;
	a.naddrs = 1;
	snprintf(a.addrs[0], sizeof a.addrs[0], "10.0.0.1");
	CHECK(announce_format(&a, id, &len) == NULL);
	snprintf(a.name, sizeof a.name, "ok");
	a.naddrs = 0;
	CHECK(announce_format(&a, id, &len) == NULL);
	tls_identity_free(id);
}

int
main(void)
{
	if (tmpdir_init("announce") != 0)
		return (1);
	RUN(test_round_trip);
	RUN(test_tampering);
	RUN(test_what_is_not_made);
	if (tmpdir_cleanup() != 0)
		return (1);
	UNIT_EXIT();
}
