/*
 * remote-host.c: what the host does for each sync route, apart from HTTP.
 * Each function takes a request body and returns an HTTP status with a
 * JSON reply or a cause, so the daemon's handlers are a few lines and the
 * client's tests can run the real host logic in process.  The routes and
 * their bodies are written down in docs/remote.md.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmux.h"
#include "remote-int.h"

#define REMOTE_GLOBS_MAX	64
#define REMOTE_MEMO		4
#define REMOTE_TOUCH_MS		(60 * 1000)	/* blobs kept fresh this long */

/*
 * Manifests lately found complete, so an unchanged tree's GET and its job
 * cost neither a parse nor a blob lookup per file.  One stays valid while
 * the store's generation is what it was: no blob has gone since.  (Owned
 * by the daemon's loop thread, like the store.)
 */
static struct remote_memo {
	int		 valid;
	uint64_t	 generation;
	char		 digest[DIGEST_HEX];
	struct manifest	 m;
	uint64_t	 used;
	int64_t		 touched;	/* its blobs last touched, ms */
} remote_memo[REMOTE_MEMO];
static uint64_t	 remote_memo_clock;

static struct remote_memo *
remote_memo_find(const struct cas *c, const char *mdigest)
{
	struct remote_memo	*r;
	u_int			 i;

	for (i = 0; i < REMOTE_MEMO; i++) {
		r = &remote_memo[i];
		if (r->valid && r->generation == cas_generation(c) &&
		    strcmp(r->digest, mdigest) == 0) {
			r->used = ++remote_memo_clock;
			return (r);
		}
	}
	return (NULL);
}

/* Keeps m (taking it over: m is left empty) as complete in store c. */
static void
remote_memo_keep(const struct cas *c, const char *mdigest,
    struct manifest *m)
{
	struct remote_memo	*r = &remote_memo[0];
	u_int			 i;

	for (i = 0; i < REMOTE_MEMO; i++) {
		if (!remote_memo[i].valid) {
			r = &remote_memo[i];
			break;
		}
		if (remote_memo[i].used < r->used)
			r = &remote_memo[i];
	}
	if (r->valid)
		manifest_clear(&r->m);
	r->valid = 1;
	r->generation = cas_generation(c);
	memcpy(r->digest, mdigest, DIGEST_HEX);
	r->m = *m;
	r->used = ++remote_memo_clock;
	r->touched = clock_ms();	/* remote_host_missing did */
	manifest_init(m);
}

static json_t *
remote_host_reply(const char *mdigest, json_t *missing, uint64_t need,
    const struct manifest *m)
{
	return (json_pack("{s:s, s:o, s:I, s:I, s:I}", "manifest", mdigest,
	    "missing", missing, "missing_bytes", (json_int_t)need, "files",
	    (json_int_t)m->n, "bytes", (json_int_t)m->bytes));
}

/*
 * The answer for a manifest known complete: nothing to send.  Its blobs
 * are touched (the last to be evicted), at most once a minute: ten
 * thousand touches cost an unchanged re-run more than its whole request.
 */
static json_t *
remote_host_complete(struct cas *c, const char *mdigest,
    struct remote_memo *r)
{
	size_t	 i;
	int64_t	 now = clock_ms();

	if (now - r->touched >= REMOTE_TOUCH_MS) {
		for (i = 0; i < r->m.n; i++) {
			if (r->m.v[i].type == MENTRY_FILE)
				cas_touch(c, r->m.v[i].digest);
		}
		r->touched = now;
	}
	return (remote_host_reply(mdigest, json_array(), 0, &r->m));
}

/*
 * Works out which of m's blobs the store lacks (owner, if not NULL, may
 * upload those).
 * Blobs it has are touched, so the ones a job is about to use are the
 * last to be evicted, and their sizes must agree with the manifest.
 * Returns the reply or NULL with *cause (400).
 */
