/*
 * test-cluster.c: the leader's scheduler (cluster-sched.c) against a real
 * etcd: a deposed leader's placement fails on the fencing compare and it
 * stops leading, with the queue untouched; the leader places by best fit,
 * in priority order; a job no member could hold is refused with a reason.
 */

#include <event2/event.h>

#include "cluster-int.h"
#include "unit.h"
#include "etcd-server.h"

static struct etcd_server	 srv;
static struct event_base	*base;
static int			 done;
static struct etcd_reply	 last;
static json_t			*lastval;	/* the first kv's value */

static void
cb(struct etcd_reply *r, const char *err, void *arg)
{
	struct etcd_kv	*lk = arg;

	if (err != NULL)
		fatalx("etcd: %s", err);
	done = 1;
	last.rev = r->rev;
	last.id = r->id;
	last.nkvs = r->nkvs;
	last.succeeded = r->succeeded;
	json_decref(lastval);
	lastval = r->nkvs > 0 ? json_loadb(r->kvs[0].value, r->kvs[0].vlen, 0,
	    NULL) : NULL;
	if (lk != NULL && r->leader.key != NULL) {
		free(lk->key);
		lk->key = xstrdup(r->leader.key);
		lk->create_rev = r->leader.create_rev;
		lk->lease = r->leader.lease;
	}
}

static void
wait_done(void)
{
	etcd_wait(cluster->etcd, &done);
	done = 0;
}

static void
put(const char *key, const char *val)
{
	etcd_txn(cluster->etcd, json_array(), json_pack("[o]",
	    etcd_op_put(key, val, 0)), NULL, cb, NULL);
	wait_done();
}

static void
del(const char *key)
{
	etcd_txn(cluster->etcd, json_array(), json_pack("[o]",
	    etcd_op_delete(key)), NULL, cb, NULL);
	wait_done();
}

/* The value of key, or NULL (it stays until the next call). */
static json_t *
get(const char *key)
{
	etcd_range(cluster->etcd, key, 0, cb, NULL);
	wait_done();
	return (lastval);
}

static u_int
count(const char *prefix)
{
	etcd_range(cluster->etcd, prefix, 1, cb, NULL);
	wait_done();
	return (last.nkvs);
}

static int64_t
grant(void)
{
	etcd_lease_grant(cluster->etcd, 30, cb, NULL);
	wait_done();
	return (last.id);
}

static void
lead(void)
{
	etcd_campaign(cluster->etcd, cluster->elect, "x", grant(), cb,
	    &cluster->lkey);
	wait_done();
	cluster->leading = 1;
	cluster_sched_start();
}

/* Runs the loop for ms (the mirrors' watches catch up). */
static void
settle(int64_t ms)
{
	int64_t	 end = clock_mono_ms() + ms;

	while (clock_mono_ms() < end) {
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		usleep(2000);
	}
}

/* Ticks the scheduler until n Txns have come back (or 5 s). */
static void
passes(u_int n)
{
	int64_t	 end = clock_mono_ms() + 5000;
	uint64_t placed, txns, t0;

	settle(300);
	cluster_sched_counts(&placed, &t0);
	while (n > 0 && clock_mono_ms() < end && cluster->leading) {
		cluster_sched_tick(clock_mono_ms());
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		cluster_sched_counts(&placed, &txns);
		if (txns > t0) {
			t0 = txns;
			n--;
		}
		usleep(2000);
	}
}

static void
test_deposed(void)
{
	struct etcd_kv	 old;

	put(cluster_key("m/x"), "{\"name\":\"x\",\"cards\":[{\"vendor\":"
	    "\"nvidia\",\"model\":\"H100\",\"memory\":85899345920}],"
	    "\"cpus\":8,\"ram\":1000000}");
	lead();
	old = cluster->lkey;
	old.key = xstrdup(old.key);
	/* deposed: its leader key is gone (resigned, as a lapsed lease) */
	etcd_resign(cluster->etcd, cluster->elect, &cluster->lkey, cb, NULL);
	wait_done();
	put(cluster_key("q/j.1"), "{\"id\":\"j.1\",\"owner\":\"o\",\"req\":"
	    "{\"argv\":[\"true\"],\"share\":0.5},\"submitted\":1,\"prio\":5}");
	passes(1);
	usleep(200000);
	event_base_loop(base, EVLOOP_NONBLOCK);
	CHECK(!cluster->leading);		/* it noticed */
	CHECK(count(cluster_key("q/")) == 1);	/* and wrote nothing */
	CHECK(count(cluster_key("a/")) == 0);
	free(old.key);
	/* a leader again: the same job is placed */
	lead();
	passes(1);
	CHECK(cluster->leading);
	CHECK(count(cluster_key("q/")) == 0);
	CHECK(count(cluster_key("a/x/")) == 1);
}

