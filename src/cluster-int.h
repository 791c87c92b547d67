/*
 * cluster-int.h: what the cluster's files (etcd.c, cluster*.c) share
 * among themselves, and with their tests and bench/cluster-sim.
 */

#ifndef CLUSTER_INT_H
#define CLUSTER_INT_H

#include <string.h>

#include "gmux.h"

/* etcd.c: etcd 3.4's JSON gateway, asynchronous on a libevent loop */
#define ETCD_MAX_REPLY	(32 * 1024 * 1024)
#define ETCD_TXN_OPS	64	/* operations per Txn we send (etcd: 128) */
struct etcd;
struct etcd_call;
struct etcd_kv {
	char		*key;		/* NUL-terminated */
	char		*value;		/* NUL-terminated; vlen bytes */
	size_t		 vlen;
	int64_t		 create_rev;
	int64_t		 mod_rev;
	int64_t		 version;
	int64_t		 lease;
	int		 deleted;	/* a watch's DELETE event */
};
struct etcd_reply {
	int64_t		 rev;		/* the header's revision */
	int		 succeeded;	/* a Txn's compares held */
	struct etcd_kv	*kvs;		/* range, Txn ranges, leader, watch */
	u_int		 nkvs;
	int64_t		 count;
	int64_t		 id;		/* lease grant and keepalive */
	int64_t		 ttl;		/* 0: the lease is gone */
	struct etcd_kv	 leader;	/* campaign: key, rev, lease; name */
	int		 created;	/* watch */
	int		 canceled;
};
typedef void	(*etcd_cb)(struct etcd_reply *, const char *, void *);
struct event_base;
struct etcd	*etcd_create(struct event_base *, const char *, char **);
void		 etcd_free(struct etcd *);
const char	*etcd_endpoint(const struct etcd *);
int64_t		 etcd_skew(const struct etcd *, int *);
int		 etcd_reply_parse(const char *, size_t, struct etcd_reply *,
		     char **);
void		 etcd_reply_clear(struct etcd_reply *);
const struct etcd_kv *etcd_reply_find(const struct etcd_reply *,
		     const char *);
json_t		*etcd_op_put(const char *, const char *, int64_t);
json_t		*etcd_op_delete(const char *);
json_t		*etcd_op_range(const char *, int);
json_t		*etcd_cmp(const char *, const char *, int64_t);
struct etcd_call *etcd_post(struct etcd *, const char *, json_t *, etcd_cb,
		     void *);
struct etcd_call *etcd_range(struct etcd *, const char *, int, etcd_cb,
		     void *);
struct etcd_call *etcd_txn(struct etcd *, json_t *, json_t *, json_t *,
		     etcd_cb, void *);
struct etcd_call *etcd_lease_grant(struct etcd *, u_int, etcd_cb, void *);
struct etcd_call *etcd_keepalive(struct etcd *, int64_t, etcd_cb, void *);
struct etcd_call *etcd_campaign(struct etcd *, const char *, const char *,
		     int64_t, etcd_cb, void *);
struct etcd_call *etcd_leader(struct etcd *, const char *, etcd_cb, void *);
struct etcd_call *etcd_resign(struct etcd *, const char *,
		     const struct etcd_kv *, etcd_cb, void *);
struct etcd_call *etcd_watch(struct etcd *, const char *, int64_t, etcd_cb,
		     void *);
struct etcd_call *etcd_call_owns(struct etcd_call *, void (*)(void *));
void		 etcd_cancel(struct etcd_call *);
int		 etcd_wait(struct etcd *, const int *);

/* cluster-mirror.c: a prefix of keys kept in memory, by range and watch */
struct mirror;
struct mirror_entry {
	char		*key;
	json_t		*val;		/* NULL: deleted (a tombstone) */
	int64_t		 mod_rev;	/* or the delete's revision */
	int64_t		 create_rev;
	int64_t		 lease;
	void		*cache;		/* its reader's parse of val, or NULL */
	int		 held;		/* its reader's Txn is in flight */
};
typedef void	(*mirror_cb)(void *);
struct mirror	*mirror_create(struct etcd *, const char *, mirror_cb, void *);
void		 mirror_free(struct mirror *);
int		 mirror_ready(const struct mirror *);
int64_t		 mirror_revision(const struct mirror *);
void		 mirror_cache_free(struct mirror *, void (*)(void *));
size_t		 mirror_count(const struct mirror *);
struct mirror_entry *mirror_get(const struct mirror *, const char *);
int		 mirror_next(const struct mirror *, size_t *,
		     struct mirror_entry **);