static json_t *
remote_host_missing(struct cas *c, const char *owner, const char *mdigest,
    const struct manifest *m, uint64_t *missing_bytes, char **cause)
{
	struct hmap		*seen = hmap_create();
	const struct mentry	*e;
	json_t			*missing = json_array();
	uint64_t		 size;
	size_t			 i;

	*missing_bytes = 0;
	for (i = 0; i < m->n; i++) {
		e = &m->v[i];
		if (e->type != MENTRY_FILE || hmap_get(seen, e->digest) != NULL)
			continue;
		hmap_put(seen, e->digest, (void *)e);
		if (!cas_check(c, e->digest, &size)) {
			json_array_append_new(missing, json_string(e->digest));
			*missing_bytes += e->size;
			if (owner != NULL)
				remote_want_add(owner, e->digest, e->size);
			continue;
		}
		if (size != e->size) {
			xasprintf(cause, "%s: %llu bytes, but its content has "
			    "%llu", e->path, (unsigned long long)e->size,
			    (unsigned long long)size);
			json_decref(missing);
			hmap_free(seen);
			return (NULL);
		}
		cas_touch(c, e->digest);
	}
	hmap_free(seen);
	return (remote_host_reply(mdigest, missing, *missing_bytes, m));
}

/*
 * The checks of size both POST and GET of a manifest make.  A manifest
 * found complete is kept (m is then left empty).
 */
static int
remote_host_answer(struct cas *c, const char *owner, const char *mdigest,
    struct manifest *m, uint64_t max_upload, json_t **reply, char **cause)
{
	char		*a, *b;
	uint64_t	 need;

	if (m->bytes > cas_limit(c)) {
		a = format_size(m->bytes);
		b = format_size(cas_limit(c));
		xasprintf(cause, "the directory holds %s in %zu entries; this "
		    "host keeps at most %s: add large paths to .gmuxignore", a,
		    m->n, b);
		free(a);
		free(b);
		return (413);
	}
	if ((*reply = remote_host_missing(c, owner, mdigest, m, &need,
	    cause)) == NULL)
		return (400);
	if (need == 0) {
		remote_memo_keep(c, mdigest, m);
		return (200);
	}
	if (need > max_upload) {
		a = format_size(need);
		b = format_size(max_upload);
		xasprintf(cause, "this run would upload %s; the host takes at "
		    "most %s at once (its upload limit): add large paths to "
		    ".gmuxignore", a, b);
		free(a);
		free(b);
		json_decref(*reply);
		*reply = NULL;
		return (413);
	}
	return (200);
}

/*
 * POST /v1/sync/manifest: body is a manifest of owner's.  Stores it (as a
 * blob named by its digest) and answers which blobs to send.  Returns 200
 * with *reply, or 400/413/500 with *cause.
 */
int
remote_host_manifest_post(struct cas *c, const char *owner,
    uint64_t max_upload, const void *body, size_t len, json_t **reply,
    char **cause)
{
	struct manifest	 m;
	char		 mdigest[DIGEST_HEX];
	int		 rc;

	*reply = NULL;
	if (len > REMOTE_MANIFEST_MAX) {
		xasprintf(cause, "the manifest is over %d MiB: too many files; "
		    "use .gmuxignore", REMOTE_MANIFEST_MAX >> 20);
		return (413);
	}
	if (manifest_parse(body, len, REMOTE_ENTRIES_MAX, &m, cause) != 0)
		return (400);
	digest_buf(body, len, mdigest);
	rc = remote_host_answer(c, owner, mdigest, &m, max_upload, reply,
	    cause);
	if (rc == 200 && !cas_has(c, mdigest, NULL)) {
		if (cas_room(c, len, cause) != 0)
			rc = 413;
		else if (cas_put(c, mdigest, body, len, cause) != 0)
			rc = 500;
		if (rc != 200) {
			json_decref(*reply);
			*reply = NULL;
		}
	}
	manifest_clear(&m);
	return (rc);
}

