/* test-http.c: the client's HTTP/1.1 response parser. */

#include "gmux.h"
#include "unit.h"

struct sink {
	char	 buf[4096];
	size_t	 len;
};

static void
sink_cb(const char *data, size_t len, void *arg)
{
	struct sink	*s = arg;

	memcpy(s->buf + s->len, data, len);
	s->len += len;
}

/* Feeds text one byte at a time; returns the last result. */
static int
feed_bytes(struct http_resp *r, const char *text, struct sink *s, char **cause)
{
	int	 rc = 0;

	for (; *text != '\0' && rc == 0; text++)
		rc = http_resp_feed(r, text, 1, sink_cb, s, cause);
	return (rc);
}

static void
test_content_length(void)
{
	struct http_resp	 r;
	struct sink		 s = { .len = 0 };
	char			*cause = NULL;

	http_resp_init(&r);
	CHECK(feed_bytes(&r, "HTTP/1.1 201 Created\r\nContent-Type: x\r\n"
	    "Content-Length: 5\r\n\r\nhello", &s, &cause) == 1);
	CHECK(r.status == 201 && s.len == 5 && memcmp(s.buf, "hello", 5) == 0);
}

static void
test_chunked(void)
{
	struct http_resp	 r;
	struct sink		 s = { .len = 0 };
	char			*cause = NULL;
	const char		*t = "HTTP/1.1 200 OK\r\n"
	    "Transfer-Encoding: chunked\r\n"
	    "\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n";

	http_resp_init(&r);
	CHECK(http_resp_feed(&r, t, strlen(t), sink_cb, &s, &cause) == 1);
	CHECK(r.status == 200 && s.len == 5 && memcmp(s.buf, "abcde", 5) == 0);
	http_resp_init(&r);
	s.len = 0;
	CHECK(feed_bytes(&r, t, &s, &cause) == 1 && s.len == 5);
}

static void
test_until_close(void)
{
	struct http_resp	 r;
	struct sink		 s = { .len = 0 };
	char			*cause = NULL;
	const char		*t = "HTTP/1.0 200 OK\r\n\r\nrest";

	http_resp_init(&r);
	CHECK(http_resp_feed(&r, t, strlen(t), sink_cb, &s, &cause) == 0);
	CHECK(http_resp_feed(&r, "", 0, sink_cb, &s, &cause) == 1);
	CHECK(s.len == 4);
}

static void
test_malformed(void)
{
	static const char *bad[] = {
		"SMTP 220 hello\r\n",
		"HTTP/1.1 2x0 OK\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: -4\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 4x\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
		    "2\r\nabX\r\n",
		"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
	};
	struct http_resp	 r;
	struct sink		 s;
	char			*cause;
	const char		*big;
	size_t			 i;

	for (i = 0; i < nitems(bad); i++) {
		http_resp_init(&r);
		s.len = 0;
		cause = NULL;
		CHECK(http_resp_feed(&r, bad[i], strlen(bad[i]), sink_cb, &s,
		    &cause) == -1);
		CHECK(cause != NULL);
		free(cause);
	}
	/* a reply cut short is an error, not a success */
	http_resp_init(&r);
	cause = NULL;
	big = "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc";
	CHECK(http_resp_feed(&r, big, strlen(big), sink_cb, &s, &cause) == 0);
	CHECK(http_resp_feed(&r, "", 0, sink_cb, &s, &cause) == -1);
	free(cause);
}

static void
test_long_line(void)
{
	struct http_resp	 r;
	struct sink		 s;
	char			*cause = NULL, *big;

	big = xmalloc(20000);
	memset(big, 'a', 19999);
	big[19999] = '\0';
	memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
	http_resp_init(&r);
	CHECK(http_resp_feed(&r, big, strlen(big), sink_cb, &s, &cause) == -1);
	free(cause);
	free(big);
}

/* Whether the connection may carry the next request (client.c keeps it). */
static void
test_keep_alive(void)
{
	struct http_resp	 r;
	struct sink		 s = { .len = 0 };
	char			*cause = NULL;

	http_resp_init(&r);
	CHECK(feed_bytes(&r, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
	    &s, &cause) == 1 && !r.close);
	http_resp_init(&r);
	CHECK(feed_bytes(&r, "HTTP/1.1 200 OK\r\nConnection: close\r\n"
	    "Content-Length: 2\r\n\r\nok", &s, &cause) == 1 && r.close);
	http_resp_init(&r);
	CHECK(feed_bytes(&r, "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
	    &s, &cause) == 1 && r.close);
	http_resp_init(&r);
	CHECK(feed_bytes(&r, "HTTP/1.1 200 OK\r\n\r\nbody", &s, &cause) ==
	    0 && r.close);	/* the body ends with the connection */
}

/* The host's scan of a request head (server-guard.c), fed in pieces. */
static void
test_head(void)
{
	struct http_head	 h;
	const char		*req = "PUT /x HTTP/1.1\r\nHost: x\r\n"
				    "authorization:  Bearer tok \r\n"
				    "Content-Length: 3\r\n\r\nabc";
	size_t			 i, rest = 0, n = strlen(req);
	char			*v;
	int			 rc = 0;

	memset(&h, 0, sizeof h);
	for (i = 0; i < n && rc == 0; i++)
		rc = http_head_feed(&h, req + i, 1, 1024, &rest);
	CHECK(rc == 1 && h.end == n - 3 && rest == 0 && i == n - 3);
	CHECK(http_head_feed(&h, req + i, 3, 1024, &rest) == 1 && rest == 3);
	v = http_head_get(&h, "Authorization");
	CHECK_STR(v, "Bearer tok");
	free(v);
	CHECK(http_head_get(&h, "Cookie") == NULL);
	http_head_clear(&h);
	/* Bare LFs end a head too (evhttp reads them so); a body in the
	 * same piece is counted as rest. */
	CHECK(http_head_feed(&h, "GET / HTTP/1.1\nA: b\n\nxyz", 24, 1024,
	    &rest) == 1 && rest == 3 && h.end == 21);
	v = http_head_get(&h, "a");
	CHECK_STR(v, "b");
	free(v);
	http_head_clear(&h);
	/* No end within max: refused. */
	CHECK(http_head_feed(&h, "GET / HTTP/1.1\r\nX: ", 20, 32, &rest) ==
	    0);
	CHECK(http_head_feed(&h, "yyyyyyyyyyyyyyyyyyyy", 20, 32, &rest) ==
	    -1);
	http_head_clear(&h);
}

int
main(void)
{
	RUN(test_content_length);
	RUN(test_head);
	RUN(test_keep_alive);
	RUN(test_chunked);
	RUN(test_until_close);
	RUN(test_malformed);
	RUN(test_long_line);
	UNIT_EXIT();
}
