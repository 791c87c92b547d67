/*
 * cluster-mirror.c: the keys under one prefix, kept in memory: one range,
 * then a watch from the revision after it.  A writer that knows what its
 * own Txn changed applies it at once (mirror_put, mirror_delete) so its
 * next pass does not act on what it already moved; the watch's copy of
 * the same change comes later and is ignored by revision.  A deleted key
 * stays as a tombstone until the watch has passed its revision, so an
 * older event cannot bring it back.
 */

#include <stdlib.h>
#include <string.h>

#include "cluster-int.h"

struct mirror {
	struct etcd	*e;
	char		*prefix;
	struct hmap	*map;		/* key -> struct mirror_entry */
	int64_t		 rev;		/* applied up to here */
	int		 ready;
	struct etcd_call *call;		/* the range or the watch */
	mirror_cb	 cb;
	void		*arg;
	void		(*cache_free)(void *);
};

static void	mirror_start(struct mirror *);

static void
mirror_uncache(struct mirror *m, struct mirror_entry *me)
{
	if (me->cache != NULL)
		(m->cache_free != NULL ? m->cache_free : free)(me->cache);
	me->cache = NULL;
}

static void
mirror_entry_free(struct mirror *m, struct mirror_entry *me)
{
	if (me == NULL)
		return;
	mirror_uncache(m, me);
	json_decref(me->val);
	free(me->key);
	free(me);
}

static void
mirror_clear(struct mirror *m)
{
	size_t		 it = 0;
	const char	*k;
	void		*v;

	while (hmap_next(m->map, &it, &k, &v))
		mirror_entry_free(m, v);
	hmap_free(m->map);
	m->map = hmap_create();
}

/* Sets key's entry if rev is newer than what is known of it. */
static void
mirror_set(struct mirror *m, const char *key, json_t *val, int64_t rev,
    int64_t create, int64_t lease)
{
	struct mirror_entry	*me = hmap_get(m->map, key);

	if (me != NULL && me->mod_rev >= rev) {
		json_decref(val);
		return;
	}
	if (me == NULL) {
		me = xcalloc(1, sizeof *me);
		me->key = xstrdup(key);
		hmap_put(m->map, me->key, me);
	}
	mirror_uncache(m, me);
	json_decref(me->val);
	me->val = val;
	me->held = 0;
	me->mod_rev = rev;
	me->create_rev = val != NULL ? create : 0;
	me->lease = lease;
}

/* A value that is not JSON is skipped with a warning (docs/cluster.md). */
static json_t *
mirror_value(const struct etcd_kv *kv)
{
	json_error_t	 err;
	json_t		*o;

	if ((o = json_loadb(kv->value, kv->vlen, 0, &err)) == NULL ||
	    !json_is_object(o)) {
		log_warnx("cluster: %s (revision %lld): not a JSON object; "
		    "skipped", kv->key, (long long)kv->mod_rev);
		json_decref(o);
		return (NULL);
	}
	return (o);
}

static void
mirror_kv(struct mirror *m, const struct etcd_kv *kv)
{
	json_t	*val;

	if (kv->deleted) {
		mirror_set(m, kv->key, NULL, kv->mod_rev, 0, 0);
		return;
	}
	if ((val = mirror_value(kv)) == NULL)
		val = json_pack("{s:b}", "corrupt", 1);
	mirror_set(m, kv->key, val, kv->mod_rev, kv->create_rev, kv->lease);
}

/* Forgets tombstones the watch has passed. */
static void
mirror_purge(struct mirror *m)
{
	size_t			 it = 0;
	const char		*k;
	void			*v;
	struct mirror_entry	*me;
	char			**gone = NULL;
	u_int			 n = 0, i;

	while (hmap_next(m->map, &it, &k, &v)) {
		me = v;
		if (me->val == NULL && me->mod_rev <= m->rev) {
			gone = xreallocarray(gone, n + 1, sizeof *gone);
			gone[n++] = me->key;
		}
	}
	for (i = 0; i < n; i++)
		mirror_entry_free(m, hmap_del(m->map, gone[i]));
	free(gone);
}