/* Loads and parses a stored manifest.  Returns 0, 400, 404 or 500. */
int
remote_host_load(struct cas *c, const char *mdigest, struct manifest *m,
    char **cause)
{
	char	*buf;
	size_t	 len;
	int	 fd, rc;

	if (!digest_valid(mdigest)) {
		xasprintf(cause, "'%.80s' is not a digest", mdigest);
		return (400);
	}
	if ((fd = cas_open_blob(c, mdigest, NULL)) == -1) {
		xasprintf(cause, "no manifest %.16s here", mdigest);
		return (404);
	}
	buf = confine_read_fd(fd, REMOTE_MANIFEST_MAX, &len);
	close(fd);
	if (buf == NULL) {
		xasprintf(cause, "manifest %.16s: %s", mdigest,
		    strerror(errno));
		return (500);
	}
	/* Stored as any blob may be: it is checked like a POSTed one. */
	rc = manifest_parse(buf, len, REMOTE_ENTRIES_MAX, m, cause);
	free(buf);
	return (rc == 0 ? 0 : 400);
}

/*
 * GET /v1/sync/manifest/DIGEST: a manifest sent before; answers as POST
 * does, so an unchanged tree costs one small request.  404 if unknown.
 */
int
remote_host_manifest_get(struct cas *c, const char *owner,
    uint64_t max_upload, const char *mdigest, json_t **reply, char **cause)
{
	struct remote_memo	*known;
	struct manifest		 m;
	int			 rc;

	*reply = NULL;
	if ((known = remote_memo_find(c, mdigest)) != NULL) {
		*reply = remote_host_complete(c, mdigest, known);
		return (200);
	}
	if ((rc = remote_host_load(c, mdigest, &m, cause)) != 0)
		return (rc);
	rc = remote_host_answer(c, owner, mdigest, &m, max_upload, reply,
	    cause);
	manifest_clear(&m);
	return (rc);
}

/*
 * Blobs too large for one body arrive in parts (PUT /v1/blobs/D?size=N&
 * offset=K), in order, each appended to the blob's writer; the digest is
 * checked when the last part is in.  Parts of one blob may come over
 * several connections, so the writers live here between requests.  Few
 * uploads run at once; one untouched for a while is dropped.
 */
#define REMOTE_PARTIALS		32
#define REMOTE_PARTIAL_IDLE_MS	(10 * 60 * 1000)
static struct remote_partial {
	char			 digest[DIGEST_HEX];
	char			*owner;
	struct cas_writer	*w;
	uint64_t		 size;
	uint64_t		 next;
	int64_t			 touched;
} remote_partials[REMOTE_PARTIALS];

static void
remote_partial_drop(struct remote_partial *p)
{
	if (p->w != NULL)
		cas_writer_abort(p->w);
	p->w = NULL;
	free(p->owner);
	p->owner = NULL;
}

/* What owner's uploads in parts hold, and how many there are. */
static uint64_t
remote_partial_held(const char *owner, u_int *n)
{
	struct remote_partial	*p;
	uint64_t		 held = 0;
	u_int			 i;

	*n = 0;
	for (i = 0; i < REMOTE_PARTIALS; i++) {
		p = &remote_partials[i];
		if (p->w != NULL && strcmp(p->owner, owner) == 0) {
			held += p->size;
			(*n)++;
		}
	}
	return (held);
}

/* The stalest upload in parts of owner's. */
static struct remote_partial *
remote_partial_stalest(const char *owner)
{
	struct remote_partial	*p, *old = NULL;
	u_int			 i;

	for (i = 0; i < REMOTE_PARTIALS; i++) {
		p = &remote_partials[i];
		if (p->w != NULL && strcmp(p->owner, owner) == 0 &&
		    (old == NULL || p->touched < old->touched))
			old = p;
	}
	return (old);
}

/*
 * The other owner that holds most over an equal share of the store among
 * the owners with uploads in parts (owner counted in): its stalest upload
 * is the one to go.  NULL if none is over.
 */
