/*
 * test-etcd.c: etcd.c against a real etcd started here (kv, txn, leases,
 * watch, election and the leader's fencing compare), and its reply parser
 * on replies etcd sends.
 */

#include <fcntl.h>

#include <event2/event.h>

#include "cluster-int.h"
#include "unit.h"
#include "etcd-server.h"

static struct etcd_server	 srv;
static struct event_base	*base;
static struct etcd		*e;

struct got {
	int			 done;
	char			*err;
	struct etcd_reply	 r;	/* a copy of the fields tests read */
	int64_t			 mod;	/* of the first key */
	int64_t			 create;
	char			*value;
	u_int			 nkvs;
	u_int			 nmsgs;
	u_int			 nevents;
	u_int			 ndeleted;
};

static void
got_cb(struct etcd_reply *r, const char *err, void *arg)
{
	struct got	*g = arg;

	g->done = 1;
	g->nmsgs++;
	free(g->err);
	g->err = err != NULL ? xstrdup(err) : NULL;
	if (r == NULL)
		return;
	g->r.rev = r->rev;
	g->r.succeeded = r->succeeded;
	g->r.ttl = r->ttl;
	g->r.id = r->id;
	g->r.created = r->created;
	g->nkvs = r->nkvs;
	g->nevents += r->created ? 0 : r->nkvs;
	for (u_int i = 0; i < r->nkvs; i++)
		g->ndeleted += r->kvs[i].deleted;
	free(g->value);
	g->value = NULL;
	if (r->nkvs > 0) {
		g->mod = r->kvs[0].mod_rev;
		g->create = r->kvs[0].create_rev;
		g->value = xstrdup(r->kvs[0].value);
	}
	if (r->leader.key != NULL && *r->leader.key != '\0') {
		free(g->value);
		g->value = xstrdup(r->leader.key);
		g->create = r->leader.create_rev;
		g->r.leader.lease = r->leader.lease;
	}
}

static void
got_reset(struct got *g)
{
	free(g->err);
	free(g->value);
	memset(g, 0, sizeof *g);
}

static void
got_wait(struct got *g)
{
	etcd_wait(e, &g->done);
}

static void
test_urls(void)
{
	char		*cause = NULL;
	struct etcd	*x;

	CHECK((x = etcd_create(base, "http://127.0.0.1:1,http://[::1]:2",
	    &cause)) != NULL);
	CHECK_STR(etcd_endpoint(x), "127.0.0.1:1");
	etcd_free(x);
	CHECK(etcd_create(base, "https://a:1", &cause) == NULL);
	CHECK(cause != NULL && strstr(cause, "http://") != NULL);
	free(cause);
	cause = NULL;
	CHECK(etcd_create(base, "http://a", &cause) == NULL);
	free(cause);
	cause = NULL;
	CHECK(etcd_create(base, "http://a:99999", &cause) == NULL);
	free(cause);
	cause = NULL;
	CHECK(etcd_create(base, " , ", &cause) == NULL);
	free(cause);
}

static void
test_base64(void)
{
	const char	*in[] = { "", "f", "fo", "foo", "foob",
	    "/gmux/c1/q/x" };
	char		 enc[64];
	u_char		 dec[64];
	u_int		 i;

	for (i = 0; i < nitems(in); i++) {
		base64_encode((const u_char *)in[i], strlen(in[i]), enc);
		CHECK(base64_decode(enc, strlen(enc), dec) ==
		    (ssize_t)strlen(in[i]));
		CHECK_STR((char *)dec, in[i]);
	}
	base64_encode((const u_char *)"fo", 2, enc);
	CHECK_STR(enc, "Zm8=");
	CHECK(base64_decode("Zm8", 3, dec) == -1);
	CHECK(base64_decode("Z=8=", 4, dec) == -1);
	CHECK(base64_decode("Zm!=", 4, dec) == -1);
}