static void
mirror_watch_cb(struct etcd_reply *r, const char *err, void *arg)
{
	struct mirror	*m = arg;
	u_int		 i;

	if (err != NULL) {
		log_debug("%s: %s: %s", __func__, m->prefix, err);
		m->call = NULL;
		m->ready = 0;
		return;		/* mirror_restart, from the tick */
	}
	if (r->canceled) {
		/* compacted past our revision, say: range again */
		log_debug("%s: %s: watch canceled", __func__, m->prefix);
		etcd_cancel(m->call);
		m->call = NULL;
		m->ready = 0;
		return;
	}
	if (r->created)
		return;
	for (i = 0; i < r->nkvs; i++)
		mirror_kv(m, &r->kvs[i]);
	if (r->nkvs > 0 && r->kvs[r->nkvs - 1].mod_rev > m->rev)
		m->rev = r->kvs[r->nkvs - 1].mod_rev;
	mirror_purge(m);
	if (m->cb != NULL)
		m->cb(m->arg);
}

static void
mirror_range_cb(struct etcd_reply *r, const char *err, void *arg)
{
	struct mirror	*m = arg;
	u_int		 i;

	m->call = NULL;
	if (err != NULL) {
		log_debug("%s: %s: %s", __func__, m->prefix, err);
		return;
	}
	mirror_clear(m);
	for (i = 0; i < r->nkvs; i++)
		mirror_kv(m, &r->kvs[i]);
	m->rev = r->rev;
	m->ready = 1;
	m->call = etcd_watch(m->e, m->prefix, r->rev + 1, mirror_watch_cb, m);
	if (m->cb != NULL)
		m->cb(m->arg);
}

static void
mirror_start(struct mirror *m)
{
	m->ready = 0;
	m->call = etcd_range(m->e, m->prefix, 1, mirror_range_cb, m);
}

/*
 * Mirrors the keys under prefix; cb (if not NULL) is called after each
 * change that came from etcd.  The caller frees it with mirror_free.
 */
struct mirror *
mirror_create(struct etcd *e, const char *prefix, mirror_cb cb, void *arg)
{
	struct mirror	*m;

	m = xcalloc(1, sizeof *m);
	m->e = e;
	m->prefix = xstrdup(prefix);
	m->map = hmap_create();
	m->cb = cb;
	m->arg = arg;
	mirror_start(m);
	return (m);
}

void
mirror_free(struct mirror *m)
{
	if (m == NULL)
		return;
	etcd_cancel(m->call);
	mirror_clear(m);
	hmap_free(m->map);
	free(m->prefix);
	free(m);
}

/* Starts again (a range, then a watch) if the watch has ended. */
void
mirror_restart(struct mirror *m)
{
	if (m->call == NULL)
		mirror_start(m);
}

int
mirror_ready(const struct mirror *m)
{
	return (m->ready);
}

int64_t
mirror_revision(const struct mirror *m)
{
	return (m->rev);
}

/* How many entries there are, tombstones too (a bound for arrays). */
size_t
mirror_count(const struct mirror *m)
{
	return (hmap_count(m->map));
}

/* How a reader's cache of an entry is freed (default: free). */
void
mirror_cache_free(struct mirror *m, void (*fn)(void *))
{
	m->cache_free = fn;
}

/* The live entry for key, or NULL (none, or deleted). */
struct mirror_entry *
mirror_get(const struct mirror *m, const char *key)
{
	struct mirror_entry	*me = hmap_get(m->map, key);

	return (me != NULL && me->val != NULL ? me : NULL);
}

/* The live entries, one by one: *it starts at 0. */
int
mirror_next(const struct mirror *m, size_t *it, struct mirror_entry **out)
{
	const char		*k;
	void			*v;

	while (hmap_next(m->map, it, &k, &v)) {
		if (((struct mirror_entry *)v)->val != NULL) {
			*out = v;
			return (1);
		}
	}
	return (0);
}

/* What our own Txn at revision rev wrote (val taken). */
void
mirror_put(struct mirror *m, const char *key, json_t *val, int64_t rev,
    int64_t lease)
{
	const struct mirror_entry	*me = hmap_get(m->map, key);
	int64_t				 create = rev;

	if (me != NULL && me->val != NULL)
		create = me->create_rev;
	mirror_set(m, key, val, rev, create, lease);
}

void
mirror_delete(struct mirror *m, const char *key, int64_t rev)
{
	if (hmap_get(m->map, key) != NULL)
		mirror_set(m, key, NULL, rev, 0, 0);
}