static struct remote_partial *
remote_partial_over(const struct cas *c, const char *owner)
{
	struct remote_partial	*p;
	const char		*worst = NULL;
	uint64_t		 fair, held, over, most = 0;
	u_int			 i, n, owners = 1;

	for (i = 0; i < REMOTE_PARTIALS; i++) {
		p = &remote_partials[i];
		if (p->w != NULL && strcmp(p->owner, owner) != 0 &&
		    remote_partial_stalest(p->owner) == p)
			owners++;	/* each other owner once */
	}
	fair = cas_limit(c) / owners;
	for (i = 0; i < REMOTE_PARTIALS; i++) {
		p = &remote_partials[i];
		if (p->w == NULL || remote_partial_stalest(p->owner) != p ||
		    strcmp(p->owner, owner) == 0)
			continue;	/* an owner's own wait for each other */
		held = remote_partial_held(p->owner, &n);
		over = held > fair ? held - fair : 0;
		if (over > most) {
			most = over;
			worst = p->owner;
		}
	}
	return (worst != NULL ? remote_partial_stalest(worst) : NULL);
}

/*
 * Makes room in the store for size more bytes of owner's: while there is
 * none, the stalest upload in parts of the owner most over its equal
 * share goes.  So an owner within its share never fails for what others
 * hold, and an upload abandoned holds room only while no one needs it.
 * Returns 0, or 413 with *cause.
 */
static int
remote_room(struct cas *c, const char *owner, uint64_t size, char **cause)
{
	struct remote_partial	*p;
	char			*why = NULL;

	while (cas_room(c, size, &why) != 0) {
		if (size > cas_limit(c) ||
		    (p = remote_partial_over(c, owner)) == NULL) {
			*cause = why;
			return (413);
		}
		log_debug("%s: %s's upload of %.16s goes, for %s's", __func__,
		    p->owner, p->digest, owner);
		free(why);
		why = NULL;
		remote_partial_drop(p);
	}
	return (0);
}

/*
 * Finds owner's upload of digest, or a free slot for it: an idle one, or
 * the stalest of the owner with the most.
 */
static struct remote_partial *
remote_partial_slot(const char *owner, const char *digest, int64_t now)
{
	struct remote_partial	*p, *free_p = NULL;
	const char		*most = NULL;
	u_int			 i, n, top = 0;

	for (i = 0; i < REMOTE_PARTIALS; i++) {
		p = &remote_partials[i];
		if (p->w != NULL && now - p->touched > REMOTE_PARTIAL_IDLE_MS)
			remote_partial_drop(p);
		if (p->w != NULL && strcmp(p->digest, digest) == 0 &&
		    strcmp(p->owner, owner) == 0)
			return (p);
		if (p->w == NULL && free_p == NULL)
			free_p = p;
	}
	if (free_p != NULL)
		return (free_p);
	for (i = 0; i < REMOTE_PARTIALS; i++) {
		remote_partial_held(remote_partials[i].owner, &n);
		if (n > top) {
			top = n;
			most = remote_partials[i].owner;
		}
	}
	p = remote_partial_stalest(most);
	remote_partial_drop(p);
	return (p);
}

/* Starts (or starts again) owner's upload of digest in slot p. */
static int
remote_partial_begin(struct cas *c, struct remote_partial *p,
    const char *owner, const char *digest, uint64_t size, char **cause)
{
	int	 rc;

	remote_partial_drop(p);
	if (remote_want_check(owner, digest, size, cause) != 0)
		return (409);
	if ((rc = remote_room(c, owner, size, cause)) != 0)
		return (rc);
	if ((p->w = cas_writer_create(c, digest, size, cause)) == NULL)
		return (500);
	memcpy(p->digest, digest, DIGEST_HEX);
	p->owner = xstrdup(owner);
	p->size = size;
	p->next = 0;
	return (0);
}

/*
 * The checks a blob and a part make first: 0 to go on, 200 if the store
 * has it already, 400 or 413 with *cause.
 */
static int
remote_blob_first(struct cas *c, const char *digest, uint64_t size,
    char **cause)
{
	if (!digest_valid(digest)) {
		xasprintf(cause, "'%.80s' is not a digest", digest);
		return (400);
	}
	if (size > cas_limit(c)) {
		xasprintf(cause, "a blob of %llu bytes is more than this host "
		    "keeps", (unsigned long long)size);
		return (413);
	}
	return (cas_has(c, digest, NULL) ? 200 : 0);
}