void		 mirror_put(struct mirror *, const char *, json_t *, int64_t,
		     int64_t);
void		 mirror_delete(struct mirror *, const char *, int64_t);
void		 mirror_restart(struct mirror *);

/* cluster.c: this daemon as a member */
#define CLUSTER_TICK_MS		250
#define CLUSTER_KEEPALIVE_MS	1000
#define CLUSTER_RECORD_MS	5000	/* a record's rewrites, at most */
#define CLUSTER_GRACE_MS	2000	/* after a lease, before requeueing */
#define CLUSTER_RETRY_MS	5000	/* a name taken: tried again */
#define CLUSTER_POLITE_MS	2000	/* a better member live this long */
#define CLUSTER_SKEW_MS		60000	/* a clock this far off: warned */
#define CLUSTER_MEM_STEP	(1ULL << 30)	/* a card's use, published */
#define CLUSTER_ORPHAN_MARGIN_MS 1000	/* a keeper's, before the requeue */
struct cluster_card {
	char		*vendor;
	char		*model;
	uint64_t	 memory;
	uint64_t	 used;		/* measured; CARD_UNKNOWN: not */
};
#define CLUSTER_GANG_PORT	29500	/* MASTER_PORT: from here, */
#define CLUSTER_GANG_PORTS	500	/* ... one of these, free on MASTER */
#define CLUSTER_PORTS_BYTES	((CLUSTER_GANG_PORTS + 7) / 8)
struct cluster_member {			/* a member's record, parsed */
	char		*name;
	char		*addr;
	char		*pin;
	struct cluster_card *cards;
	u_int		 ncards;
	uint64_t	 gpumem;	/* all its cards together */
	u_int		 cpus;
	uint64_t	 ram;
	char		*tags;		/* TAGS in its config; NULL: none */
	u_char		 held[CLUSTER_PORTS_BYTES]; /* gang ports in use */
};
struct cluster {
	struct event_base *base;
	struct etcd	*etcd;
	char		*id;
	char		*name;
	char		*prefix;	/* "/gmux/ID/" */
	char		*elect;		/* the election's name */
	char		*instance;	/* this daemon's, in its record */
	char		 origin[17];	/* its home's, in its record */
	char		 boot[40];	/* this boot of the machine's id */
	u_int		 ttl;		/* seconds */
	int64_t		 lease;		/* 0: none */
	int64_t		 last_ok;	/* mono ms of the last keepalive */
	int64_t		 ka_sent;
	int		 busy;		/* a lease or record call in flight */
	int		 ka_busy;
	int		 registered;
	int		 taken;		/* its name is another daemon's */
	int64_t		 reg_next;	/* mono ms: the next try */
	int64_t		 reg_mod;	/* our own older record's */
	char		*record;	/* as last written */
	int64_t		 record_at;
	struct cluster_member self;
	struct etcd_call *campaign;
	int		 leading;
	struct etcd_kv	 lkey;		/* our leader key while leading */
	int64_t		 lead_since;	/* ms since the epoch */
	json_t		*leader;	/* who leads, as last asked */
	int64_t		 leader_asked;
	int		 leader_busy;
	int		 resigning;
	char		*error;		/* why it is not a member, or NULL */
	char		*warning;	/* e.g. a clock off by minutes */
	u_int		 nwrites;	/* records and jobs written */
};
extern struct cluster *cluster;
const char	*cluster_key(const char *, ...) printflike(1, 2);
/* cluster-ports.c */
int		 cluster_ports_has(const u_char *, u_int);
void		 cluster_ports_parse(const char *, size_t, u_char *);
void		 cluster_ports_tick(int64_t);
json_t		*cluster_ports_json(void);
void		 cluster_ports_from_json(json_t *, u_char *);
int		 cluster_member_parse(json_t *, struct cluster_member *,
		     char **);
void		 cluster_member_clear(struct cluster_member *);
int		 cluster_member_cmp(const struct cluster_member *,
		     const struct cluster_member *);
void		 cluster_deposed(void);
json_t		*cluster_fence(json_t *);
char		*cluster_stop_value(json_t *);
char		*cluster_part_id(const char *, u_int, u_int);

