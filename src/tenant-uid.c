/*
 * tenant-uid.c: a tenant's UID on a cluster's member, allocated once in
 * etcd so that it is the same on every member (docs/tenants.md): one Txn
 * creates t/uid/NAME and t/byuid/UID together, compare create_revision 0
 * on both; if the name is there already its UID is taken from it, if only
 * the UID is another's the next one is tried.  The job waits meanwhile.
 */

#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "cluster-int.h"
#include "tenant-int.h"

struct tenant_alloc {
	char	*name;
	uid_t	 uid;		/* the candidate */
	u_int	 tries;
};

static void	tenant_alloc_send(struct tenant_alloc *);

/* The UID in t/uid/NAME's value, or 0. */
static uid_t
tenant_alloc_value(const struct etcd_kv *kv)
{
	json_t		*o;
	json_int_t	 uid = 0;

	if ((o = json_loadb(kv->value, kv->vlen, 0, NULL)) != NULL)
		json_unpack(o, "{s:I}", "uid", &uid);
	json_decref(o);
	return (uid > 0 && uid < 0x7fffffff ? (uid_t)uid : 0);
}

/*
 * The allocation is over: t has its UID; or none, asked again by its
 * held jobs (etcd did not answer), unless why says it never will be
 * (they fail with it).
 */
static void
tenant_alloc_done(struct tenant_alloc *a, uid_t uid, const char *why)
{
	struct tenant	*t;

	if (why != NULL && (t = tenant_find(a->name)) != NULL) {
		t->allocating = 0;
		t->make_error = xstrdup(why);
		tenant_quota_tick();
		if ((t = tenant_find(a->name)) != NULL) {
			free(t->make_error);
			t->make_error = NULL;
		}
		free(a->name);
		free(a);
		return;
	}
	if ((t = tenant_find(a->name)) != NULL) {
		t->allocating = 0;
		if (uid != 0) {
			t->uid = uid;
			t->gid = (gid_t)uid;
			t->has_uid = 1;
			tenants_save();
			log_info("tenant %s: uid %u from the cluster", t->name,
			    (u_int)uid);
		}
	}
	free(a->name);
	free(a);
	if (uid != 0)
		tenant_quota_tick();	/* its held jobs go on at once */
}

static void
tenant_alloc_cb(struct etcd_reply *r, const char *err, void *arg)
{
	struct tenant_alloc	*a = arg;
	const struct etcd_kv	*kv;
	uid_t			 lo, hi;

	if (err != NULL || r == NULL) {
		log_warnx("%s: %s: %s", __func__, a->name, err ? err : "?");
		tenant_alloc_done(a, 0, NULL);	/* asked again */
		return;
	}
	if (r->succeeded) {
		tenant_alloc_done(a, a->uid, NULL);
		return;
	}
	kv = etcd_reply_find(r, cluster_key("t/uid/%s", a->name));
	if (kv != NULL) {
		tenant_alloc_done(a, tenant_alloc_value(kv), NULL);
		return;
	}
	tenant_uid_range(&lo, &hi);
	if (++a->tries > hi - lo) {
		log_warnx("%s: %s: TENANT_UID_RANGE is full", __func__,
		    a->name);
		tenant_alloc_done(a, 0, "tenant: TENANT_UID_RANGE is full in "
		    "the cluster");
		return;
	}
	a->uid = a->uid >= hi ? lo : a->uid + 1;
	tenant_alloc_send(a);
}

static void
tenant_alloc_send(struct tenant_alloc *a)
{
	char	*nkey, *ukey, *val;

	nkey = xstrdup(cluster_key("t/uid/%s", a->name));
	xasprintf(&ukey, "%st/byuid/%u", cluster->prefix, (u_int)a->uid);
	xasprintf(&val, "{\"uid\": %u}", (u_int)a->uid);
	etcd_txn(cluster->etcd, json_pack("[oo]", etcd_cmp(nkey, "CREATE", 0),
	    etcd_cmp(ukey, "CREATE", 0)), json_pack("[oo]",
	    etcd_op_put(nkey, val, 0), etcd_op_put(ukey, a->name, 0)),
	    json_pack("[o]", etcd_op_range(nkey, 0)), tenant_alloc_cb, a);
	free(val);
	free(ukey);
	free(nkey);
}

/*
 * t's UID on a member: 0 if this daemon is no member (the caller derives
 * it); else 2 with *cause while it is asked of etcd (the one call in
 * flight per tenant), after which t has it.
 */
int
tenant_cluster_uid(struct tenant *t, char **cause)
{
	struct tenant_alloc	*a;
	uid_t			 lo, hi;

	if (cluster == NULL)
		return (0);
	if (!t->allocating) {
		t->allocating = 1;
		tenant_uid_range(&lo, &hi);
		a = xcalloc(1, sizeof *a);
		a->name = xstrdup(t->name);
		a->uid = tenant_uid_derive(t->name, lo, hi);
		tenant_alloc_send(a);
	}
	xasprintf(cause, "tenant: allocating %s's UID in the cluster",
	    t->name);
	return (2);
}
