/*
 * test-trust.c: the host's TLS identity and pin, a real pinned handshake
 * (the CLI's client against evhttp with tls_server_bev, as the daemon
 * serves it), tokens, the failure rate limit, target strings and the
 * client's list of remotes.
 */

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <netinet/in.h>

#include <signal.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "gmux.h"
#include "unit.h"
#include "tmpdir.h"

static int
file_mode(const char *path)
{
	struct stat	 st;

	return (stat(path, &st) == 0 ? (int)(st.st_mode & 0777) : -1);
}

static void
test_identity(void)
{
	struct tls_identity	*id, *again;
	char			*dir = tpath("tls"), *key, *cert;
	char			*cause = NULL, pin[DIGEST_HEX], *c1, *c2;

	id = tls_identity_load(dir, 0, &cause);
	CHECK(id == NULL && cause != NULL);	/* no key and not asked to */
	free(cause);
	cause = NULL;
	id = tls_identity_load(dir, 1, &cause);
	CHECK(id != NULL);
	if (id == NULL)
		return;
	key = tpath("tls/key.pem");
	cert = tpath("tls/cert.pem");
	CHECK(file_mode(key) == 0600 && file_mode(cert) == 0600);
	CHECK(digest_valid(tls_identity_pin(id)));
	memcpy(pin, tls_identity_pin(id), DIGEST_HEX);

	again = tls_identity_load(dir, 1, &cause);
	CHECK(again != NULL && strcmp(tls_identity_pin(again), pin) == 0);
	tls_identity_free(again);

	/* A new certificate for the same key keeps the pin. */
	c1 = read_file(cert, 65536, NULL, &cause);
	CHECK(tls_identity_reissue(id, &cause) == 0);
	c2 = read_file(cert, 65536, NULL, &cause);
	CHECK(c1 != NULL && c2 != NULL && strcmp(c1, c2) != 0);
	CHECK(strcmp(tls_identity_pin(id), pin) == 0);
	free(c1);
	free(c2);

	/* A lost certificate is issued again; the pin holds. */
	unlink(cert);
	again = tls_identity_load(dir, 0, &cause);
	CHECK(again != NULL && strcmp(tls_identity_pin(again), pin) == 0);
	CHECK(file_mode(cert) == 0600);
	tls_identity_free(again);
	tls_identity_free(id);
	free(key);
	free(cert);
	free(dir);
}

/* The test server: a child running evhttp over TLS, as the daemon will. */
static struct tokens	*srv_tokens;
static struct ratelimit	*srv_rl;
static int		 srv_requests;

static void
srv_handler(struct evhttp_request *req, void *arg)
{
	struct evbuffer	*out = evbuffer_new();
	const char	*auth;
	char		*peer, *owner = NULL, *cause = NULL, key[64], ra[16];
	ev_uint16_t	 port;
	int		 code, retry = 0;

	if (strcmp(evhttp_request_get_uri(req), "/count") == 0) {
		evbuffer_add_printf(out, "{\"count\":%d}", srv_requests);
		evhttp_send_reply(req, 200, "OK", out);
		evbuffer_free(out);
		return;
	}
	srv_requests++;
	evhttp_connection_get_peer(evhttp_request_get_connection(req), &peer,
	    &port);
	ratelimit_key(peer, key, sizeof key);
	auth = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "Authorization");
	code = tokens_authorize(srv_tokens, srv_rl, key, auth, clock_ms(),
	    &owner, &retry, &cause);
	if (code == 200)
		evbuffer_add_printf(out, "{\"owner\":\"%s\"}", owner);
	else
		evbuffer_add_printf(out, "{\"error\":\"%s\"}", cause);
	if (code == 429) {
		snprintf(ra, sizeof ra, "%d", retry);
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Retry-After", ra);
	}
	evhttp_send_reply(req, code, "", out);
	evbuffer_free(out);
	free(owner);
	free(cause);
}

/* Each connection's TLS bufferevent (no guard in this test). */
static struct bufferevent *
srv_bev(struct event_base *base, void *ctx)
{
	return (tls_server_bev(base, ctx, NULL));
}