static void
test_parse(void)
{
	struct etcd_reply	 r;
	char			*cause = NULL;
	const char		*bad, *ok =
	    "{\"header\":{\"revision\":\"7\"},\"kvs\":"
	    "[{\"key\":\"Zm9v\",\"create_revision\":\"2\",\"mod_revision\":"
	    "\"5\",\"version\":\"3\",\"value\":\"YmFy\"}],\"count\":\"1\"}";

	CHECK(etcd_reply_parse(ok, strlen(ok), &r, &cause) == 0);
	CHECK(r.rev == 7 && r.nkvs == 1 && r.count == 1);
	CHECK_STR(r.kvs[0].key, "foo");
	CHECK_STR(r.kvs[0].value, "bar");
	CHECK(r.kvs[0].mod_rev == 5 && r.kvs[0].create_rev == 2);
	CHECK(etcd_reply_find(&r, "foo") != NULL);
	CHECK(etcd_reply_find(&r, "fo") == NULL);
	etcd_reply_clear(&r);
	bad = "{\"error\":\"x\",\"message\":\"boom\",\"code\":3}";
	CHECK(etcd_reply_parse(bad, strlen(bad), &r, &cause) == -1);
	CHECK(cause != NULL && strstr(cause, "boom") != NULL);
	free(cause);
	cause = NULL;
	etcd_reply_clear(&r);
	CHECK(etcd_reply_parse("{\"kvs\":[{\"key\":\"AA==\"}]}", 24, &r,
	    &cause) == -1);		/* a key with a NUL */
	free(cause);
	cause = NULL;
	etcd_reply_clear(&r);
	CHECK(etcd_reply_parse("{\"header\":{\"revision\":\"x\"}}", 27, &r,
	    &cause) == -1);
	free(cause);
	cause = NULL;
	etcd_reply_clear(&r);
	CHECK(etcd_reply_parse("[1]", 3, &r, &cause) == -1);
	free(cause);
	etcd_reply_clear(&r);
}

static void
test_kv(void)
{
	struct got	 g = { 0 };
	int64_t		 mod;

	/* create only if absent */
	etcd_txn(e, json_pack("[o]", etcd_cmp("/t/a", "CREATE", 0)),
	    json_pack("[o]", etcd_op_put("/t/a", "one", 0)), NULL, got_cb, &g);
	got_wait(&g);
	CHECK(g.err == NULL && g.r.succeeded);
	got_reset(&g);
	etcd_txn(e, json_pack("[o]", etcd_cmp("/t/a", "CREATE", 0)),
	    json_pack("[o]", etcd_op_put("/t/a", "two", 0)), NULL, got_cb, &g);
	got_wait(&g);
	CHECK(g.err == NULL && !g.r.succeeded);
	got_reset(&g);
	etcd_range(e, "/t/", 1, got_cb, &g);
	got_wait(&g);
	CHECK(g.err == NULL && g.nkvs == 1);
	CHECK(g.value != NULL && strcmp(g.value, "one") == 0);
	mod = g.mod;
	got_reset(&g);
	/* compare-and-swap on mod_revision: once only */
	etcd_txn(e, json_pack("[o]", etcd_cmp("/t/a", "MOD", mod)),
	    json_pack("[oo]", etcd_op_delete("/t/a"), etcd_op_put("/t/b",
	    "moved", 0)), NULL, got_cb, &g);
	got_wait(&g);
	CHECK(g.r.succeeded);
	got_reset(&g);
	etcd_txn(e, json_pack("[o]", etcd_cmp("/t/a", "MOD", mod)),
	    json_pack("[o]", etcd_op_put("/t/c", "twice", 0)),
	    json_pack("[o]", etcd_op_range("/t/", 1)), got_cb, &g);
	got_wait(&g);
	CHECK(!g.r.succeeded && g.nkvs == 1);
	CHECK(g.value != NULL && strcmp(g.value, "moved") == 0);
	got_reset(&g);
}

