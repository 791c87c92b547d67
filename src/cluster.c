/*
 * cluster.c: this daemon as a member of a cluster on etcd (docs/cluster.md):
 * its lease and keepalives, its record, its campaign, and leading.  All of
 * it runs from one timer on the daemon's loop; every etcd call is
 * asynchronous, so an etcd that is slow or gone never stalls local jobs.
 */

#include <sys/sysinfo.h>

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "cluster-int.h"

static void	 cluster_set_error(const char *, ...) printflike(1, 2);

struct cluster		*cluster;
static struct event	*cluster_ev;

/*
 * A key under the cluster's prefix, in one of two buffers that the calls
 * take in turn: use it at once (an argument), never keep it across
 * another call.
 */
const char *
cluster_key(const char *fmt, ...)
{
	static char	 buf[2][512];
	static int	 which;
	char		*b = buf[which ^= 1];
	va_list		 ap;
	int		 n;

	n = snprintf(b, sizeof buf[0], "%s", cluster->prefix);
	va_start(ap, fmt);
	vsnprintf(b + n, sizeof buf[0] - (size_t)n, fmt, ap);
	va_end(ap);
	return (b);
}

static void
cluster_set_error(const char *fmt, ...)
{
	va_list	 ap;
	char	*s;

	va_start(ap, fmt);
	xvasprintf(&s, fmt, ap);
	va_end(ap);
	if (cluster->error == NULL || strcmp(cluster->error, s) != 0)
		log_warnx("cluster %s: %s", cluster->id, s);
	free(cluster->error);
	cluster->error = s;
}

static void
cluster_clear_error(void)
{
	if (cluster->error != NULL)
		log_info("cluster %s: member %s", cluster->id, cluster->name);
	free(cluster->error);
	cluster->error = NULL;
}