/*
 * PUT /v1/blobs/DIGEST: a blob of owner's, one its manifest asked for.
 * Returns 201 stored, 200 already there, 400, 409 (not asked for), 413 or
 * 500.
 */
int
remote_host_blob_put(struct cas *c, const char *owner, const char *digest,
    const void *body, size_t len, char **cause)
{
	int	 rc;

	if ((rc = remote_blob_first(c, digest, len, cause)) != 0)
		return (rc);
	if (remote_want_check(owner, digest, len, cause) != 0)
		return (409);
	if ((rc = remote_room(c, owner, len, cause)) != 0)
		return (rc);
	if ((rc = cas_put(c, digest, body, len, cause)) == 0) {
		remote_want_done(digest);
		return (201);
	}
	return (rc == -2 ? 400 : 500);
}

/*
 * One part of a large blob: len bytes at offset of a blob of size bytes.
 * Returns 201 (the last part: stored), 200 (the blob is here already:
 * send no more), 202 with *reply {"next": N} (more to come), 409 with
 * *reply {"next": N} (not the part expected), or 400/413/500 with *cause.
 */
int
remote_host_blob_part(struct cas *c, const char *owner, const char *digest,
    uint64_t offset, uint64_t size, const void *body, size_t len,
    json_t **reply, char **cause)
{
	struct remote_partial	*p;
	int			 rc;

	*reply = NULL;
	if ((rc = remote_blob_first(c, digest, size, cause)) != 0)
		return (rc);
	if (offset > size || len > size - offset) {
		xasprintf(cause, "the part goes past the blob's size");
		return (400);
	}
	p = remote_partial_slot(owner, digest, clock_mono_ms());
	if (offset == 0 && (rc = remote_partial_begin(c, p, owner, digest,
	    size, cause)) != 0)
		return (rc);
	if (p->w == NULL || strcmp(p->digest, digest) != 0 ||
	    strcmp(p->owner, owner) != 0 || p->next != offset ||
	    p->size != size) {
		*reply = json_pack("{s:s, s:I}", "error", "not the part "
		    "expected", "next", (json_int_t)(p->w != NULL &&
		    strcmp(p->digest, digest) == 0 ? p->next : 0));
		return (409);
	}
	p->touched = clock_mono_ms();
	if ((rc = cas_writer_write(p->w, body, len, cause)) != 0) {
		remote_partial_drop(p);
		return (rc == -2 ? 400 : 500);
	}
	p->next += len;
	if (p->next < p->size) {
		*reply = json_pack("{s:I}", "next", (json_int_t)p->next);
		return (202);
	}
	rc = cas_writer_finish(p->w, 0, NULL, cause);
	if (rc == 0)
		rc = cas_writer_commit(p->w, cause);
	p->w = NULL;
	remote_partial_drop(p);
	if (rc != 0)
		return (rc == -2 ? 400 : 500);
	remote_want_done(digest);
	return (201);
}

/*
 * A blob of owner's that this host fetches itself (a member taking a
 * cluster job's tree from another), in parts, with PUT's checks: a writer
 * of its own, not one of the slots clients' parts share, so fetches of one
 * blob at once (an array's elements) do not take each other's place.
 * Returns 0 with *w, 200 if the store has it, or 400/409/413/500.
 */
int
remote_host_take_begin(struct cas *c, const char *owner, const char *digest,
    uint64_t size, struct cas_writer **w, char **cause)
{
	int	 rc;

	*w = NULL;
	if ((rc = remote_blob_first(c, digest, size, cause)) != 0)
		return (rc);
	if (remote_want_check(owner, digest, size, cause) != 0)
		return (409);
	if ((rc = remote_room(c, owner, size, cause)) != 0)
		return (rc);
	if ((*w = cas_writer_create(c, digest, size, cause)) == NULL)
		return (500);
	return (0);
}

