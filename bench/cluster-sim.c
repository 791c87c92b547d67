/*
 * cluster-sim.c: the cluster's scheduler (src/cluster-sched.c, as the
 * daemon runs it) against 1,000 simulated members and 5,000 tenants
 * through a real etcd: placements per second, etcd writes per placement,
 * p99 of a pass's decision time, and the writes per second that 1,000
 * idle members cost (their keepalives are not writes).
 * Usage: cluster-sim ETCD_URL [MEMBERS] [JOBS]
 */

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "cluster-int.h"

static struct event_base *base;
static int64_t	 rev;
static int	 done;
static double	 naive_rate;

static void
cb(struct etcd_reply *r, const char *err, void *arg)
{
	struct etcd_kv	*lk = arg;

	if (err != NULL)
		fatalx("etcd: %s", err);
	rev = r->rev;
	if (lk != NULL && r->leader.key != NULL) {
		lk->key = xstrdup(r->leader.key);
		lk->create_rev = r->leader.create_rev;
		lk->lease = r->leader.lease;
	}
	if (lk != NULL && r->id != 0)
		lk->lease = r->id;
	done = 1;
}

static u_int	 pending;

static void
count_cb(struct etcd_reply *r, const char *err, void *arg)
{
	if (err != NULL)
		fatalx("etcd: %s", err);
	pending--;
}

static void
wait_call(void)
{
	etcd_wait(cluster->etcd, &done);
	done = 0;
}

static char *
record(u_int i)
{
	char	*s;

	xasprintf(&s, "{\"name\":\"s%u\",\"addr\":\"\",\"pin\":\"\","
	    "\"cards\":[%s],\"cpus\":64,\"ram\":549755813888,\"use\":{}}", i,
	    "{\"vendor\":\"nvidia\",\"model\":\"H100\",\"memory\":85899345920},"
	    "{\"vendor\":\"nvidia\",\"model\":\"H100\",\"memory\":85899345920},"
	    "{\"vendor\":\"nvidia\",\"model\":\"H100\",\"memory\":85899345920},"
	    "{\"vendor\":\"nvidia\",\"model\":\"H100\",\"memory\":"
	    "85899345920}");
	return (s);
}

/* Puts n ops per Txn (64 at most), from f(i). */
static void
put_many(u_int n, char *(*key)(u_int), char *(*val)(u_int), int64_t lease)
{
	json_t	*ops;
	u_int	 i = 0, k;
	char	*kk, *vv;

	while (i < n) {
		ops = json_array();
		for (k = 0; k < 64 && i < n; k++, i++) {
			kk = key(i);
			vv = val(i);
			json_array_append_new(ops, etcd_op_put(kk, vv, lease));
			free(kk);
			free(vv);
		}
		etcd_txn(cluster->etcd, json_array(), ops, NULL, cb, NULL);
		wait_call();
	}
}

static char *
mkey(u_int i)
{
	char	*s;

	xasprintf(&s, "%sm/s%u", cluster->prefix, i);
	return (s);
}

static char *
qkey(u_int i)
{
	char	*s;

	xasprintf(&s, "%sq/sim.%06u", cluster->prefix, i);
	return (s);
}

static char *
qval(u_int i)
{
	char	*s;

	xasprintf(&s, "{\"id\":\"sim.%06u\",\"owner\":\"tenant%u\",\"req\":"
	    "{\"argv\":[\"true\"],\"share\":0.25,\"priority\":%u},"
	    "\"submitted\":%lld,\"prio\":%u}", i, i % 5000, i % 10,
	    (long long)clock_ms() - i, i % 10);
	return (s);
}

static int64_t
now_us(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
}

