/*
 * cluster-tree.c: a cluster job's synced tree (docs/cluster.md, "Trees"),
 * fetched by the member that runs the job from the member that received
 * it, before the job starts: the manifest, then each blob this member's
 * store lacks, each a member's call as the job's owner.  What comes is
 * stored as if its owner had sent it here (the same checks and limits as
 * POST /v1/sync/manifest and PUT /v1/blobs), and the job then runs in it,
 * jailed, as a remote job in its tree does.
 */

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "cluster-int.h"

struct ct {
	char		*member;	/* who has the tree */
	char		*mdigest;
	char		*owner;
	json_t		*missing;	/* digests to fetch */
	size_t		 next;
	int		 stored;	/* the blob fetched came in parts */
	struct cas_writer *w;		/* it, as it comes */
	cluster_tree_cb	 cb;
	void		*arg;
};

static void	ct_next(struct ct *);

/* The member a record's tree is to be fetched from, or NULL: none. */
const char *
cluster_tree_from(json_t *rec)
{
	const char	*from = json_string_value(json_object_get(
			    json_object_get(rec, "tree"), "from"));

	if (from == NULL || json_object_get(json_object_get(rec, "req"),
	    "manifest") == NULL || strcmp(from, cluster->name) == 0)
		return (NULL);
	return (from);
}

/* Ends the fetch: cb hears err (NULL: the tree is here). */
static void
ct_done(struct ct *t, const char *fmt, ...)
{
	va_list	 ap;
	char	*err = NULL;

	if (fmt != NULL) {
		va_start(ap, fmt);
		xvasprintf(&err, fmt, ap);
		va_end(ap);
	}
	cas_writer_abort(t->w);		/* cut off midway */
	t->cb(t->arg, err);
	free(err);
	free(t->member);
	free(t->mdigest);
	free(t->owner);
	json_decref(t->missing);
	free(t);
}

static void
ct_call(struct ct *t, const char *digest, peer_cb cb, peer_sink sink)
{
	struct api_who	 who;
	char		*uri, *cause = NULL;

	memset(&who, 0, sizeof who);
	who.transport = API_TCP;
	who.owner = t->owner;
	who.confined = 1;
	xasprintf(&uri, "/v1/blobs/%s", digest);
	if ((sink != NULL ? cluster_peer_fetch(t->member, uri, &who, sink, cb,
	    t, &cause) : cluster_peer_call(t->member, uri, &who, cb, t,
	    &cause)) != 0) {
		ct_done(t, "its tree: %s", cause);
		free(cause);
	}
	free(uri);
}

/*
 * A part of the blob being fetched, stored as it comes with PUT
 * /v1/blobs' checks and limits (remote_host_take_begin), so a blob is
 * never held whole in memory here.
 */
static int
ct_blob_part(void *arg, uint64_t size, uint64_t offset, const void *data,
    size_t len, char **cause)
{
	struct ct	*t = arg;
	const char	*digest;
	char		*why = NULL;
	int		 code = 0;

	digest = json_string_value(json_array_get(t->missing, t->next));
	if (offset == 0) {
		code = api_remote_take_begin(t->owner, digest, size, &t->w,
		    &why);
		if (code == 200)	/* it came meanwhile: the rest is not */
			t->stored = 1;	/* needed */
	}
	if (code == 0 && t->w != NULL) {
		if (cas_writer_write(t->w, data, len, &why) != 0)
			code = 400;
		else if (offset + len == size) {
			code = remote_host_take_end(t->w, digest, &why);
			t->w = NULL;
			t->stored = code == 201;
		}
	}
	if (code == 0 || code == 200 || code == 201)
		return (0);
	cas_writer_abort(t->w);
	t->w = NULL;
	xasprintf(cause, "its tree: blob %.16s: %s", digest, why != NULL ?
	    why : "refused");
	free(why);
	return (-1);
}

static void
ct_blob_cb(int status, struct evbuffer *b, const char *err, void *arg)
{
	struct ct	*t = arg;
	const char	*digest;
	char		*cause = NULL;
	int		 code;

	digest = json_string_value(json_array_get(t->missing, t->next));
	if (status == 0 && err != NULL && strncmp(err, "its tree: ", 10) == 0) {
		ct_done(t, "%s", err);		/* a part was refused */
		return;
	}
	if (status != 200) {
		ct_done(t, "its tree: blob %.16s from %s: %s", digest,
		    t->member, err != NULL ? err : "not there");
		return;
	}
	if (t->stored) {		/* it came in parts */
		t->stored = 0;
		t->next++;
		ct_next(t);
		return;
	}
	/* an empty blob (no part came), or one sent without its length */
	code = api_remote_take_blob(t->owner, digest, evbuffer_pullup(b, -1),
	    evbuffer_get_length(b), &cause);
	if (code != 200 && code != 201) {
		ct_done(t, "its tree: blob %.16s: %s", digest, cause);
		free(cause);
		return;
	}
	t->next++;
	ct_next(t);
}

static void
ct_next(struct ct *t)
{
	const char	*digest;

	if (t->next == json_array_size(t->missing)) {
		log_debug("%s: tree %.16s from %s: %zu blobs", __func__,
		    t->mdigest, t->member, t->next);
		ct_done(t, NULL);
		return;
	}
	digest = json_string_value(json_array_get(t->missing, t->next));
	if (digest == NULL) {
		ct_done(t, "its tree: a malformed list of blobs");
		return;
	}
	ct_call(t, digest, ct_blob_cb, ct_blob_part);
}

static void
ct_manifest_cb(int status, struct evbuffer *b, const char *err, void *arg)
{
	struct ct	*t = arg;
	json_t		*reply = NULL;
	char		 hex[DIGEST_HEX], *cause = NULL;
	size_t		 len = evbuffer_get_length(b);
	const void	*body = evbuffer_pullup(b, -1);
	int		 code;

	if (status != 200) {
		ct_done(t, "its tree: manifest %.16s from %s: %s", t->mdigest,
		    t->member, err != NULL ? err : "not there");
		return;
	}
	digest_buf(body, len, hex);
	if (!digest_equal(hex, t->mdigest)) {
		ct_done(t, "its tree: %s sent another manifest", t->member);
		return;
	}
	if ((code = api_remote_take_manifest(t->owner, body, len, &reply,
	    &cause)) != 200) {
		ct_done(t, "its tree: %s", cause);
		free(cause);
		json_decref(reply);
		return;
	}
	t->missing = json_incref(json_object_get(reply, "missing"));
	json_decref(reply);
	if (!json_is_array(t->missing)) {
		ct_done(t, "its tree: no list of blobs");
		return;
	}
	ct_next(t);
}

/*
 * Fetches the tree of record rec from the member that has it
 * (cluster_tree_from); cb hears the end, with NULL or why it failed.
 */
void
cluster_tree_fetch(json_t *rec, cluster_tree_cb cb, void *arg)
{
	struct ct	*t = xcalloc(1, sizeof *t);
	const char	*owner;

	t->member = xstrdup(cluster_tree_from(rec));
	t->mdigest = xstrdup(json_string_value(json_object_get(
	    json_object_get(rec, "req"), "manifest")));
	owner = json_string_value(json_object_get(rec, "owner"));
	t->owner = xstrdup(owner != NULL ? owner : "?");
	t->cb = cb;
	t->arg = arg;
	log_debug("%s: tree %.16s from %s for %s", __func__, t->mdigest,
	    t->member, t->owner);
	ct_call(t, t->mdigest, ct_manifest_cb, NULL);
}