static void
test_lease(void)
{
	struct got	 g = { 0 };
	int64_t		 id;

	etcd_lease_grant(e, 2, got_cb, &g);
	got_wait(&g);
	CHECK(g.err == NULL && g.r.id != 0 && g.r.ttl == 2);
	id = g.r.id;
	got_reset(&g);
	etcd_txn(e, json_pack("[]"), json_pack("[o]", etcd_op_put("/t/l",
	    "leased", id)), NULL, got_cb, &g);
	got_wait(&g);
	got_reset(&g);
	etcd_keepalive(e, id, got_cb, &g);
	got_wait(&g);
	CHECK(g.err == NULL && g.r.ttl == 2);
	got_reset(&g);
	etcd_post(e, "/v3/lease/revoke", json_pack("{s:I}", "ID",
	    (json_int_t)id), got_cb, &g);
	got_wait(&g);
	CHECK(g.err == NULL);
	got_reset(&g);
	etcd_range(e, "/t/l", 0, got_cb, &g);
	got_wait(&g);
	CHECK(g.nkvs == 0);
	got_reset(&g);
	etcd_keepalive(e, id, got_cb, &g);
	got_wait(&g);
	CHECK(g.err == NULL && g.r.ttl == 0);	/* gone */
	got_reset(&g);
}

static void
test_watch(void)
{
	struct got		 g = { 0 }, w = { 0 };
	struct etcd_call	*c;

	c = etcd_watch(e, "/w/", 0, got_cb, &w);
	etcd_wait(e, &w.done);		/* created */
	CHECK(w.r.created && w.err == NULL);
	etcd_txn(e, json_pack("[]"), json_pack("[oo]", etcd_op_put("/w/1",
	    "x", 0), etcd_op_put("/w/2", "y", 0)), NULL, got_cb, &g);
	got_wait(&g);
	got_reset(&g);
	etcd_txn(e, json_pack("[]"), json_pack("[o]", etcd_op_delete("/w/1")),
	    NULL, got_cb, &g);
	got_wait(&g);
	while (w.nevents < 3 && w.err == NULL)
		event_base_loop(base, EVLOOP_ONCE);
	CHECK(w.nevents == 3 && w.ndeleted == 1);
	etcd_cancel(c);
	got_reset(&g);
	etcd_range(e, "/w/", 1, got_cb, &g);	/* the loop goes on */
	got_wait(&g);
	CHECK(g.nkvs == 1);
	got_reset(&g);
	got_reset(&w);
}

static int64_t
grant(void)
{
	struct got	 g = { 0 };
	int64_t		 id;

	etcd_lease_grant(e, 5, got_cb, &g);
	got_wait(&g);
	id = g.r.id;
	got_reset(&g);
	return (id);
}

/* The election, and the fencing compare that stops a deposed leader. */
static void
test_election(void)
{
	struct got	 a = { 0 }, b = { 0 }, g = { 0 };
	struct etcd_kv	 lk;
	int64_t		 la = grant(), lb = grant();
	char		*akey;

	etcd_campaign(e, "/el", "ma", la, got_cb, &a);
	etcd_wait(e, &a.done);
	CHECK(a.err == NULL && a.value != NULL && a.create > 0);
	etcd_campaign(e, "/el", "mb", lb, got_cb, &b);
	etcd_leader(e, "/el", got_cb, &g);
	got_wait(&g);
	CHECK(g.value != NULL && strcmp(g.value, "ma") == 0);
	got_reset(&g);
	CHECK(!b.done);
	/* a fenced write of a's holds while it leads */
	etcd_txn(e, json_pack("[o]", etcd_cmp(a.value, "CREATE", a.create)),
	    json_pack("[o]", etcd_op_put("/f/x", "a", 0)), NULL, got_cb, &g);
	got_wait(&g);
	CHECK(g.r.succeeded);
	got_reset(&g);
	memset(&lk, 0, sizeof lk);
	lk.key = akey = xstrdup(a.value);
	lk.create_rev = a.create;
	lk.lease = la;
	etcd_resign(e, "/el", &lk, got_cb, &g);
	got_wait(&g);
	CHECK(g.err == NULL);
	got_reset(&g);
	etcd_wait(e, &b.done);
	CHECK(b.err == NULL && b.value != NULL && strcmp(b.value, akey) != 0);
	/* deposed: a's fenced write fails, b's holds */
	etcd_txn(e, json_pack("[o]", etcd_cmp(akey, "CREATE", lk.create_rev)),
	    json_pack("[o]", etcd_op_put("/f/x", "a2", 0)), NULL, got_cb, &g);
	got_wait(&g);
	CHECK(g.err == NULL && !g.r.succeeded);
	got_reset(&g);
	etcd_txn(e, json_pack("[o]", etcd_cmp(b.value, "CREATE", b.create)),
	    json_pack("[o]", etcd_op_put("/f/x", "b", 0)), NULL, got_cb, &g);
	got_wait(&g);
	CHECK(g.r.succeeded);
	got_reset(&g);
	free(akey);
	got_reset(&a);
	got_reset(&b);
}