static pid_t
srv_start(void *ctx, const char *addr, u_short *port)
{
	struct event_base		*base;
	struct evhttp			*http;
	struct evhttp_bound_socket	*bs;
	struct sockaddr_storage		 ss;
	socklen_t			 sl = sizeof ss;
	int				 p[2];
	pid_t				 pid;

	if (pipe(p) != 0)
		return (-1);
	if ((pid = fork()) != 0) {
		close(p[1]);
		if (read(p[0], port, sizeof *port) != sizeof *port)
			*port = 0;
		close(p[0]);
		return (pid);
	}
	base = event_base_new();
	http = evhttp_new(base);
	evhttp_set_bevcb(http, srv_bev, ctx);
	evhttp_set_gencb(http, srv_handler, NULL);
	*port = 0;
	if ((bs = evhttp_bind_socket_with_handle(http, addr, 0)) != NULL &&
	    getsockname(evconnlistener_get_fd(
	    evhttp_bound_socket_get_listener(bs)), (struct sockaddr *)&ss,
	    &sl) == 0)
		*port = ntohs(ss.ss_family == AF_INET6 ?
		    ((struct sockaddr_in6 *)&ss)->sin6_port :
		    ((struct sockaddr_in *)&ss)->sin_port);
	if (write(p[1], port, sizeof *port) != sizeof *port || *port == 0)
		_exit(1);
	close(p[1]);
	event_base_dispatch(base);
	_exit(0);
}

/*
 * A request as the CLI makes it (client.c over conn.c and tls.c): the pin
 * checked in the handshake, the token in its header.  Returns the status
 * (0 if no reply came, with *err), the body as text in *body.
 */
static long
cli_get(const struct target *t, const char *path, char **body, char **err)
{
	struct client_reply	 r;
	long			 code = 0;

	*body = NULL;
	if (client_call_at(t, "GET", path, NULL, &r) != 0)
		*err = xstrdup(r.error ? r.error : "?");
	else {
		code = r.status;
		if (r.body != NULL)
			*body = json_dumps(r.body, JSON_COMPACT);
	}
	client_reply_clear(&r);
	return (code);
}

static int
srv_count(const struct target *t)
{
	char	*body = NULL, *err = NULL;
	int	 n = -1;

	if (cli_get(t, "/count", &body, &err) == 200 && body != NULL)
		n = atoi(body + strlen("{\"count\":"));
	free(body);
	free(err);
	return (n);
}

static void
test_handshake(void)
{
	struct tls_identity	*id, *other;
	struct target		 good, bad;
	void			*ctx;
	char			*cause = NULL, *dir, *odir, *tokpath;
	char			*secret, *tid;
	char			*body = NULL, *err = NULL, *secret2, *tid2;
	u_short			 port;
	pid_t			 pid;
	int			 status;

	dir = tpath("hs");
	odir = tpath("hs-other");
	tokpath = tpath("hs-tokens.json");
	id = tls_identity_load(dir, 1, &cause);
	other = tls_identity_load(odir, 1, &cause);
	ctx = tls_server_create(id, &cause);
	srv_tokens = tokens_open(tokpath, &cause);
	CHECK(id && other && ctx && srv_tokens);
	CHECK(tokens_add(srv_tokens, "alice", &secret, &tid, &cause) == 0);
	CHECK(tokens_add(srv_tokens, "bob", &secret2, &tid2, &cause) == 0);
	srv_rl = ratelimit_create(3, 60000, 60000, 100);
	pid = srv_start(ctx, "127.0.0.1", &port);
	CHECK(pid > 0 && port != 0);

	memset(&good, 0, sizeof good);
	good.token = secret;
	good.host = (char *)"127.0.0.1";
	good.port = port;
	memcpy(good.pin, tls_identity_pin(id), DIGEST_HEX);
	bad = good;
	memcpy(bad.pin, tls_identity_pin(other), DIGEST_HEX);

	CHECK(cli_get(&good, "/v1/version", &body, &err) == 200);
	CHECK(body != NULL && strstr(body, "alice") != NULL);
	free(body);
	CHECK(srv_count(&good) == 1);

	/* Wrong pin: refused in the handshake, no request reaches the host. */
	CHECK(cli_get(&bad, "/v1/version", &body, &err) == 0);
	CHECK(err != NULL && strstr(err, "impostor") != NULL);
	CHECK(err != NULL && strstr(err, tls_identity_pin(id)) != NULL);
	free(err);
	err = NULL;
	free(body);
	CHECK(srv_count(&good) == 1);

	/* Revoked (by another process: the server rereads the file). */
	good.token = secret2;
	CHECK(cli_get(&good, "/v1/version", &body, &err) == 200);
	free(body);
	CHECK(tokens_revoke(srv_tokens, tid2, &cause) == 0);
	CHECK(cli_get(&good, "/v1/version", &body, &err) == 401);
	free(body);

	/* Wrong tokens: 401 until the limit, then 429 even for a good one. */
	good.token = (char *)"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
	CHECK(cli_get(&good, "/v1/version", &body, &err) == 401);
	free(body);
	CHECK(cli_get(&good, "/v1/version", &body, &err) == 401);  /* third */
	free(body);
	good.token = secret;
	CHECK(cli_get(&good, "/v1/version", &body, &err) == 429);
	CHECK(body != NULL && strstr(body, "too many") != NULL);
	free(body);

	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	free(secret);
	free(secret2);
	free(tid);
	free(tid2);
	tokens_free(srv_tokens);
	ratelimit_free(srv_rl);
	tls_server_free(ctx);
	tls_identity_free(id);
	tls_identity_free(other);
	free(dir);
	free(odir);
	free(tokpath);
}