/* The fetched blob is whole: checked and stored (201), or 400/500. */
int
remote_host_take_end(struct cas_writer *w, const char *digest, char **cause)
{
	int	 rc;

	if ((rc = cas_writer_finish(w, 0, NULL, cause)) == 0)
		rc = cas_writer_commit(w, cause);
	if (rc != 0)
		return (rc == -2 ? 400 : 500);
	remote_want_done(digest);
	return (201);
}

struct remote_batch {
	struct cas		 *cas;
	const char		 *owner;
	struct cas_writer	**v;
	char			(*d)[DIGEST_HEX];	/* v's digests */
	size_t			  n;
	int			  status;
};

static int
remote_host_batch_one(const char *digest, const void *data, size_t len,
    void *arg, char **cause)
{
	struct remote_batch	*rb = arg;
	struct cas_writer	*w;
	int			 rc;

	if (cas_has(rb->cas, digest, NULL))
		return (0);
	if (remote_want_check(rb->owner, digest, len, cause) != 0)
		return (rb->status = 409, -1);
	if ((rc = remote_room(rb->cas, rb->owner, len, cause)) != 0)
		return (rb->status = rc, -1);
	if ((w = cas_writer_create(rb->cas, digest, len, cause)) == NULL)
		return (rb->status = 500, -1);
	if ((rc = cas_writer_write(w, data, len, cause)) != 0)
		cas_writer_abort(w);
	else
		rc = cas_writer_finish(w, 0, NULL, cause);
	if (rc != 0) {
		rb->status = rc == -2 ? 400 : 500;
		return (-1);
	}
	rb->v = xreallocarray(rb->v, rb->n + 1, sizeof *rb->v);
	rb->d = xreallocarray(rb->d, rb->n + 1, sizeof *rb->d);
	memcpy(rb->d[rb->n], digest, DIGEST_HEX);
	rb->v[rb->n++] = w;
	return (0);
}

/*
 * POST /v1/blobs: a batch of small blobs.  All are verified before any is
 * renamed in: a batch is stored whole or not at all.
 */
int
remote_host_batch(struct cas *c, const char *owner, const void *body,
    size_t len, json_t **reply, char **cause)
{
	struct remote_batch	 rb = { c, owner, NULL, NULL, 0, 400 };
	size_t			 i, stored = 0;
	int			 rc = 200;

	*reply = NULL;
	if (len > REMOTE_BATCH_MAX) {
		xasprintf(cause, "a batch is at most %d MiB",
		    REMOTE_BATCH_MAX >> 20);
		return (413);
	}
	if (batch_parse(body, len, REMOTE_SMALL_MAX, remote_host_batch_one,
	    &rb, cause) != 0) {
		for (i = 0; i < rb.n; i++)
			cas_writer_abort(rb.v[i]);
		free(rb.v);
		free(rb.d);
		return (rb.status);
	}
	for (i = 0; i < rb.n; i++) {
		if (rc != 200)
			cas_writer_abort(rb.v[i]);
		else if (cas_writer_commit(rb.v[i], cause) != 0)
			rc = 500;
		else {
			remote_want_done(rb.d[i]);
			stored++;
		}
	}
	free(rb.v);
	free(rb.d);
	if (rc == 200)
		*reply = json_pack("{s:I}", "stored", (json_int_t)stored);
	return (rc);
}

/*
 * For POST /v1/jobs with "manifest": checks that the store holds the whole
 * tree, and makes m (uninitialized) the manifest to make it from.  Cheap:
 * a manifest found complete lately is copied, else parsed and its blobs
 * looked up.  Returns 0, 412 with *cause and *reply (the body to send:
 * what is missing; the client syncs again and retries), or 400/500 with
 * *cause.
 */