/* A dead endpoint first: the call fails, the next goes to the next one. */
static void
test_failover(void)
{
	struct got	 g = { 0 };
	struct etcd	*x, *keep = e;
	char		*urls, *cause = NULL;

	xasprintf(&urls, "http://127.0.0.1:%u,%s", etcd_server_free_port(),
	    srv.url);
	x = etcd_create(base, urls, &cause);
	free(urls);
	e = x;
	etcd_range(x, "/t/", 1, got_cb, &g);
	got_wait(&g);
	CHECK(g.err != NULL && strstr(g.err, "unreachable") != NULL);
	got_reset(&g);
	etcd_range(x, "/t/", 1, got_cb, &g);
	got_wait(&g);
	CHECK(g.err == NULL && g.nkvs == 1);
	got_reset(&g);
	etcd_free(x);
	e = keep;
}

static void
loop_ms(u_int ms)
{
	struct timeval	 tv = { 0, ms * 1000 };

	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

static u_int	 owned_freed;

static void
owned_free(void *arg)
{
	owned_freed++;
	free(arg);
}

static void
owned_cb(struct etcd_reply *r, const char *err, void *arg)
{
	CHECK(!"an owned call's callback is called");
}

/*
 * A client freed with a keepalive and a muted Txn waiting on an etcd that
 * went silent (a daemon stopping while etcd lost a member): both calls
 * are freed with it (LeakSanitizer, in the ASan+UBSan units, finds them
 * otherwise) and neither callback is called; an argument the callback
 * would have freed (etcd_call_owns) is freed once, a cancelled call's
 * is its canceller's.
 */
static void
test_free_in_flight(void)
{
	struct got		 g = { 0 }, h = { 0 };
	struct etcd		*x;
	struct etcd_call	*muted;
	char			*cause = NULL;

	x = etcd_create(base, srv.url, &cause);
	etcd_range(x, "/t/", 1, got_cb, &g);
	etcd_wait(x, &g.done);
	CHECK(g.err == NULL);
	got_reset(&g);
	etcd_server_pause(&srv);
	etcd_keepalive(x, 1, got_cb, &g);
	muted = etcd_txn(x, json_pack("[]"), json_pack("[o]",
	    etcd_op_put("/t/muted", "x", 0)), NULL, got_cb, &h);
	etcd_cancel(muted);
	etcd_call_owns(etcd_range(x, "/t/", 1, owned_cb, xstrdup("mine")),
	    owned_free);
	etcd_cancel(etcd_call_owns(etcd_range(x, "/t/", 1, owned_cb,
	    (void *)"its canceller's"), owned_free));
	loop_ms(200);		/* all written; etcd answers none */
	CHECK(!g.done && !h.done);
	owned_freed = 0;
	etcd_free(x);
	CHECK(owned_freed == 1);
	loop_ms(50);
	etcd_server_resume(&srv);
	CHECK(!g.done && !h.done);
	got_reset(&g);
	got_reset(&h);
}

int
main(void)
{
	char	*cause = NULL;

	signal(SIGPIPE, SIG_IGN);
	base = event_base_new();
	RUN(test_urls);
	RUN(test_base64);
	RUN(test_parse);
	if (etcd_server_start(&srv) != 0) {
		printf("FAIL etcd_start (is etcd-server installed?)\n");
		etcd_server_stop(&srv);
		return (1);
	}
	if ((e = etcd_create(base, srv.url, &cause)) == NULL)
		fatalx("%s", cause);
	RUN(test_kv);
	RUN(test_lease);
	RUN(test_watch);
	RUN(test_election);
	RUN(test_failover);
	RUN(test_free_in_flight);
	etcd_free(e);
	event_base_free(base);
	etcd_server_stop(&srv);
	UNIT_EXIT();
}