/* The same over IPv6 loopback, with the target string's [::1] form. */
static void
test_handshake_v6(void)
{
	struct tls_identity	*id;
	struct target		 t;
	void			*ctx;
	char			*cause = NULL, *dir, *tokpath, *s;
	char			*secret, *tid;
	char			*body = NULL, *err = NULL;
	u_short			 port;
	pid_t			 pid;
	int			 status;

	dir = tpath("hs6");
	tokpath = tpath("hs6-tokens.json");
	id = tls_identity_load(dir, 1, &cause);
	ctx = tls_server_create(id, &cause);
	srv_tokens = tokens_open(tokpath, &cause);
	CHECK(tokens_add(srv_tokens, "carol", &secret, &tid, &cause) == 0);
	srv_rl = ratelimit_create(10, 60000, 60000, 100);
	pid = srv_start(ctx, "::1", &port);
	if (port == 0) {
		printf("skip test_handshake_v6: no IPv6 loopback\n");
		waitpid(pid, &status, 0);
	} else {
		xasprintf(&s, "%s@[::1]:%u#%s", secret, port,
		    tls_identity_pin(id));
		CHECK(target_parse(s, &t, &cause) == 0);
		free(s);
		CHECK(cli_get(&t, "/v1/version", &body, &err) == 200);
		CHECK(body != NULL && strstr(body, "carol") != NULL);
		free(body);
		free(err);
		target_clear(&t);
		kill(pid, SIGTERM);
		waitpid(pid, &status, 0);
	}
	free(secret);
	free(tid);
	tokens_free(srv_tokens);
	ratelimit_free(srv_rl);
	tls_server_free(ctx);
	tls_identity_free(id);
	free(dir);
	free(tokpath);
}