static int
cluster_name_ok(const char *s, size_t max)
{
	size_t	 n = strlen(s);

	return (n > 0 && n <= max && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789_-") == n);
}

/*
 * A gang's part's job id: ID-RANK, and .ATTEMPT once the gang has been
 * requeued, so that no id is used twice (the caller frees it).
 */
char *
cluster_part_id(const char *gid, u_int rank, u_int attempt)
{
	char	*id;

	if (attempt == 0)
		xasprintf(&id, "%s-%u", gid, rank);
	else
		xasprintf(&id, "%s-%u.%u", gid, rank, attempt);
	return (id);
}

/* A stop's value, s/ID: who asked, {"owner": ...} (the caller frees it). */
char *
cluster_stop_value(json_t *owner)
{
	json_t	*o = json_pack("{s:O?}", "owner", owner);
	char	*text = json_dumps(o, JSON_COMPACT);

	json_decref(o);
	return (text);
}

/* ------------------------------------------------------------------ */
/* Member records. */

void
cluster_member_clear(struct cluster_member *m)
{
	u_int	 i;

	for (i = 0; i < m->ncards; i++) {
		free(m->cards[i].vendor);
		free(m->cards[i].model);
	}
	free(m->cards);
	free(m->name);
	free(m->addr);
	free(m->pin);
	free(m->tags);
	memset(m, 0, sizeof *m);
}

static int
cluster_card_parse(json_t *o, struct cluster_card *c)
{
	json_t	*v = json_object_get(o, "vendor"), *md, *mem;

	md = json_object_get(o, "model");
	mem = json_object_get(o, "memory");
	if (!json_is_string(v) || !json_is_string(md) ||
	    !json_is_integer(mem) || json_integer_value(mem) < 0)
		return (-1);
	c->vendor = xstrdup(json_string_value(v));
	c->model = xstrdup(json_string_value(md));
	c->memory = (uint64_t)json_integer_value(mem);
	c->used = CARD_UNKNOWN;		/* until its use says */
	return (0);
}

/* Each card's memory in use, measured (its record's "use"), if given. */
static void
cluster_use_parse(json_t *use, struct cluster_member *m)
{
	json_t	*x, *mem;
	size_t	 i;

	json_array_foreach(json_object_get(use, "cards"), i, x) {
		mem = json_object_get(x, "mem_used");
		if (i < m->ncards && json_is_integer(mem) &&
		    json_integer_value(mem) >= 0)
			m->cards[i].used = (uint64_t)json_integer_value(mem);
	}
}

/* Parses a member record; -1 with *cause if a field is missing or bad. */
int
cluster_member_parse(json_t *o, struct cluster_member *m, char **cause)
{
	json_t		*cards, *x;
	const char	*name = json_string_value(json_object_get(o, "name"));
	size_t		 i;

	memset(m, 0, sizeof *m);
	cards = json_object_get(o, "cards");
	if (name == NULL || !cluster_name_ok(name, 63) ||
	    !json_is_array(cards) || json_array_size(cards) > CARDS_MAX ||
	    !json_is_integer(json_object_get(o, "cpus")) ||
	    !json_is_integer(json_object_get(o, "ram"))) {
		xasprintf(cause, "not a member record");
		return (-1);
	}
	m->name = xstrdup(name);
	m->cards = xcalloc(json_array_size(cards) + 1, sizeof *m->cards);
	json_array_foreach(cards, i, x) {
		if (cluster_card_parse(x, &m->cards[m->ncards]) != 0) {
			xasprintf(cause, "member %s: bad card", name);
			cluster_member_clear(m);
			return (-1);
		}
		m->gpumem += m->cards[m->ncards++].memory;
	}
	cluster_use_parse(json_object_get(o, "use"), m);
	m->cpus = (u_int)json_integer_value(json_object_get(o, "cpus"));
	m->ram = (uint64_t)json_integer_value(json_object_get(o, "ram"));
	if ((x = json_object_get(o, "addr")) != NULL && json_is_string(x))
		m->addr = xstrdup(json_string_value(x));
	if ((x = json_object_get(o, "pin")) != NULL && json_is_string(x))
		m->pin = xstrdup(json_string_value(x));
	if ((x = json_object_get(o, "tags")) != NULL && json_is_string(x))
		m->tags = xstrdup(json_string_value(x));
	cluster_ports_from_json(json_object_get(o, "ports_held"), m->held);
	return (0);
}

/*
 * Orders members by capability: negative if a is the more capable (more
 * GPU memory, then cards, then CPUs, then the lower name).
 */
int
cluster_member_cmp(const struct cluster_member *a,
    const struct cluster_member *b)
{
	if (a->gpumem != b->gpumem)
		return (a->gpumem > b->gpumem ? -1 : 1);
	if (a->ncards != b->ncards)
		return (a->ncards > b->ncards ? -1 : 1);
	if (a->cpus != b->cpus)
		return (a->cpus > b->cpus ? -1 : 1);
	return (strcmp(a->name, b->name));
}

static uint64_t
cluster_step(uint64_t v, uint64_t step)
{
	return (v / step * step);
}

/* Card i's memory in use as published (cluster_use_step). */
static uint64_t
cluster_use_mem(u_int i, uint64_t measured)
{
	static uint64_t	*pub;
	static u_int	 npub;

	if (measured == CARD_UNKNOWN)
		return (CARD_UNKNOWN);
	if (i >= npub) {
		pub = xreallocarray(pub, i + 1, sizeof *pub);
		while (npub <= i)
			pub[npub++] = CARD_UNKNOWN;
	}
	return (pub[i] = cluster_use_step(pub[i], measured));
}

/* Card i's measured use: util in steps of 10 %, memory when measured. */
static json_t *
cluster_use_card(u_int i)
{
	const struct card	*c = &server_cards.v[i];
	uint64_t		 mem = cluster_use_mem(i, c->mem_measured);
	json_t			*o;

	o = json_pack("{s:i}", "util", c->util < 0 ? -1 : c->util / 10 * 10);
	if (mem != CARD_UNKNOWN)
		json_object_set_new(o, "mem_used", json_integer(
		    (json_int_t)mem));
	return (o);
}

/* This member's measured use, coarse enough that idle means unchanged. */
static json_t *
cluster_use(void)
{
	struct sysinfo	 si;
	double		 load[1] = { 0 };
	json_t		*cards = json_array();
	u_int		 i;

	if (getloadavg(load, 1) != 1)
		load[0] = 0;
	if (sysinfo(&si) != 0)
		memset(&si, 0, sizeof si);
	for (i = 0; i < server_cards.n; i++)
		json_array_append_new(cards, cluster_use_card(i));
	return (json_pack("{s:f,s:I,s:o}", "load", (double)((int)(load[0] *
	    2)) / 2, "ram_free", (json_int_t)cluster_step((uint64_t)
	    si.freeram * si.mem_unit, 1ULL << 30), "cards", cards));
}

/* The record as JSON text (the caller frees it). */
static char *
cluster_record(void)
{
	json_t		*o, *cards = json_array(), *ports;
	const char	*pin = "";
	char		*addr = NULL, *text;
	struct card	*c;
	u_int		 i;

	for (i = 0; i < server_cards.n; i++) {
		c = &server_cards.v[i];
		json_array_append_new(cards, json_pack("{s:s,s:s,s:I}",
		    "vendor", vendor_name(c->vendor), "model", c->model,
		    "memory", (json_int_t)c->memory));
	}
	if (server_tls_where(&addr, &pin) != 0)
		addr = xstrdup("");
	o = json_pack("{s:s,s:s,s:s,s:o,s:I,s:I,s:o,s:I,s:s,s:s,s:s?}",
	    "name", cluster->name, "addr", addr, "pin", pin, "cards", cards,
	    "cpus", (json_int_t)sysconf(_SC_NPROCESSORS_ONLN),
	    "ram", (json_int_t)sysconf(_SC_PHYS_PAGES) *
	    sysconf(_SC_PAGESIZE), "use", cluster_use(),
	    "started", (json_int_t)server_started, "version", GMUX_VERSION,
	    "instance", cluster->instance, "tags", config_get("TAGS"));
	json_object_set_new(o, "origin", json_string(cluster->origin));
	json_object_set_new(o, "boot", json_string(cluster->boot));
	json_object_set_new(o, "pid", json_integer(getpid()));
	if ((ports = cluster_ports_json()) != NULL)	/* cluster-ports.c */
		json_object_set_new(o, "ports_held", ports);
	text = json_dumps(o, JSON_COMPACT|JSON_SORT_KEYS);
	json_decref(o);
	free(addr);
	return (text);
}

/* ------------------------------------------------------------------ */
/* The lease. */

/* The lease is gone (or cut off past it): out of the cluster until again. */
static void
cluster_lost(const char *why)
{
	cluster_set_error("%s", why);
	cluster_job_cutoff();
	if (cluster->leading)
		cluster_deposed();
	etcd_cancel(cluster->campaign);
	cluster->campaign = NULL;
	cluster->lease = 0;
	cluster->registered = 0;
	free(cluster->record);
	cluster->record = NULL;
}

static void
cluster_grant_cb(struct etcd_reply *r, const char *err, void *arg)
{
	cluster->busy = 0;
	if (err != NULL) {
		cluster_set_error("%s", err);
		return;
	}
	cluster->lease = r->id;
	cluster->last_ok = clock_mono_ms();
	cluster->reg_next = 0;
	log_debug("%s: lease %llx, %lld s", __func__, (long long)r->id,
	    (long long)r->ttl);
}

static void
cluster_keepalive_cb(struct etcd_reply *r, const char *err, void *arg)
{
	int64_t	 lease = *(int64_t *)arg;

	free(arg);
	cluster->ka_busy = 0;
	if (lease != cluster->lease)
		return;
	if (err != NULL) {
		log_debug("%s: %s", __func__, err);
		return;
	}
	if (r->ttl <= 0) {
		cluster_lost("the lease lapsed");
		return;
	}
	cluster->last_ok = clock_mono_ms();
}

static void
cluster_keepalive(int64_t now)
{
	int64_t	*lease;

	if (cluster->ka_busy || now - cluster->ka_sent < CLUSTER_KEEPALIVE_MS)
		return;
	cluster->ka_sent = now;
	cluster->ka_busy = 1;
	lease = xmalloc(sizeof *lease);
	*lease = cluster->lease;
	etcd_call_owns(etcd_keepalive(cluster->etcd, cluster->lease,
	    cluster_keepalive_cb, lease), free);
}

/* ------------------------------------------------------------------ */
/* Registering and the record. */

/*
 * This daemon's origin: random, made once and kept in its home
 * (cluster-origin), where one daemon runs at a time, so a record of the
 * same origin is this member's from an earlier run (a host and home's
 * names would match those of a cloned machine).  Without it (a home that
 * cannot be written), a restart waits for the old record to lapse.
 */
static void
cluster_origin(void)
{
	char	*path, *text, *cause = NULL;
	u_char	 r[8];
	size_t	 len;

	xasprintf(&path, "%s/cluster-origin", path_home());
	if ((text = read_file(path, 64, &len, &cause)) != NULL &&
	    len == sizeof cluster->origin - 1 && strspn(text,
	    "0123456789abcdef") == len)
		memcpy(cluster->origin, text, len);
	else {
		random_bytes(r, sizeof r);
		hex_encode(r, sizeof r, cluster->origin);
		free(cause);
		cause = NULL;
		if (write_file_atomic(path, cluster->origin,
		    strlen(cluster->origin), 0600, &cause) != 0) {
			log_warnx("cluster: %s: %s", path, cause);
			cluster->origin[0] = '\0';
		}
	}
	cluster->origin[sizeof cluster->origin - 1] = '\0';
	free(text);
	free(cause);
	free(path);
	cause = NULL;
	if ((text = read_file("/proc/sys/kernel/random/boot_id", 64, &len,
	    &cause)) != NULL) {
		text[strcspn(text, "\n")] = '\0';
		snprintf(cluster->boot, sizeof cluster->boot, "%s", text);
	}
	free(text);
	free(cause);
}

/* Does record o's field say v? */
static int
cluster_record_is(json_t *o, const char *field, const char *v)
{
	const char	*has = json_string_value(json_object_get(o, field));

	return (has != NULL && strcmp(has, v) == 0);
}

/*
 * Has process pid exited: no such process, or a zombie (a daemon's first
 * thread is one while its others exit; its parent may reap it late)?
 */
static int
cluster_pid_gone(pid_t pid)
{
	char	 path[64], *text, *st, *cause = NULL;
	int	 gone;

	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	if ((text = read_file(path, 4096, NULL, &cause)) == NULL) {
		free(cause);
		return (1);
	}
	st = strrchr(text, ')');	/* the name may hold anything */
	gone = st != NULL && st[1] == ' ' && (st[2] == 'Z' || st[2] == 'X');
	free(text);
	return (gone);
}

/*
 * Is record o this member's from an earlier run of its daemon: the same
 * home (its origin), on this machine since its boot, by a process that
 * is gone?  A copy of the home on another machine (a cloned image), or a
 * daemon still running, is another daemon: the name is taken.
 */
static int
cluster_record_ours(json_t *o)
{
	json_int_t	 pid = json_integer_value(json_object_get(o, "pid"));

	if (cluster->origin[0] == '\0' || cluster->boot[0] == '\0' ||
	    !cluster_record_is(o, "origin", cluster->origin) ||
	    !cluster_record_is(o, "boot", cluster->boot) || pid <= 1 ||
	    pid > INT_MAX || pid == getpid())
		return (0);
	return (cluster_pid_gone((pid_t)pid));
}

static void
cluster_register_cb(struct etcd_reply *r, const char *err, void *arg)
{
	char			*text = arg;
	const struct etcd_kv	*kv;
	json_t			*o;

	cluster->busy = 0;
	if (err != NULL) {
		cluster_set_error("%s", err);
		free(text);
		return;
	}
	if (r->succeeded) {
		cluster->registered = 1;
		cluster->taken = 0;
		free(cluster->record);
		cluster->record = text;
		cluster->record_at = clock_mono_ms();
		cluster->nwrites++;
		cluster_clear_error();
		return;
	}
	free(text);
	kv = etcd_reply_find(r, cluster_key("m/%s", cluster->name));
	o = kv != NULL ? json_loads(kv->value, 0, NULL) : NULL;
	if (kv == NULL) {	/* gone meanwhile (its lease lapsed) */
		cluster->reg_mod = 0;
		cluster->reg_next = 0;
		return;
	}
	if (o != NULL && (cluster_record_is(o, "instance",
	    cluster->instance) || cluster_record_ours(o))) {
		/*
		 * Ours under an older lease, or our previous run's: taken
		 * over at once, before the leader may think this member gone.
		 */
		cluster->reg_mod = kv->mod_rev;
		cluster->reg_next = 0;
		json_decref(o);
		return;
	}
	cluster->taken = 1;
	cluster_set_error("member name %s is taken (by the daemon started "
	    "at %lld)", cluster->name, (long long)json_integer_value(
	    json_object_get(o, "started")));
	json_decref(o);
	cluster->reg_next = clock_mono_ms() + CLUSTER_RETRY_MS;
}

/*
 * Puts our record if the name is free, or held by this daemon under an
 * older lease of its own (same instance); else the name is taken.
 */
static void
cluster_register(int64_t now)
{
	const char	*key = cluster_key("m/%s", cluster->name);
	char		*text;
	json_t		*cmp, *alt, *ops;

	if (cluster->busy || now < cluster->reg_next)
		return;
	text = cluster_record();
	ops = json_pack("[o]", etcd_op_put(key, text, cluster->lease));
	if (cluster->reg_mod != 0)
		cmp = json_pack("[o]", etcd_cmp(key, "MOD", cluster->reg_mod));
	else {
		cmp = json_pack("[o]", etcd_cmp(key, "CREATE", 0));
		/* back: no longer among the members that left */
		json_array_append_new(ops, etcd_op_delete(cluster_key("g/%s",
		    cluster->name)));
	}
	cluster->reg_mod = 0;
	alt = json_pack("[o]", etcd_op_range(key, 0));
	cluster->busy = 1;
	etcd_call_owns(etcd_txn(cluster->etcd, cmp, ops, alt,
	    cluster_register_cb, text), free);
	cluster->reg_next = now + 1000;
}

static void
cluster_record_cb(struct etcd_reply *r, const char *err, void *arg)
{
	cluster->busy = 0;
	if (err != NULL) {
		log_debug("%s: %s", __func__, err);
		free(arg);
		return;
	}
	free(cluster->record);
	cluster->record = arg;
	cluster->nwrites++;
}

/* Rewrites the record when it changed, at most every CLUSTER_RECORD_MS. */
static void
cluster_refresh(int64_t now)
{
	char	*text;

	if (cluster->busy || now - cluster->record_at < CLUSTER_RECORD_MS)
		return;
	text = cluster_record();
	if (cluster->record != NULL && strcmp(text, cluster->record) == 0) {
		free(text);
		return;
	}
	cluster->record_at = now;
	cluster->busy = 1;
	etcd_txn(cluster->etcd, json_pack("[]"), json_pack("[o]",
	    etcd_op_put(cluster_key("m/%s", cluster->name), text,
	    cluster->lease)), NULL, cluster_record_cb, text);
}

/* ------------------------------------------------------------------ */
/* The election. */

/* Adds the leader's fencing compare to a Txn's compares (taken). */
json_t *
cluster_fence(json_t *cmp)
{
	json_array_insert_new(cmp, 0, etcd_cmp(cluster->lkey.key, "CREATE",
	    cluster->lkey.create_rev));
	return (cmp);
}

/* We lead no more: a fenced write failed, or the lease went. */
void
cluster_deposed(void)
{
	if (!cluster->leading)
		return;
	log_info("cluster %s: %s leads no more", cluster->id, cluster->name);
	cluster->leading = 0;
	cluster_sched_stop();
	free(cluster->lkey.key);
	memset(&cluster->lkey, 0, sizeof cluster->lkey);
}

static void
cluster_lead_cb(struct etcd_reply *r, const char *err, void *arg)
{
	if (err != NULL || !r->succeeded) {
		log_debug("%s: %s", __func__, err != NULL ? err : "deposed");
		cluster_deposed();
		return;
	}
	cluster->nwrites++;
	log_info("cluster %s: %s leads (revision %lld)", cluster->id,
	    cluster->name, (long long)cluster->lkey.create_rev);
}

static void
cluster_campaign_cb(struct etcd_reply *r, const char *err, void *arg)
{
	json_t	*o;
	char	*text;

	cluster->campaign = NULL;
	if (err != NULL || r->leader.lease != cluster->lease) {
		log_debug("%s: %s", __func__, err != NULL ? err : "old lease");
		return;		/* again from the tick */
	}
	cluster->leading = 1;
	cluster->lkey.key = xstrdup(r->leader.key);
	cluster->lkey.create_rev = r->leader.create_rev;
	cluster->lkey.lease = r->leader.lease;
	cluster->lead_since = clock_ms();
	/* The first fenced write: the campaign's answer may be stale. */
	o = json_pack("{s:s,s:I,s:I}", "name", cluster->name, "since",
	    (json_int_t)cluster->lead_since, "revision",
	    (json_int_t)cluster->lkey.create_rev);
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	etcd_txn(cluster->etcd, cluster_fence(json_array()), json_pack("[o]",
	    etcd_op_put(cluster_key("leader"), text, cluster->lease)), NULL,
	    cluster_lead_cb, NULL);
	free(text);
	cluster_sched_start();
}

static void
cluster_leader_cb(struct etcd_reply *r, const char *err, void *arg)
{
	cluster->leader_busy = 0;
	json_decref(cluster->leader);
	cluster->leader = NULL;
	if (err != NULL || r->nkvs == 0)
		return;
	cluster->leader = json_loads(r->kvs[0].value, 0, NULL);
}

/* Asks who leads, each second (for gmux cluster leader). */
static void
cluster_ask_leader(int64_t now)
{
	if (cluster->leader_busy || now - cluster->leader_asked < 1000)
		return;
	cluster->leader_asked = now;
	cluster->leader_busy = 1;
	etcd_range(cluster->etcd, cluster_key("leader"), 0, cluster_leader_cb,
	    NULL);
}

static void
cluster_resign_cb(struct etcd_reply *r, const char *err, void *arg)
{
	cluster->resigning = 0;
	if (err == NULL)
		cluster_deposed();
}

/*
 * Leading, with a more capable member live for CLUSTER_POLITE_MS: resigns,
 * to campaign again behind it.
 */
static void
cluster_polite(void)
{
	if (cluster->resigning || cluster_sched_better(&cluster->self) != 1)
		return;
	log_info("cluster %s: a more capable member is live; %s resigns",
	    cluster->id, cluster->name);
	cluster->resigning = 1;
	etcd_resign(cluster->etcd, cluster->elect, &cluster->lkey,
	    cluster_resign_cb, NULL);
}

/*
 * A clock off by minutes skews the queue's order (jobs carry their
 * submission time) and the books: said once, and shown by GET
 * /v1/cluster, until it is right again.
 */
static void
cluster_check_clock(void)
{
	int64_t	 skew;
	int	 known;
	char	*w;

	skew = etcd_skew(cluster->etcd, &known);
	if (!known)
		return;
	if (skew < CLUSTER_SKEW_MS && skew > -CLUSTER_SKEW_MS) {
		free(cluster->warning);
		cluster->warning = NULL;
		return;
	}
	xasprintf(&w, "this member's clock is %lld s %s etcd's; queue order "
	    "and the books use it", (long long)(skew < 0 ? -skew : skew) /
	    1000, skew < 0 ? "behind" : "ahead of");
	if (cluster->warning == NULL)
		log_warnx("cluster %s: %s", cluster->id, w);
	free(cluster->warning);
	cluster->warning = w;
}

static void
cluster_tick(int64_t now)
{
	if (cluster->lease != 0 && now - cluster->last_ok >
	    (int64_t)cluster->ttl * 1000)
		cluster_lost("cut off from etcd for longer than the lease");
	if (cluster->lease == 0) {
		if (!cluster->busy) {
			cluster->busy = 1;
			etcd_lease_grant(cluster->etcd, cluster->ttl,
			    cluster_grant_cb, NULL);
		}
		return;
	}
	cluster_keepalive(now);
	cluster_check_clock();
	if (!cluster->registered) {
		cluster_register(now);
		return;
	}
	cluster_ports_tick(now);
	cluster_refresh(now);
	if (!cluster->leading && cluster->campaign == NULL)
		cluster->campaign = etcd_campaign(cluster->etcd,
		    cluster->elect, cluster->name, cluster->lease,
		    cluster_campaign_cb, NULL);
	cluster_ask_leader(now);
	cluster_peer_tick();
	cluster_job_tick(now);
	if (cluster->leading) {
		cluster_sched_tick(now);
		cluster_polite();
	}
}

static void
cluster_timer_cb(evutil_socket_t fd, short events, void *arg)
{
	cluster_tick(clock_mono_ms());
}

/* This member's own capability, as a record would say it. */
static void
cluster_self(void)
{
	char	*text = cluster_record(), *cause = NULL;
	json_t	*o = json_loads(text, 0, NULL);

	if (cluster_member_parse(o, &cluster->self, &cause) != 0)
		fatalx("cluster: own record: %s", cause);
	json_decref(o);
	free(text);
}

/*
 * The member's settings, checked: CLUSTER_ID in *id, NAME (or the host's
 * name) in name (of len bytes), ETCD's URLs well formed.  -1 with *cause
 * naming the setting.
 */
static int
cluster_settings(const char **id, char *name, size_t len, char **cause)
{
	struct etcd	*e;
	const char	*v;

	*id = config_get("CLUSTER_ID");
	if (*id == NULL || !cluster_name_ok(*id, 64)) {
		xasprintf(cause, "CLUSTER_ID: %s", *id == NULL ? "missing" :
		    "not 1-64 of [A-Za-z0-9_-]");
		return (-1);
	}
	if ((v = config_get("NAME")) != NULL)
		snprintf(name, len, "%s", v);
	else {
		if (gethostname(name, len) != 0)
			snprintf(name, len, "gmux");
		name[len - 1] = '\0';
		name[strcspn(name, ".")] = '\0';
	}
	if (!cluster_name_ok(name, 63)) {
		xasprintf(cause, "NAME: '%s' is not 1-63 of [A-Za-z0-9_-]",
		    name);
		return (-1);
	}
	if (config_get("ETCD") == NULL) {
		xasprintf(cause, "ETCD: missing (CLUSTER_MODE is member)");
		return (-1);
	}
	if ((e = etcd_create(NULL, config_get("ETCD"), cause)) == NULL)
		return (-1);
	etcd_free(e);
	return (0);
}

/*
 * Whether this daemon's cluster settings will do, before it starts
 * serving or says anything (an invite): 1 for a member, 0 standalone, -1
 * with *cause for a bad one.
 */
int
cluster_check(char **cause)
{
	const char	*mode = config_get("CLUSTER_MODE"), *id;
	char		 name[256];

	if (mode == NULL || *mode == '\0' || strcmp(mode, "standalone") == 0)
		return (0);
	if (strcmp(mode, "member") != 0) {
		xasprintf(cause, "CLUSTER_MODE: '%s' is not member or "
		    "standalone", mode);
		return (-1);
	}
	return (cluster_settings(&id, name, sizeof name, cause) == 0 ? 1 : -1);
}

static int
cluster_config(char **cause)
{
	const char	*id;
	char		 name[256];

	if (cluster_settings(&id, name, sizeof name, cause) != 0)
		return (-1);
	cluster->id = xstrdup(id);
	cluster->name = xstrdup(name);
	xasprintf(&cluster->prefix, "/gmux/%s/", id);
	xasprintf(&cluster->elect, "/gmux/%s/el", id);
	cluster->ttl = config_uint("CLUSTER_LEASE", 3, 2, 60);
	return (0);
}

/*
 * Makes this daemon a member if its config says so (CLUSTER_MODE=member);
 * 0 when standalone too.  A bad setting is an error; an etcd that does
 * not answer is not (the daemon serves and keeps trying).
 */
int
cluster_init(struct event_base *base, char **cause)
{
	struct timeval	 tv;
	u_char		 r[8];
	const char	*e = getenv("GMUX_TEST_CLUSTER_TICK_MS");
	long		 tick = CLUSTER_TICK_MS;
	int		 rc;

	if ((rc = cluster_check(cause)) <= 0)
		return (rc);
	cluster = xcalloc(1, sizeof *cluster);
	cluster->base = base;
	if (cluster_config(cause) != 0 || (cluster->etcd = etcd_create(base,
	    config_get("ETCD"), cause)) == NULL) {
		cluster_shutdown();
		return (-1);
	}
	random_bytes(r, sizeof r);
	cluster->instance = xmalloc(2 * sizeof r + 1);
	hex_encode(r, sizeof r, cluster->instance);
	cluster_origin();
	cluster_self();
	cluster_job_start();
	cluster_peer_start();
	/* A test's slow tick shows what does not wait for it (cluster-job.c) */
	if (e != NULL && (tick = strtol(e, NULL, 10)) < 10)
		tick = CLUSTER_TICK_MS;
	tv.tv_sec = tick / 1000;
	tv.tv_usec = tick % 1000 * 1000;
	cluster_ui_start();
	cluster_ev = event_new(base, -1, EV_PERSIST, cluster_timer_cb, NULL);
	event_add(cluster_ev, &tv);
	log_info("cluster %s: joining as %s through %s", cluster->id,
	    cluster->name, etcd_endpoint(cluster->etcd));
	return (0);
}

void
cluster_shutdown(void)
{
	if (cluster == NULL)
		return;
	if (cluster_ev != NULL)
		event_free(cluster_ev);
	cluster_ev = NULL;
	cluster_deposed();
	cluster_job_stop();
	cluster_peer_stop();
	cluster_ui_stop();
	etcd_cancel(cluster->campaign);
	etcd_free(cluster->etcd);
	cluster_member_clear(&cluster->self);
	json_decref(cluster->leader);
	free(cluster->record);
	free(cluster->error);
	free(cluster->warning);
	free(cluster->instance);
	free(cluster->elect);
	free(cluster->prefix);
	free(cluster->name);
	free(cluster->id);
	free(cluster);
	cluster = NULL;
}