int
remote_host_tree(struct cas *c, const char *mdigest, struct manifest *m,
    json_t **reply, char **cause)
{
	struct remote_memo	*known;
	uint64_t		 need;
	int			 rc;

	*reply = NULL;
	if ((known = remote_memo_find(c, mdigest)) != NULL) {
		manifest_copy(m, &known->m);
		return (0);
	}
	if ((rc = remote_host_load(c, mdigest, m, cause)) == 404) {
		*reply = json_pack("{s:s, s:[s]}", "error", *cause,
		    "missing", mdigest);
		return (412);
	}
	if (rc != 0)
		return (rc);
	if ((*reply = remote_host_missing(c, NULL, mdigest, m, &need,
	    cause)) == NULL) {
		manifest_clear(m);
		return (400);
	}
	if (json_array_size(json_object_get(*reply, "missing")) != 0) {
		xasprintf(cause, "blobs of manifest %.16s are missing: sync "
		    "again", mdigest);
		json_object_set_new(*reply, "error", json_string(*cause));
		manifest_clear(m);
		return (412);
	}
	json_decref(*reply);
	*reply = NULL;
	return (0);
}

/*
 * remote_host_tree, then the tree made in workdir (which must not exist)
 * at once.  (The daemon makes it in a helper thread instead: prepare.c.)
 * Returns 0, or as remote_host_tree, or 500 with *cause.
 */
int
remote_host_prepare(struct cas *c, const char *mdigest, const char *workdir,
    json_t **reply, char **cause)
{
	struct manifest	 m;
	int		 rc;

	if ((rc = remote_host_tree(c, mdigest, &m, reply, cause)) != 0)
		return (rc);
	if (tree_materialize(c, &m, workdir, cause) != 0) {
		confine_remove(workdir);
		rc = 500;
	}
	manifest_clear(&m);
	return (rc);
}

/* Reads {"globs":[...]} into a NULL-terminated vector; NULL if bad. */
static char **
remote_host_globs(json_t *body, char **cause)
{
	json_t		*arr = json_object_get(body, "globs"), *g;
	char		**v, *why;
	size_t		 i;

	if (!json_is_array(arr) || json_array_size(arr) == 0 ||
	    json_array_size(arr) > REMOTE_GLOBS_MAX) {
		xasprintf(cause, "\"globs\" must be 1 to %d patterns",
		    REMOTE_GLOBS_MAX);
		return (NULL);
	}
	v = xcalloc(json_array_size(arr) + 1, sizeof *v);
	json_array_foreach(arr, i, g) {
		if (!json_is_string(g) || json_string_length(g) == 0 ||
		    json_string_length(g) > 4096 ||
		    strlen(json_string_value(g)) != json_string_length(g) ||
		    strchr(json_string_value(g), '\n') != NULL) {
			xasprintf(cause, "\"globs\" entry %zu is not a pattern",
			    i);
			strv_free(v);
			return (NULL);
		}
		if (remote_pull_pattern(json_string_value(g), &why) != 0) {
			xasprintf(cause, "\"globs\" entry %zu: %s", i, why);
			free(why);
			strv_free(v);
			return (NULL);
		}
		v[i] = xstrdup(json_string_value(g));
	}
	return (v);
}

/*
 * POST /v1/jobs/ID/pull: lists the files of the job's tree (the directory
 * fd) matching body's "globs" (copying them into the store).  200 with
 * {"manifest": TEXT, "files", "bytes"}, or 400/413.
 */
int
remote_host_pull(struct cas *c, int fd, json_t *body,
    uint64_t limit, json_t **reply, char **cause)
{
	struct manifest	 m;
	char		**globs, *text;
	size_t		 len;
	int		 rc;

	*reply = NULL;
	if ((globs = remote_host_globs(body, cause)) == NULL)
		return (400);
	if ((rc = tree_pull_at(c, fd, globs, limit, &m, cause)) != 0) {
		strv_free(globs);
		return (rc == -2 ? 413 : 500);
	}
	strv_free(globs);
	text = manifest_format(&m, &len);
	*reply = json_pack("{s:s%, s:I, s:I}", "manifest", text, len, "files",
	    (json_int_t)m.n, "bytes", (json_int_t)m.bytes);
	free(text);
	manifest_clear(&m);
	return (200);
}
