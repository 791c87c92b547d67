/* test-dns.c: the fence's DNS stub: queries in, answers out; names. */

#include <sys/socket.h>

#include <netinet/in.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "fence-int.h"
#include "unit.h"

/* Builds a query for name/type; returns its length. */
static size_t
query(u_char *m, uint16_t id, const char *name, uint16_t type)
{
	size_t		 off = 12;
	const char	*p = name, *dot;
	size_t		 l;

	memset(m, 0, 12);
	m[0] = id >> 8;
	m[1] = id & 0xff;
	m[2] = 0x01;		/* RD */
	m[5] = 1;		/* one question */
	while (*p != '\0') {
		dot = strchr(p, '.');
		l = dot != NULL ? (size_t)(dot - p) : strlen(p);
		m[off++] = (u_char)l;
		memcpy(m + off, p, l);
		off += l;
		p += l + (dot != NULL);
	}
	m[off++] = 0;
	m[off++] = type >> 8;
	m[off++] = type & 0xff;
	m[off++] = 0;
	m[off++] = 1;		/* IN */
	return (off);
}

static int	nlookups;

/* myapi.test has one A and one AAAA; many.test 64 A; bad.test fails. */
static int
lookup(const char *name, struct dns_rr *rr, u_int max, void *arg)
{
	u_int	 i;

	nlookups++;
	if (strcmp(name, "myapi.test") == 0) {
		memset(rr, 0, 2 * sizeof *rr);
		rr[0].family = AF_INET;
		memcpy(rr[0].addr, "\x7f\0\0\x05", 4);
		rr[0].ttl = 60;
		rr[1].family = AF_INET6;
		rr[1].addr[15] = 1;
		rr[1].ttl = 60;
		return (2);
	}
	if (strcmp(name, "many.test") == 0) {
		for (i = 0; i < max; i++) {
			memset(&rr[i], 0, sizeof rr[i]);
			rr[i].family = AF_INET;
			rr[i].addr[0] = 10;
			rr[i].addr[3] = (u_char)i;
		}
		return ((int)max);
	}
	if (strcmp(name, "bad.test") == 0)
		return (DNS_SERVFAIL);
	return (DNS_NXDOMAIN);
}

static void
test_answer_a(void)
{
	u_char	 q[512], a[512];
	size_t	 ql, al;

	ql = query(q, 0x1234, "MyApi.Test", 1);
	al = dns_answer(q, ql, a, sizeof a, lookup, NULL);
	CHECK(al == ql + 16);
	CHECK(a[0] == 0x12 && a[1] == 0x34);
	CHECK((a[2] & 0x80) && (a[2] & 0x01));		/* QR, RD */
	CHECK((a[3] & 0x0f) == 0);			/* NOERROR */
	CHECK(a[7] == 1);				/* one answer */
	CHECK(memcmp(a + 12, q + 12, ql - 12) == 0);	/* case kept */
	CHECK(memcmp(a + ql + 12, "\x7f\0\0\x05", 4) == 0);
	ql = query(q, 7, "myapi.test", 28);
	al = dns_answer(q, ql, a, sizeof a, lookup, NULL);
	CHECK(al == ql + 28 && a[7] == 1 && a[ql + 27] == 1);
	ql = query(q, 7, "myapi.test", 255);
	al = dns_answer(q, ql, a, sizeof a, lookup, NULL);
	CHECK(al == ql + 16 + 28 && a[7] == 2);
}

static void
test_answer_errors(void)
{
	u_char	 q[512], a[512];
	size_t	 ql, al;

	ql = query(q, 1, "myapi.test", 65);		/* HTTPS: no data */
	al = dns_answer(q, ql, a, sizeof a, lookup, NULL);
	CHECK(al == ql && (a[3] & 0x0f) == 0 && a[7] == 0);
	ql = query(q, 1, "other.test", 1);
	al = dns_answer(q, ql, a, sizeof a, lookup, NULL);
	CHECK(al == ql && (a[3] & 0x0f) == 3);		/* NXDOMAIN */
	ql = query(q, 1, "bad.test", 1);
	al = dns_answer(q, ql, a, sizeof a, lookup, NULL);
	CHECK((a[3] & 0x0f) == 2);			/* SERVFAIL */
	ql = query(q, 1, "a b.test", 1);
	nlookups = 0;
	al = dns_answer(q, ql, a, sizeof a, lookup, NULL);
	CHECK((a[3] & 0x0f) == 3 && nlookups == 0);
	ql = query(q, 1, "myapi.test", 1);
	q[ql - 1] = 3;					/* class CH */
	al = dns_answer(q, ql, a, sizeof a, lookup, NULL);
	CHECK((a[3] & 0x0f) == 5);			/* REFUSED */
	ql = query(q, 1, "myapi.test", 1);
	q[2] |= 0x10;					/* opcode 2 */
	al = dns_answer(q, ql, a, sizeof a, lookup, NULL);
	CHECK(al == 12 && (a[3] & 0x0f) == 4);		/* NOTIMP */
	ql = query(q, 1, "myapi.test", 1);
	q[5] = 2;					/* two questions */
	al = dns_answer(q, ql, a, sizeof a, lookup, NULL);
	CHECK(al == 12 && (a[3] & 0x0f) == 1);		/* FORMERR */
	ql = query(q, 1, "myapi.test", 1);
	CHECK(dns_answer(q, ql - 3, a, sizeof a, lookup, NULL) == 12);
	q[2] |= 0x80;					/* an answer */
	CHECK(dns_answer(q, ql, a, sizeof a, lookup, NULL) == 0);
	CHECK(dns_answer(q, 11, a, sizeof a, lookup, NULL) == 0);
	q[2] = 0;
	q[12] = 0xc0;					/* a pointer */
	CHECK(dns_answer(q, ql, a, sizeof a, lookup, NULL) == 12);
}