static void
test_best_fit_and_order(void)
{
	/* y has one card half used by j.1 (on x): a half share fits x best */
	put(cluster_key("m/y"), "{\"name\":\"y\",\"cards\":[{\"vendor\":"
	    "\"nvidia\",\"model\":\"A10\",\"memory\":25769803776}],"
	    "\"cpus\":8,\"ram\":1000000}");
	usleep(100000);
	put(cluster_key("q/j.2"), "{\"id\":\"j.2\",\"owner\":\"o\",\"req\":"
	    "{\"argv\":[\"true\"],\"share\":0.5},\"submitted\":10,\"prio\":5}");
	passes(1);
	CHECK(count(cluster_key("a/x/j.2")) == 1);	/* fills x's card */
	/* now both are full or nearly: a full card only fits on y */
	put(cluster_key("q/j.3"), "{\"id\":\"j.3\",\"owner\":\"o\",\"req\":"
	    "{\"argv\":[\"true\"],\"share\":1,\"priority\":1},"
	    "\"submitted\":20}");
	put(cluster_key("q/j.4"), "{\"id\":\"j.4\",\"owner\":\"o\",\"req\":"
	    "{\"argv\":[\"true\"],\"share\":1,\"priority\":9},"
	    "\"submitted\":30}");
	passes(1);
	/* the higher priority, though younger, goes first */
	CHECK(count(cluster_key("a/y/j.4")) == 1);
	CHECK(count(cluster_key("q/j.3")) == 1);
}

static const char *const on[] = { "x", "y", "p1", "p2" };

/* The MASTER_PORT of gang part id, wherever it is assigned (0: nowhere). */
static json_int_t
gang_port(const char *id)
{
	json_t	*o;
	u_int	 i;

	for (i = 0; i < nitems(on); i++) {
		if ((o = get(cluster_key("a/%s/%s", on[i], id))) != NULL)
			return (json_integer_value(json_object_get(
			    json_object_get(o, "gang"), "port")));
	}
	return (0);
}

/*
 * Two gangs whose ids hash to one MASTER_PORT (g.15 and g.28: 29818),
 * their rank 0 on one MASTER_ADDR: the second gets the next port free.
 */
static void
test_gang_ports(void)
{
	json_int_t	 p15, p28;

	put(cluster_key("m/p1"), "{\"name\":\"p1\",\"addr\":\"10.9.9.9:7070\","
	    "\"cards\":[],\"cpus\":8,\"ram\":1000000,\"tags\":\"gg\"}");
	put(cluster_key("m/p2"), "{\"name\":\"p2\",\"addr\":\"10.9.9.9:7071\","
	    "\"cards\":[],\"cpus\":8,\"ram\":1000000,\"tags\":\"gg\"}");
	usleep(100000);
	put(cluster_key("q/g.15"), "{\"id\":\"g.15\",\"owner\":\"o\",\"req\":"
	    "{\"argv\":[\"true\"],\"share\":0,\"nodes\":2,\"partition\":"
	    "\"gg\"},\"submitted\":40}");
	put(cluster_key("q/g.28"), "{\"id\":\"g.28\",\"owner\":\"o\",\"req\":"
	    "{\"argv\":[\"true\"],\"share\":0,\"nodes\":2,\"partition\":"
	    "\"gg\"},\"submitted\":41}");
	passes(1);
	CHECK(count(cluster_key("q/g.")) == 0);
	p15 = gang_port("g.15-0");
	p28 = gang_port("g.28-0");
	CHECK(p15 == gang_port("g.15-1") && p28 == gang_port("g.28-1"));
	CHECK(p15 == 29818 && p28 == 29819);
}