static int64_t
cpu_us(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ((int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
}

static int
cmp64(const void *a, const void *b)
{
	int64_t	 x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x < y ? -1 : x > y);
}

/* Keepalives for every simulated member's lease for secs: writes/s. */
static double
idle_writes(int64_t *leases, u_int n, int secs)
{
	int64_t	 r0, t0, t;
	u_int	 i;

	etcd_range(cluster->etcd, "/", 0, cb, NULL);
	wait_call();
	r0 = rev;
	t0 = now_us();
	while (now_us() - t0 < (int64_t)secs * 1000000) {
		t = now_us();
		pending += n;
		for (i = 0; i < n; i++)
			etcd_keepalive(cluster->etcd, leases[i], count_cb,
			    NULL);
		while (pending > 0)
			event_base_loop(base, EVLOOP_ONCE);
		while (now_us() - t < 1000000)	/* one a second */
			usleep(10000);
	}
	etcd_range(cluster->etcd, "/", 0, cb, NULL);
	wait_call();
	return ((double)(rev - r0) / secs);
}

/*
 * The baseline, in the same run: one fenced Txn per placement, one after
 * another (what a scheduler without batches does).
 */
static void
naive(u_int n)
{
	int64_t	 t0 = now_us();
	u_int	 i;
	char	*k, *v, *a;

	for (i = 0; i < n; i++) {
		k = qkey(900000 + i);
		v = qval(900000 + i);
		xasprintf(&a, "%sa/s%u/naive.%u", cluster->prefix, i % 1000, i);
		etcd_txn(cluster->etcd, cluster_fence(json_array()),
		    json_pack("[oo]", etcd_op_delete(k), etcd_op_put(a, v, 0)),
		    NULL, cb, NULL);
		wait_call();
		free(k);
		free(v);
		free(a);
	}
	naive_rate = n / ((now_us() - t0) / 1e6);
}

static struct hmap	*seats;		/* "member/card" -> u_int * */
static u_int		 overfull;

static void
seats_cb(struct etcd_reply *r, const char *err, void *arg)
{
	json_t		*o, *c;
	u_int		 i, *used;
	size_t		 k;
	char		*key;
	double		 share;

	if (err != NULL)
		fatalx("etcd: %s", err);
	for (i = 0; i < r->nkvs; i++) {
		o = json_loads(r->kvs[i].value, 0, NULL);
		share = json_number_value(json_object_get(json_object_get(o,
		    "req"), "share"));
		json_array_foreach(json_object_get(o, "cards"), k, c) {
			xasprintf(&key, "%s/%lld", json_string_value(
			    json_object_get(o, "member")),
			    (long long)json_integer_value(c));
			if ((used = hmap_get(seats, key)) == NULL) {
				used = xcalloc(1, sizeof *used);
				hmap_put(seats, key, used);
			} else
				free(key);
			*used += (u_int)(share * 100 + 0.5);
			if (*used == SEATS_PER_CARD + 25)
				overfull++;
		}
		json_decref(o);
	}
	done = 1;
}

int
main(int argc, char **argv)
{
	u_int		 nm = argc > 2 ? (u_int)atoi(argv[2]) : 1000;
	u_int		 nj = argc > 3 ? (u_int)atoi(argv[3]) : 5000;
	struct etcd_kv	 lk;
	char		*cause = NULL, **keys = NULL;
	int64_t		*leases, t0, t, *pass = NULL, r0, r1, c0;
	uint64_t	 placed, txns;
	u_int		 i, npass = 0;
	json_t		*o;

	if (argc < 2)
		fatalx("usage: cluster-sim ETCD_URL [MEMBERS] [JOBS]");
	(void)keys;
	if (getenv("SIM_DEBUG") != NULL)
		log_open(2, NULL);
	base = event_base_new();
	cluster = xcalloc(1, sizeof *cluster);
	cluster->ttl = 3;
	cluster->name = xstrdup("sched");
	xasprintf(&cluster->prefix, "/gmux/sim%lld/", (long long)clock_ms());
	if ((cluster->etcd = etcd_create(base, argv[1], &cause)) == NULL)
		fatalx("%s", cause);
	/* 1,000 members, each its own lease (as each daemon has) */
	leases = xcalloc(nm, sizeof *leases);
	memset(&lk, 0, sizeof lk);
	for (i = 0; i < nm; i++) {
		etcd_lease_grant(cluster->etcd, 30, cb, &lk);
		wait_call();
		leases[i] = lk.lease;
	}
	for (i = 0; i < nm; i++) {
		char *k = mkey(i), *v = record(i);

		pending++;
		etcd_txn(cluster->etcd, json_array(), json_pack("[o]",
		    etcd_op_put(k, v, leases[i])), NULL, count_cb, NULL);
		free(k);
		free(v);
	}
	while (pending > 0)
		event_base_loop(base, EVLOOP_ONCE);
	printf("idle: %u members, their keepalives for 5 s: %.1f etcd "
	    "writes/s\n", nm, idle_writes(leases, nm, 5));
	fflush(stdout);
	/* the scheduler leads */
	etcd_campaign(cluster->etcd, "/gmux/simel", "sched", leases[0], cb,
	    &lk);
	wait_call();
	cluster->lkey = lk;
	cluster->leading = 1;
	put_many(nj, qkey, qval, 0);
	etcd_range(cluster->etcd, "/", 0, cb, NULL);
	wait_call();
	r0 = rev;
	cluster_sched_start();
	c0 = cpu_us();
	t0 = now_us();
	pass = xcalloc(nj + 100, sizeof *pass);
	for (;;) {
		cluster_sched_counts(&placed, &txns);
		if (placed >= nj || now_us() - t0 > 120 * 1000000LL)
			break;
		t = now_us();
		cluster_sched_tick(clock_mono_ms());
		t = now_us() - t;
		if (t > 50 && npass < nj + 100)
			pass[npass++] = t;	/* a pass that decided */
		event_base_loop(base, EVLOOP_ONCE);
	}
	t = now_us() - t0;
	c0 = cpu_us() - c0;
	etcd_range(cluster->etcd, "/", 0, cb, NULL);
	wait_call();
	r1 = rev;
	naive(200);
	seats = hmap_create();
	etcd_range(cluster->etcd, cluster_key("a/"), 1, seats_cb, NULL);
	wait_call();
	printf("audit: %zu cards hold the assignments, %u over 100%% "
	    "(must be 0)\n", hmap_count(seats), overfull);
	qsort(pass, npass, sizeof *pass, cmp64);
	printf("placement: %llu jobs of %u tenants on %u members in %.3f s: "
	    "%.0f placements/s (target >= 1000)\n", (unsigned long long)placed,
	    nj < 5000 ? nj : 5000, nm, t / 1e6, placed / (t / 1e6));
	printf("baseline (one fenced Txn per placement, in turn): %.0f "
	    "placements/s; batched: %.1fx\n", naive_rate, placed / (t / 1e6) /
	    naive_rate);
	printf("scheduler CPU: %.3f s for %llu placements: %.0f placements per "
	    "CPU-second (one core; the rest is waiting for etcd)\n",
	    c0 / 1e6, (unsigned long long)placed, placed / (c0 / 1e6));
	printf("etcd writes: %lld for %llu placements: %.3f per placement "
	    "(%llu fenced Txns)\n", (long long)(r1 - r0),
	    (unsigned long long)placed, (double)(r1 - r0) / (placed ? placed :
	    1), (unsigned long long)txns);
	if (npass > 0)
		printf("decision time of a pass (up to 60 jobs): median "
		    "%lld us, p99 %lld us, %u passes\n",
		    (long long)pass[npass / 2],
		    (long long)pass[npass * 99 / 100], npass);
	o = NULL;
	(void)o;
	return (placed >= nj && overfull == 0 ? 0 : 1);
}