static void
test_answer_truncated(void)
{
	u_char	 q[512], a[65535];
	size_t	 ql, al;

	ql = query(q, 1, "many.test", 1);
	al = dns_answer(q, ql, a, 512, lookup, NULL);
	CHECK(al <= 512 && (a[2] & 0x02));		/* TC */
	CHECK(a[7] == (512 - ql) / 16);
	al = dns_answer(q, ql, a, sizeof a, lookup, NULL);
	CHECK(!(a[2] & 0x02) && a[7] == 64 && al == ql + 64 * 16);
}

/* The stream transport: two framed queries in one write, two answers. */
static void
test_conn_stream(void)
{
	struct dns_conn	*c;
	u_char		 q[1024], a[1024];
	size_t		 l1, l2;
	ssize_t		 n;
	int		 sv[2];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	set_nonblock(sv[0]);
	c = dns_conn_create(sv[0], 1);
	l1 = query(q + 2, 1, "myapi.test", 1);
	q[0] = 0;
	q[1] = (u_char)l1;
	l2 = query(q + 4 + l1, 2, "other.test", 28);
	q[2 + l1] = 0;
	q[3 + l1] = (u_char)l2;
	CHECK(write(sv[1], q, 3) == 3);			/* a partial frame */
	CHECK(dns_conn_read(c, lookup, NULL) == 0);
	CHECK(write(sv[1], q + 3, l1 + l2 + 1) == (ssize_t)(l1 + l2 + 1));
	CHECK(dns_conn_read(c, lookup, NULL) == 0);
	CHECK(!dns_conn_pending(c));
	n = read(sv[1], a, sizeof a);
	CHECK(n == (ssize_t)(2 + l1 + 16 + 2 + l2));
	CHECK(a[2] == 0 && a[3] == 1 && a[2 + l1 + 16 + 2 + 1] == 2);
	close(sv[1]);
	CHECK(dns_conn_read(c, lookup, NULL) == -1);
	dns_conn_free(c);
}

static void
test_conn_datagram(void)
{
	struct dns_conn	*c;
	u_char		 q[512], a[512];
	size_t		 l;
	int		 sv[2];

	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
	set_nonblock(sv[0]);
	c = dns_conn_create(sv[0], 0);
	l = query(q, 9, "myapi.test", 1);
	CHECK(write(sv[1], q, l) == (ssize_t)l);
	CHECK(write(sv[1], q, l) == (ssize_t)l);
	CHECK(dns_conn_read(c, lookup, NULL) == 0);
	CHECK(read(sv[1], a, sizeof a) == (ssize_t)(l + 16));
	CHECK(read(sv[1], a, sizeof a) == (ssize_t)(l + 16));
	dns_conn_free(c);
	close(sv[1]);
}

/* The names table: pins answer at once, /etc/hosts counts, ports bind. */
static void
test_names(void)
{
	struct fence		*f = fence_create();
	struct fence_names	*fn;
	struct dns_rr		 rr[8];
	u_char			 a[16];
	char			*cause = NULL;
	int			 n;

	CHECK(fence_allow(f, "myapi.test:8080", &cause) == 0);
	CHECK(fence_add_host(f, "myapi.test=127.0.0.5", &cause) == 0);
	CHECK(fence_allow(f, "localhost:9", &cause) == 0);
	fn = fence_names_create(f);
	n = fence_names_lookup("myapi.test", rr, 8, fn);
	CHECK(n == 1 && rr[0].family == AF_INET && rr[0].addr[3] == 5);
	CHECK(fence_names_lookup("other.test", rr, 8, fn) == DNS_NXDOMAIN);
	n = fence_names_lookup("localhost", rr, 8, fn);
	CHECK(n >= 1);
	fence_parse_addr("127.0.0.5", a);
	CHECK(fence_names_allows(fn, AF_INET, a, 8080));
	CHECK(!fence_names_allows(fn, AF_INET, a, 8081));
	fence_parse_addr("127.0.0.1", a);
	CHECK(fence_names_allows(fn, AF_INET, a, 9));
	CHECK(!fence_names_allows(fn, AF_INET, a, 8080));
	CHECK(fence_names_start(fn, &cause) == 0);
	CHECK(fence_names_fd(fn) != -1);
	fence_names_free(fn);
	fence_free(f);
}

int
main(void)
{
	RUN(test_answer_a);
	RUN(test_answer_errors);
	RUN(test_answer_truncated);
	RUN(test_conn_stream);
	RUN(test_conn_datagram);
	RUN(test_names);
	UNIT_EXIT();
}