/* cluster-fit.c: what a job asks of a member, and why none could hold it */
#define CLUSTER_GANG_MAX	JOBSPEC_NODES_MAX
#define CLUSTER_WORD	64		/* a type's, a name's, a tag's room */
#define CLUSTER_CARDS	64		/* a member's cards counted, at most */
#define CLUSTER_ID_MAX	128		/* a job id's room */
#define CLUSTER_ADDR_MAX 256		/* a MASTER_ADDR's room */
struct cluster_shape {			/* what a job asks of one member */
	u_int		 seats;		/* per card */
	uint64_t	 mem;		/* per card; 0: share x memory */
	u_int		 ncards;
	u_int		 prio;
	int		 flags;
	int64_t		 submitted;
	u_int		 cpus;		/* reserved on the member; 0: none */
	uint64_t	 ram;		/* reserved on the member; 0: none */
	uint64_t	 vram;		/* free on each card; 0: any */
	enum jobspec_mode mode;
	u_int		 nodes;		/* a gang's members; 1 */
	char		 type[CLUSTER_WORD];	/* --gpus TYPE; "": any */
	char		 server[CLUSTER_WORD];	/* --server; "": any */
	char		 tag[CLUSTER_WORD];	/* --partition; "": any */
};
struct cluster_room {			/* a member and what is committed */
	struct cluster_member m;
	u_int		 used[CLUSTER_CARDS];	/* seats committed per card */
	uint64_t	 mused[CLUSTER_CARDS];
	uint64_t	 oused[CLUSTER_CARDS];	/* overcommitted jobs' asks */
	u_int		 over[CLUSTER_CARDS];	/* ... and how many */
	u_int		 cpus;		/* CPUs and RAM committed */
	uint64_t	 ram;
	u_int		 njobs;
	int64_t		 seen;		/* mono ms it was first seen */
	int		 picked;	/* a part of this gang is on it */
};
int		 cluster_shape_parse(json_t *, struct cluster_shape *,
		     char **);
uint64_t	 cluster_use_step(uint64_t, uint64_t);
char		*cluster_refusal(const struct cluster_member *, u_int,
		     const struct cluster_shape *);
/* cluster-sched.c: a member's room now (the rest below) */
u_int		 cluster_room_cards(const struct cluster_room *,
		     const struct cluster_shape *, u_int *);
u_int		 cluster_room_fit(const struct cluster_room *,
		     const struct cluster_shape *, u_int *, u_int *);
int		 cluster_room_has(const struct cluster_room *,
		     const struct cluster_shape *);
void		 cluster_room_charge(struct cluster_room *,
		     const struct cluster_shape *, const u_int *, u_int, int);

/* The pure checks placement and refusals share (inline: the hot path). */
/* What one card needs of memory for s (0: share x its memory). */
static inline uint64_t
cluster_need(const struct cluster_shape *s, uint64_t memory)
{
	if (s->mem != 0)
		return (s->mem);
	return (memory / SEATS_PER_CARD * s->seats);
}

/* What an overcommitted job asks free on each card: --mem, else --vram. */
static inline uint64_t
cluster_ask(const struct cluster_shape *s)
{
	return (s->mem > s->vram ? s->mem : s->vram);
}

/*
 * Whether card c could ever hold a part of s: its type, its memory; for
 * --mode overcommit, memory in use that its member measures.
 */
static inline int
cluster_card_could(const struct cluster_card *c,
    const struct cluster_shape *s)
{
	if (s->type[0] != '\0' && !jobspec_type_is(c->vendor, c->model,
	    s->type))
		return (0);
	if (s->mode == JOBSPEC_OVERCOMMIT)
		return (c->used != CARD_UNKNOWN && cluster_ask(s) <= c->memory);
	return (cluster_need(s, c->memory) <= c->memory &&
	    c->memory >= s->vram);
}

/* Whether member m could ever hold s, its cards aside. */
static inline int
cluster_member_could(const struct cluster_member *m,
    const struct cluster_shape *s)
{
	if (s->server[0] != '\0' && strcmp(m->name, s->server) != 0)
		return (0);
	if (s->tag[0] != '\0' && !jobspec_tagged(m->tags, s->tag))
		return (0);
	if (s->cpus > m->cpus || s->ram > m->ram)
		return (0);
	return (1);
}