static void
test_tokens(void)
{
	struct tokens		*t, *t2;
	const struct token	*tk;
	json_t			*j;
	char			*path = tpath("tokens.json"), *cause = NULL;
	char			*s1, *id1, *s2, *id2, *text;

	t = tokens_open(path, &cause);
	CHECK(t != NULL && t->n == 0);
	CHECK(tokens_add(t, "alice", &s1, &id1, &cause) == 0);
	CHECK(tokens_add(t, "bob", &s2, &id2, &cause) == 0);
	CHECK_STR(id1, "t1");
	CHECK_STR(id2, "t2");
	CHECK(strlen(s1) == 43 && strcmp(s1, s2) != 0);
	CHECK(file_mode(path) == 0600);
	text = read_file(path, 1 << 20, NULL, &cause);
	CHECK(text != NULL && strstr(text, s1) == NULL);  /* hashes only */
	free(text);
	tk = tokens_check(t, s1);
	CHECK(tk != NULL && strcmp(tk->owner, "alice") == 0);
	CHECK(tokens_check(t, "nope") == NULL);
	CHECK(tokens_add(t, "bad name", &s2, &id2, &cause) == -1);
	free(cause);
	cause = NULL;

	/* Another process revokes; this one notices. */
	t2 = tokens_open(path, &cause);
	CHECK(tokens_revoke(t2, "t1", &cause) == 0);
	CHECK(tokens_revoke(t2, "t9", &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(tokens_refresh(t, &cause) == 0);
	CHECK(tokens_check(t, s1) == NULL);
	CHECK(tokens_check(t, s2) != NULL);
	j = tokens_to_json(t, NULL);
	CHECK(json_array_size(j) == 2);
	text = json_dumps(j, 0);
	CHECK(strstr(text, "sha256") == NULL && strstr(text, "alice") != NULL);
	free(text);
	json_decref(j);
	CHECK(tokens_parse("{\"tokens\":[{\"id\":\"t1\"}]}", 24, t, &cause) ==
	    -1);
	free(cause);
	tokens_free(t);
	tokens_free(t2);
	free(s1);
	free(s2);
	free(id1);
	free(id2);
	free(path);
}

/* Invites: kept as hashes, traded for tokens of their owner, expire. */
static void
test_invites(void)
{
	struct tokens		*t;
	const struct token	*inv, *tk;
	char			*path = tpath("invites.json"), *cause = NULL;
	char			*si, *idi, *st1, *id1, *st2, *id2, *text;
	int64_t			 before = clock_ms();

	t = tokens_open(path, &cause);
	CHECK(tokens_invite(t, "alice", &si, &idi, &cause) == 0);
	inv = tokens_check(t, si);
	CHECK(inv != NULL && inv->expires > before);
	CHECK(tokens_join(t, inv, &st1, &id1, &cause) == 0);
	inv = tokens_check(t, si);		/* good for more machines */
	CHECK(tokens_join(t, inv, &st2, &id2, &cause) == 0);
	CHECK(strcmp(st1, st2) != 0 && strcmp(st1, si) != 0);
	tk = tokens_check(t, st1);
	CHECK(tk != NULL && tk->expires == 0 && strcmp(tk->owner,
	    "alice") == 0);
	CHECK(tokens_join(t, tk, &st2, &id2, &cause) == -1);	/* a token */
	free(cause);
	cause = NULL;
	text = read_file(path, 1 << 20, NULL, &cause);
	CHECK(text != NULL && strstr(text, "\"expires\"") != NULL);
	free(text);
	/* Read again, the invite keeps its expiry; past it, it is no more. */
	CHECK(tokens_refresh(t, &cause) == 0);
	inv = tokens_check(t, si);
	CHECK(inv != NULL && inv->expires > before);
	((struct token *)inv)->expires = before - 1;
	CHECK(tokens_check(t, si) == NULL);
	tokens_free(t);
	free(si);
	free(idi);
	free(st1);
	free(id1);
	free(st2);
	free(id2);
	free(path);
}

static void
test_ratelimit(void)
{
	struct ratelimit	*rl = ratelimit_create(10, 60000, 60000, 3);
	char			 key[64];
	int			 i;

	for (i = 0; i < 9; i++)
		ratelimit_fail(rl, "10.0.0.1", 1000 + i);
	CHECK(ratelimit_check(rl, "10.0.0.1", 2000) == 0);
	ratelimit_fail(rl, "10.0.0.1", 2000);
	CHECK(ratelimit_check(rl, "10.0.0.1", 2000) == 60000);
	CHECK(ratelimit_check(rl, "10.0.0.1", 61999) == 1);
	CHECK(ratelimit_check(rl, "10.0.0.1", 62000) == 0);
	CHECK(ratelimit_check(rl, "10.0.0.2", 2000) == 0);

	/* Failures spread wider than the window never block. */
	for (i = 0; i < 30; i++)
		ratelimit_fail(rl, "10.0.0.3", 100000 + i * 7000);
	CHECK(ratelimit_check(rl, "10.0.0.3", 100000 + 30 * 7000) == 0);

	/* Bounded: the source seen least recently is forgotten. */
	ratelimit_fail(rl, "a", 1);
	ratelimit_fail(rl, "b", 1);
	ratelimit_fail(rl, "c", 1);
	CHECK(ratelimit_count(rl) == 3);
	ratelimit_free(rl);

	ratelimit_key("192.0.2.7", key, sizeof key);
	CHECK_STR(key, "192.0.2.7");
	ratelimit_key("2001:db8:1:2:3:4:5:6", key, sizeof key);
	CHECK_STR(key, "2001:db8:1:2::/64");
	ratelimit_key("::ffff:192.0.2.7", key, sizeof key);
	CHECK_STR(key, "192.0.2.7");
}

#define PIN64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define TOK "abcdefghijklmnopqrstuvwxyz_-0123"

static void
test_target(void)
{
	struct target	 t;
	char		*cause = NULL, *s;

	CHECK(target_parse(TOK "@gpu1.example.com:7071#" PIN64, &t, &cause) ==
	    0);
	CHECK_STR(t.host, "gpu1.example.com");
	CHECK(t.port == 7071 && strcmp(t.token, TOK) == 0);
	s = target_format(&t);
	CHECK_STR(s, TOK "@gpu1.example.com:7071#" PIN64);
	free(s);
	target_clear(&t);

	CHECK(target_parse(TOK "@[::1]:7070#" PIN64, &t, &cause) == 0);
	CHECK_STR(t.host, "::1");
	s = target_hostport(&t);
	CHECK_STR(s, "[::1]:7070");
	free(s);
	target_clear(&t);
	CHECK(target_parse(TOK "@[fe80::1]#" PIN64, &t, &cause) == 0);
	CHECK(t.port == TARGET_PORT);
	target_clear(&t);
	CHECK(target_parse(TOK "@10.0.0.1#" "0123456789ABCDEF0123456789abcdef"
	    "0123456789abcdef0123456789abcdef", &t, &cause) == 0);
	CHECK_STR(t.pin, PIN64);	/* lowercased */
	target_clear(&t);

	static const char *bad[] = {
		"@host:1#" PIN64,			/* no token */
		"short@host:1#" PIN64,
		TOK "@host:1#" "abc",			/* short pin */
		TOK "@host:0#" PIN64,
		TOK "@host:65536#" PIN64,
		TOK "@host:#" PIN64,
		TOK "@::1:7070#" PIN64,			/* IPv6 without [] */
		TOK "@[::1#" PIN64,
		TOK "@[nothex]:7#" PIN64,
		TOK "@ho st:7#" PIN64,
		TOK "@:7070#" PIN64,
		TOK "host:7070#" PIN64,
		TOK "@host:7070",
		TOK "@[::1]x#" PIN64,
	};
	for (size_t i = 0; i < nitems(bad); i++) {
		cause = NULL;
		CHECK(target_parse(bad[i], &t, &cause) == -1);
		CHECK(cause != NULL && strstr(cause, TOK) == NULL);
		free(cause);
	}
}

static void
test_remotes(void)
{
	struct remotes	 rs, back;
	char		*path = tpath("cfg/remotes.json"), *cause = NULL;
	char		*text, *line;
	json_t		*j;

	CHECK(remotes_load(&rs, path, &cause) == 0 && rs.n == 0);
	CHECK(remotes_add(&rs, "gpu1", TOK "@gpu1:7070#" PIN64, &cause) == 0);
	CHECK(remotes_add(&rs, "gpu2", TOK "@[::1]:7071#" PIN64, &cause) == 0);
	CHECK(remotes_add(&rs, "gpu1", TOK "@x#" PIN64, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(remotes_add(&rs, "-x", TOK "@x#" PIN64, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK_STR(rs.dflt, "gpu1");
	CHECK(remotes_set_default(&rs, "gpu2", &cause) == 0);
	CHECK(remotes_save(&rs, &cause) == 0);
	CHECK(file_mode(path) == 0600);
	CHECK(remotes_load(&back, path, &cause) == 0 && back.n == 2);
	CHECK_STR(back.dflt, "gpu2");
	CHECK(remotes_find(&back, "gpu2")->target.port == 7071);
	j = remotes_to_json(&back);
	text = json_dumps(j, 0);
	CHECK(strstr(text, TOK) == NULL && strstr(text, PIN64) != NULL);
	free(text);
	json_decref(j);
	CHECK(remotes_rm(&back, "gpu2", &cause) == 0);
	CHECK_STR(back.dflt, "gpu1");
	CHECK(remotes_rm(&back, "gpu2", &cause) == -1);
	free(cause);
	remotes_clear(&back);
	remotes_clear(&rs);
	free(path);

	line = remotes_invite(TOK, "gpu1.lan", 7070, PIN64);
	CHECK_STR(line, "gmux remote add NAME " TOK "@gpu1.lan:7070#" PIN64);
	free(line);
}

static void
test_pick(void)
{
	struct remote_card_room	 a[] = { { 50, 40ULL << 30 } };
	struct remote_card_room	 b[] = { { 10, 80ULL << 30 },
				    { 75, 20ULL << 30 } };
	struct remote_card_room	 c[] = { { 75, 20ULL << 30 } };
	struct remote_room	 v[] = {
		{ 1, 0, a, 1 }, { 1, 0, b, 2 }, { 0, 0, c, 1 },
	};

	CHECK(remotes_pick(v, 3, 25, 10ULL << 30) == 1);  /* 75 seats free */
	CHECK(remotes_pick(v, 3, 25, 30ULL << 30) == 0);  /* memory */
	CHECK(remotes_pick(v, 3, 90, 1) == 0);		  /* none fits: first */
	v[1].is_default = 1;
	CHECK(remotes_pick(v, 3, 90, 1) == 1);		  /* ... or default */
	v[0].cards = c;
	v[1].cards = c;
	v[1].ncards = 1;
	v[0].is_default = 0;
	CHECK(remotes_pick(v, 3, 25, 1) == 1);		  /* tie: default */
	v[0].ok = v[1].ok = 0;
	CHECK(remotes_pick(v, 3, 25, 1) == -1);
}

/*
 * Several hosts at once (client_multi): one answers, one shows the wrong
 * key, one port is closed; each gets its own answer, and a timeout bounds
 * them all.  Then requests one after the other on the kept connection.
 */
static void
test_multi(void)
{
	struct tls_identity	*id, *other;
	struct client_req	 q[3];
	struct target		 t[3];
	void			*ctx;
	char			*cause = NULL, *dir, *odir, *tokpath, *secret;
	char			*tid, *body = NULL, *err = NULL;
	u_short			 port, shut;
	pid_t			 pid;
	int64_t			 t0;
	int			 status, i;

	dir = tpath("mu");
	odir = tpath("mu-other");
	tokpath = tpath("mu-tokens.json");
	id = tls_identity_load(dir, 1, &cause);
	other = tls_identity_load(odir, 1, &cause);
	ctx = tls_server_create(id, &cause);
	srv_tokens = tokens_open(tokpath, &cause);
	CHECK(tokens_add(srv_tokens, "dan", &secret, &tid, &cause) == 0);
	srv_rl = ratelimit_create(10, 60000, 60000, 100);
	pid = srv_start(ctx, "127.0.0.1", &port);
	shut = port + 1;	/* nothing listens there (most likely) */
	for (i = 0; i < 3; i++) {
		memset(&t[i], 0, sizeof t[i]);
		t[i].token = secret;
		t[i].host = (char *)"127.0.0.1";
		t[i].port = i == 2 ? shut : port;
		memcpy(t[i].pin, tls_identity_pin(i == 1 ? other : id),
		    DIGEST_HEX);
		client_req_init(&q[i], &t[i], "GET", "/v1/version");
	}
	t0 = clock_mono_ms();
	client_multi(q, 3, 1500);
	CHECK(clock_mono_ms() - t0 < 1500);
	CHECK(q[0].reply.status == 200 && q[0].reply.error == NULL);
	CHECK(q[1].reply.status == 0 && q[1].reply.error != NULL &&
	    strstr(q[1].reply.error, "impostor") != NULL);
	CHECK(q[2].reply.status == 0 && q[2].reply.error != NULL);
	for (i = 0; i < 3; i++)
		client_reply_clear(&q[i].reply);
	for (i = 0; i < 5; i++) {
		CHECK(cli_get(&t[0], "/v1/version", &body, &err) == 200);
		free(body);
	}
	CHECK(srv_count(&t[0]) == 6);
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	free(secret);
	free(tid);
	tokens_free(srv_tokens);
	ratelimit_free(srv_rl);
	tls_server_free(ctx);
	tls_identity_free(id);
	tls_identity_free(other);
	free(dir);
	free(odir);
	free(tokpath);
}

int
main(void)
{
	if (tmpdir_init("trust") != 0)
		return (1);
	RUN(test_identity);
	RUN(test_handshake);
	RUN(test_handshake_v6);
	RUN(test_multi);
	RUN(test_tokens);
	RUN(test_invites);
	RUN(test_ratelimit);
	RUN(test_target);
	RUN(test_remotes);
	RUN(test_pick);
	if (tmpdir_cleanup() != 0)
		return (1);
	UNIT_EXIT();
}
