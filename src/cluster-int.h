/*
 * cluster-int.h: what the cluster's files (etcd.c, cluster*.c) share
 * among themselves, and with their tests and bench/cluster-sim.
 */

#ifndef CLUSTER_INT_H
#define CLUSTER_INT_H

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
uint64_t	 etcd_calls(const struct etcd *);
int		 etcd_reply_parse(const char *, size_t, struct etcd_reply *,
		     char **);
void		 etcd_reply_clear(struct etcd_reply *);
const struct etcd_kv *etcd_reply_find(const struct etcd_reply *,
		     const char *);
json_t		*etcd_b64(const char *, size_t);
char		*etcd_prefix_end(const char *);
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
struct etcd_call *etcd_lease_revoke(struct etcd *, int64_t, etcd_cb, void *);
struct etcd_call *etcd_campaign(struct etcd *, const char *, const char *,
		     int64_t, etcd_cb, void *);
struct etcd_call *etcd_leader(struct etcd *, const char *, etcd_cb, void *);
struct etcd_call *etcd_resign(struct etcd *, const char *,
		     const struct etcd_kv *, etcd_cb, void *);
struct etcd_call *etcd_proclaim(struct etcd *, const char *,
		     const struct etcd_kv *, const char *, etcd_cb, void *);
struct etcd_call *etcd_watch(struct etcd *, const char *, int64_t, etcd_cb,
		     void *);
struct etcd_call *etcd_observe(struct etcd *, const char *, etcd_cb, void *);
void		 etcd_cancel(struct etcd_call *);
int		 etcd_wait(struct etcd *, const int *);

#endif