/* How many of member m's cards could ever hold a part of s. */
static inline u_int
cluster_cards_could(const struct cluster_member *m,
    const struct cluster_shape *s)
{
	u_int	 c, fit = 0;

	for (c = 0; c < m->ncards; c++)
		fit += cluster_card_could(&m->cards[c], s);
	return (fit);
}

/* Whether member m could ever hold s, its cards too. */
static inline int
cluster_member_holds(const struct cluster_member *m,
    const struct cluster_shape *s)
{
	return (cluster_member_could(m, s) && (s->ncards == 0 ||
	    s->seats == 0 || cluster_cards_could(m, s) >= s->ncards));
}

/* cluster-why.c: what each queued job waits for */
void		 cluster_why(json_t **, u_int, const struct etcd_reply *);

/* cluster-sched.c: the leader's placement */
void		 cluster_sched_start(void);
void		 cluster_sched_stop(void);
void		 cluster_sched_tick(int64_t);
int		 cluster_sched_better(const struct cluster_member *);
void		 cluster_sched_counts(uint64_t *, uint64_t *);

/* cluster-array.c: arrays, one record (y/ID) until elements start */
void		 cluster_array_start(void);
void		 cluster_array_stop(void);
void		 cluster_array_tick(struct mirror *, struct mirror *,
		     struct mirror *);
int		 cluster_array_prepare(json_t *);
void		 cluster_array_env(json_t *, char ***);
void		 cluster_array_view(json_t *, const struct etcd_reply *);
int		 cluster_array_queue_row(json_t *, const struct etcd_reply *);
void		 cluster_array_stop_txn(json_t *, const struct etcd_kv *,
		     const struct etcd_reply *, json_t *, json_t *, json_t *,
		     int *);

/* cluster-gone.c: the leader's record of the members that left */
void		 cluster_gone_start(void);
void		 cluster_gone_stop(void);
void		 cluster_gone_tick(struct mirror *);

/* cluster-stops.c: the leader's sweep of stops no job is left to take */
void		 cluster_stops_start(void);
void		 cluster_stops_stop(void);
void		 cluster_stops_tick(struct mirror *, struct mirror *,
		     struct mirror *, int64_t);

/* cluster-tree.c: a job's synced tree, fetched from the member that has it */
typedef void	(*cluster_tree_cb)(void *, const char *);
const char	*cluster_tree_from(json_t *);
void		 cluster_tree_fetch(json_t *, cluster_tree_cb, void *);

/* cluster-job.c: jobs submitted, claimed, run and ended here */
void		 cluster_job_start(void);
void		 cluster_job_stop(void);
void		 cluster_job_tick(int64_t);
void		 cluster_job_cutoff(void);
struct job	*cluster_job_local(const char *);

/* cluster-peer.c: members calling members */
typedef void	(*peer_cb)(int, struct evbuffer *, const char *, void *);
struct evbuffer;
void		 cluster_member_cache_free(void *);
const struct cluster_member *cluster_member_cached(struct mirror_entry *);
void		 cluster_peer_start(void);
void		 cluster_peer_stop(void);
void		 cluster_peer_tick(void);
int		 cluster_peer_split(const char *, const char *, char **,
		     u_int *);
int		 cluster_peer_call(const char *, const char *,
		     const struct api_who *, peer_cb, void *, char **);
typedef int	(*peer_sink)(void *, uint64_t, uint64_t, const void *, size_t,
		     char **);
int		 cluster_peer_fetch(const char *, const char *,
		     const struct api_who *, peer_sink, peer_cb, void *,
		     char **);
void		 cluster_peer_relay(const char *, const char *,
		     const struct api_who *, struct evhttp_request *);
typedef void	(*peer_take_cb)(const char *, int, struct evbuffer *,
		     const char *, void *);
void		 cluster_peer_each(const char *, const struct api_who *,
		     const char *, peer_take_cb, void (*)(void *), void *);
/* cluster-workers.c: every member's @mesh workers, merged */
void		 cluster_workers_take(json_t *, const char *, int,
		     const char *, size_t, const char *);
json_t		*cluster_workers_merge(json_t *);

/* api-cluster.c: the cluster's routes */
json_t		*cluster_members_json(const struct etcd_reply *);
json_t		*cluster_stop_queued(const struct etcd_kv *, json_t *,
		     json_t *, json_t *);

/* cluster-ui.c: the dashboard's cluster section */
void		 cluster_ui_start(void);
void		 cluster_ui_stop(void);

#endif