/* A part of gang gid (rank, owner o) assigned to member, not claimed. */
static void
put_part(const char *member, const char *gid, u_int rank, int requeue)
{
	char	*key, *val;

	xasprintf(&key, "%sa/%s/%s-%u", cluster->prefix, member, gid, rank);
	xasprintf(&val, "{\"id\":\"%s-%u\",\"owner\":\"o\",\"req\":{\"argv\":"
	    "[\"true\"],\"share\":0,\"nodes\":2,\"requeue\":%s},\"submitted\":"
	    "50,\"member\":\"%s\",\"gang\":{\"id\":\"%s\",\"rank\":%u,"
	    "\"size\":2,"
	    "\"master\":\"10.9.9.9\",\"port\":29600}}", gid, rank, requeue ?
	    "true" : "false", member, gid, rank);
	put(key, val);
	free(key);
	free(val);
}

static u_int
count_part(const char *id)
{
	u_int	 i, n = 0;

	for (i = 0; i < nitems(on); i++)
		n += count(cluster_key("a/%s/%s", on[i], id));
	return (n);
}

/*
 * A member that leaves with a gang's part: the part ends failed ("member
 * gone left"), the others are stopped, a --requeue gang is queued again
 * as its next attempt and placed only once its old parts have gone.
 */
static void
test_gang_member_left(void)
{
	json_t	*o;

	cluster->ttl = 0;	/* the grace alone */
	put_part("gone", "h.1", 0, 1);
	put_part("p1", "h.1", 1, 1);
	put_part("gone", "k.1", 0, 0);
	put_part("p2", "k.1", 1, 0);
	passes(1);
	o = get(cluster_key("e/h.1-0"));
	CHECK(o != NULL);
	CHECK_STR(json_string_value(json_object_get(o, "reason")),
	    "member gone left");
	CHECK_STR(json_string_value(json_object_get(o, "state")), "failed");
	CHECK(count(cluster_key("a/gone/")) == 0);
	CHECK(count(cluster_key("s/h.1-1")) == 1);
	CHECK(count(cluster_key("s/k.1-1")) == 1);
	CHECK(count(cluster_key("e/k.1-0")) == 1);
	CHECK(count(cluster_key("q/k.1")) == 0);	/* not --requeue */
	o = get(cluster_key("q/h.1"));
	CHECK(o != NULL && json_integer_value(json_object_get(o,
	    "attempt")) == 1);
	/* its part on p1 is still there: the next attempt waits */
	settle(300);
	cluster_sched_tick(clock_mono_ms());
	settle(300);
	CHECK(count(cluster_key("q/h.1")) == 1);
	del(cluster_key("a/p1/h.1-1"));		/* as p1's stop does */
	passes(1);
	CHECK(count(cluster_key("q/h.1")) == 0);
	CHECK(count_part("h.1-0.1") == 1 && count_part("h.1-1.1") == 1);
	cluster->ttl = 3;
}

/* Checks the reason cluster_refusal gives for s on m. */
static void
refused(struct cluster_member *m, struct cluster_shape *s, const char *want)
{
	char	*why = cluster_refusal(m, 1, s);

	CHECK_STR(why, want);
	free(why);
}

