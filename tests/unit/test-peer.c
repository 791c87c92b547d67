/*
 * test-peer.c: members calling members, below the cluster (tls.c,
 * cluster-peer.c): a member's call shows its key as a client certificate
 * and the server reads its pin; a call to a host whose key is not the
 * pinned one fails in the handshake, saying so, before the request; a
 * plain client shows none; and the small readers a call relies on.
 */

#include <sys/socket.h>

#include <netinet/in.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include "cluster-int.h"
#include "unit.h"
#include "tmpdir.h"

static struct event_base	*base;
static struct tls_identity	*ida, *idb;
static void			*ctx;
static struct evhttp		*http;
static int			 code, done;
static char			 body[256];

/* The server: answers with the pin its client showed, or "none". */
static void
serve(struct evhttp_request *req, void *arg)
{
	struct evbuffer	*b = evbuffer_new();
	char		 pin[DIGEST_HEX];

	if (tls_bev_client_pin(evhttp_connection_get_bufferevent(
	    evhttp_request_get_connection(req)), pin) == 0)
		evbuffer_add_printf(b, "%s", pin);
	else
		evbuffer_add_printf(b, "none");
	evhttp_send_reply(req, 200, "OK", b);
	evbuffer_free(b);
}

static struct bufferevent *
serve_bev(struct event_base *eb, void *arg)
{
	return (tls_server_bev(eb, arg, NULL));
}

static void
answered(struct evhttp_request *req, void *arg)
{
	struct evbuffer	*in;
	size_t		 n;

	code = req != NULL ? evhttp_request_get_response_code(req) : 0;
	body[0] = '\0';
	if (code != 0) {
		in = evhttp_request_get_input_buffer(req);
		n = evbuffer_get_length(in);
		if (n >= sizeof body)
			n = sizeof body - 1;
		evbuffer_remove(in, body, n);
		body[n] = '\0';
	}
	done = 1;
	event_base_loopbreak(base);
}

/* B serves; the port. */
static u_int
serve_b(void)
{
	struct evhttp_bound_socket	*s;
	struct sockaddr_in		 sin;
	socklen_t			 len = sizeof sin;
	char				*cause = NULL;

	if ((ctx = tls_server_create(idb, &cause)) == NULL)
		fatalx("%s", cause);
	tls_server_ask_certificates(ctx);
	http = evhttp_new(base);
	evhttp_set_bevcb(http, serve_bev, ctx);
	evhttp_set_gencb(http, serve, NULL);
	if ((s = evhttp_bind_socket_with_handle(http, "127.0.0.1", 0)) ==
	    NULL)
		fatalx("bind");
	getsockname(evhttp_bound_socket_get_fd(s), (struct sockaddr *)&sin,
	    &len);
	return (ntohs(sin.sin_port));
}

/* A's call to B's port, expecting the key whose pin is pin. */
static char *
call_b(u_int port, const char *pin)
{
	struct evhttp_connection	*evcon;
	struct evhttp_request		*req;
	struct bufferevent		*bev;
	char				*cause = NULL, *why;

	if ((bev = tls_peer_bev(base, ida, pin, "b", &cause)) == NULL)
		fatalx("%s", cause);
	evcon = evhttp_connection_base_bufferevent_new(base, NULL, bev,
	    "127.0.0.1", (ev_uint16_t)port);
	req = evhttp_request_new(answered, NULL);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Host", "b");
	done = 0;
	evhttp_make_request(evcon, req, EVHTTP_REQ_GET, "/");
	while (!done)
		event_base_dispatch(base);
	why = tls_peer_pin_error(evhttp_connection_get_bufferevent(evcon));
	evhttp_connection_free(evcon);
	return (why);
}

static void
test_a_members_call_shows_its_key(void)
{
	u_int	 port = serve_b();
	char	*why;

	why = call_b(port, tls_identity_pin(idb));
	CHECK(why == NULL);
	CHECK(code == 200);
	CHECK_STR(body, tls_identity_pin(ida));
	free(why);

	/* B's key is not the one pinned: nothing is asked, and it says so */
	why = call_b(port, tls_identity_pin(ida));
	CHECK(code == 0);
	CHECK(why != NULL && strstr(why, "not the pinned") != NULL &&
	    strstr(why, tls_identity_pin(idb)) != NULL);
	free(why);
}

static void
test_a_members_address_is_read(void)
{
	char	*host = NULL;
	u_int	 port = 0;

	CHECK(cluster_peer_split("10.0.0.6:7070", "gpu2", &host, &port) == 0);
	CHECK_STR(host, "10.0.0.6");
	CHECK(port == 7070);
	free(host);
	CHECK(cluster_peer_split(":7070", "gpu2", &host, &port) == 0);
	CHECK_STR(host, "gpu2");	/* every address: its name */
	free(host);
	CHECK(cluster_peer_split("[::1]:7071", "gpu2", &host, &port) == 0);
	CHECK_STR(host, "::1");
	CHECK(port == 7071);
	free(host);
	host = NULL;
	CHECK(cluster_peer_split("::1:7070", "x", &host, &port) == -1);
	CHECK(cluster_peer_split("h:0", "x", &host, &port) == -1);
	CHECK(cluster_peer_split("h:65536", "x", &host, &port) == -1);
	CHECK(cluster_peer_split("h:70x", "x", &host, &port) == -1);
	CHECK(cluster_peer_split("h", "x", &host, &port) == -1);
	CHECK(cluster_peer_split("[]:1", "x", &host, &port) == -1);
	CHECK(host == NULL);
}

static void
test_an_owner_is_a_header_value(void)
{
	char	 big[300];

	CHECK(cluster_peer_owner_ok("alice"));
	CHECK(cluster_peer_owner_ok("bob@lab-1"));
	CHECK(!cluster_peer_owner_ok(""));
	CHECK(!cluster_peer_owner_ok("al ice"));
	CHECK(!cluster_peer_owner_ok("alice\r\nX-Gmux-Peer-Admin: 1"));
	CHECK(!cluster_peer_owner_ok("\xc3\xa9"));
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	CHECK(!cluster_peer_owner_ok(big));
}

static void
test_a_cluster_jobs_id(void)
{
	CHECK(cmd_cluster_id("gpu2.mio5xk2w"));
	CHECK(!cmd_cluster_id("j12"));
	CHECK(!cmd_cluster_id("j12_3"));
	CHECK(!cmd_cluster_id("gpu2:j12"));
	CHECK(!cmd_cluster_id("host.lan:j1"));
	CHECK(!cmd_cluster_id(".x"));
	CHECK(!cmd_cluster_id("x."));
}

int
main(void)
{
	char	*a, *b, *cause = NULL;

	if (tmpdir_init("peer") != 0)
		return (1);
	a = tpath("a");
	b = tpath("b");
	if ((ida = tls_identity_load(a, 1, &cause)) == NULL ||
	    (idb = tls_identity_load(b, 1, &cause)) == NULL)
		fatalx("%s", cause);
	base = event_base_new();
	RUN(test_a_members_call_shows_its_key);
	RUN(test_a_members_address_is_read);
	RUN(test_an_owner_is_a_header_value);
	RUN(test_a_cluster_jobs_id);
	evhttp_free(http);
	tls_server_free(ctx);
	event_base_free(base);
	tls_identity_free(ida);
	tls_identity_free(idb);
	free(a);
	free(b);
	tmpdir_cleanup();
	UNIT_EXIT();
}