static void
test_refusal(void)
{
	struct cluster_member	 m[1];
	struct cluster_card	 c = { "nvidia", "H100", 80ULL << 30, 0 };
	struct cluster_shape	 s;
	char			*why;

	memset(m, 0, sizeof m);
	m[0].name = "x";
	m[0].cards = &c;
	m[0].ncards = 1;
	memset(&s, 0, sizeof s);
	s.seats = 100;
	s.ncards = 4;
	refused(m, &s, "no member has 4 GPUs");
	s.ncards = 1;
	s.mem = 100ULL << 30;
	refused(m, &s, "no member has a card with that much memory");
	s.mem = 0;
	CHECK(cluster_refusal(m, 1, &s) == NULL);
	m[0].ncards = 0;
	refused(m, &s, "no member has a GPU");
	s.seats = 0;
	s.ncards = 0;
	CHECK(cluster_refusal(m, 1, &s) == NULL);	/* CPU only */
	m[0].ncards = 1;
	s.seats = 50;
	s.ncards = 1;
	snprintf(s.type, sizeof s.type, "rtx4090");
	refused(m, &s, "no member has a GPU of type rtx4090");
	snprintf(s.type, sizeof s.type, "nvidia");
	CHECK(cluster_refusal(m, 1, &s) == NULL);
	s.ncards = 2;
	refused(m, &s, "no member has 2 GPUs of type nvidia");
	s.ncards = 1;
	snprintf(s.server, sizeof s.server, "y");
	refused(m, &s, "no member is named y");
	s.server[0] = '\0';
	m[0].cpus = 8;
	s.cpus = 9;
	refused(m, &s, "no member has 9 CPUs");
	s.cpus = 8;
	m[0].ram = 1ULL << 30;
	s.ram = 2ULL << 30;
	why = cluster_refusal(m, 1, &s);
	CHECK(why != NULL && strstr(why, "of RAM") != NULL);
	free(why);
	s.ram = 0;
	snprintf(s.tag, sizeof s.tag, "fast");
	refused(m, &s, "no member has the tag fast");
	m[0].tags = "slow,fast";
	CHECK(cluster_refusal(m, 1, &s) == NULL);
	/* overcommit admits on measured use: a card must measure it */
	s.mode = JOBSPEC_OVERCOMMIT;
	c.used = CARD_UNKNOWN;
	refused(m, &s, "mode: overcommit admits on measured memory use, and "
	    "no member measures its cards' (fake cards do not)");
	c.used = 0;
	CHECK(cluster_refusal(m, 1, &s) == NULL);
	s.mem = 81ULL << 30;
	refused(m, &s, "no member has a card with that much memory");
}

/* The gang ports /proc/net/tcp shows listening, and the record's list. */
static void
test_ports_held(void)
{
	static const char text[] =
	    "  sl  local_address rem_address   st tx_queue rx_queue ...\n"
	    "   0: 0100007F:7344 00000000:0000 0A 00000000:00000000 0\n"
	    "   1: 00000000:7345 0100007F:9C40 01 00000000:00000000 0\n"
	    "   2: 00000000:7339 00000000:0000 0A 00000000:00000000 0\n"
	    "   3: 00000000000000000000000000000000:752F "
	    "00000000000000000000000000000000:0000 0A 0\n"
	    "   4: 0100007F:7346 00000000:0000 0A";
	u_char	 held[CLUSTER_PORTS_BYTES], back[CLUSTER_PORTS_BYTES];
	json_t	*a;

	memset(held, 0, sizeof held);
	cluster_ports_parse(text, sizeof text - 1, held);
	CHECK(cluster_ports_has(held, 29508));		/* listening */
	CHECK(!cluster_ports_has(held, 29509));		/* a connection */
	CHECK(!cluster_ports_has(held, 29497));		/* not a gang's */
	CHECK(cluster_ports_has(held, 29999));		/* tcp6, the last */
	CHECK(cluster_ports_has(held, 29510));		/* no newline */
	a = json_pack("[i,i,i,i,s]", 29508, 29999, 29510, 30000, "x");
	cluster_ports_from_json(a, back);
	CHECK(memcmp(held, back, sizeof held) == 0);
	json_decref(a);
}

int
main(void)
{
	char	*cause = NULL;

	signal(SIGPIPE, SIG_IGN);
	base = event_base_new();
	RUN(test_refusal);
	RUN(test_ports_held);
	if (etcd_server_start(&srv) != 0) {
		printf("FAIL etcd_start (is etcd-server installed?)\n");
		etcd_server_stop(&srv);
		return (1);
	}
	cluster = xcalloc(1, sizeof *cluster);
	cluster->ttl = 3;
	cluster->id = xstrdup("u");
	cluster->name = xstrdup("x");
	cluster->prefix = xstrdup("/gmux/u/");
	cluster->elect = xstrdup("/gmux/u/el");
	if ((cluster->etcd = etcd_create(base, srv.url, &cause)) == NULL)
		fatalx("%s", cause);
	RUN(test_deposed);
	RUN(test_best_fit_and_order);
	RUN(test_gang_ports);
	RUN(test_gang_member_left);
	etcd_server_stop(&srv);
	UNIT_EXIT();
}
