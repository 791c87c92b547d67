/*
 * remote-want.c: which blobs the host asked each owner for.  An upload is
 * taken only for a blob that a manifest of its owner's lacks, at the size
 * that manifest gave it: what one owner may make the store hold room for
 * is bounded by what its own trees are missing (before, a 1-byte part
 * announcing 20 GiB reserved the whole store for a blob nobody wanted).
 * An owner's wants last REMOTE_WANT_MS from the manifest that asked;
 * a blob stored is wanted by no one any more.
 */

#include <sys/queue.h>

#include <stdlib.h>
#include <string.h>

#include "gmux.h"
#include "remote-int.h"

#define REMOTE_WANT_MS		(60 * 60 * 1000)
#define REMOTE_WANT_MAX		REMOTE_ENTRIES_MAX	/* per owner */

struct want {
	char			 digest[DIGEST_HEX];	/* the key */
	uint64_t		 size;
	int64_t			 expires;	/* clock_mono_ms() */
};

struct want_owner {
	char			*owner;
	struct hmap		*map;		/* digest -> struct want */
	TAILQ_ENTRY(want_owner)	 entry;
};

static TAILQ_HEAD(, want_owner) want_owners =
    TAILQ_HEAD_INITIALIZER(want_owners);

static struct want_owner *
want_owner(const char *owner, int create)
{
	struct want_owner	*wo;

	TAILQ_FOREACH(wo, &want_owners, entry) {
		if (strcmp(wo->owner, owner) == 0)
			return (wo);
	}
	if (!create)
		return (NULL);
	wo = xcalloc(1, sizeof *wo);
	wo->owner = xstrdup(owner);
	wo->map = hmap_create();
	TAILQ_INSERT_TAIL(&want_owners, wo, entry);
	return (wo);
}

/* Drops an owner's expired wants, or all of them if none had expired. */
static void
want_prune(struct want_owner *wo, int64_t now)
{
	struct want	*w, **gone;
	size_t		 it = 0, n = 0, i;
	int		 all;

	gone = xreallocarray(NULL, hmap_count(wo->map), sizeof *gone);
	while (hmap_next(wo->map, &it, NULL, (void **)&w)) {
		if (w->expires <= now)
			gone[n++] = w;
	}
	if ((all = n == 0)) {
		it = 0;
		while (hmap_next(wo->map, &it, NULL, (void **)&w))
			gone[n++] = w;
	}
	for (i = 0; i < n; i++) {
		hmap_del(wo->map, gone[i]->digest);
		free(gone[i]);
	}
	free(gone);
	log_debug("%s: %s: %zu dropped%s", __func__, wo->owner, n,
	    all ? " (all: too many, none expired)" : "");
}

/* A manifest of owner's lacks digest, of size bytes. */
void
remote_want_add(const char *owner, const char *digest, uint64_t size)
{
	struct want_owner	*wo = want_owner(owner, 1);
	struct want		*w;
	int64_t			 now = clock_mono_ms();

	if ((w = hmap_get(wo->map, digest)) == NULL) {
		if (hmap_count(wo->map) >= REMOTE_WANT_MAX)
			want_prune(wo, now);
		w = xcalloc(1, sizeof *w);
		memcpy(w->digest, digest, DIGEST_HEX);
		hmap_put(wo->map, w->digest, w);
	}
	w->size = size;
	w->expires = now + REMOTE_WANT_MS;
}

/*
 * Whether owner may upload digest, of size bytes: a manifest of its own
 * asked for it.  Returns 0, or -1 with *cause.
 */
int
remote_want_check(const char *owner, const char *digest, uint64_t size,
    char **cause)
{
	struct want_owner	*wo = want_owner(owner, 0);
	struct want		*w = NULL;

	if (wo != NULL && (w = hmap_get(wo->map, digest)) != NULL &&
	    w->expires <= clock_mono_ms()) {
		hmap_del(wo->map, digest);
		free(w);
		w = NULL;
	}
	if (w == NULL) {
		xasprintf(cause, "blob %.16s: no manifest of yours lacks it "
		    "(send the manifest first)", digest);
		return (-1);
	}
	if (w->size != size) {
		xasprintf(cause, "blob %.16s: your manifest gave it %llu "
		    "bytes, not %llu", digest, (unsigned long long)w->size,
		    (unsigned long long)size);
		return (-1);
	}
	return (0);
}

/* The store has digest now: no one waits for it. */
void
remote_want_done(const char *digest)
{
	struct want_owner	*wo;
	struct want		*w;

	TAILQ_FOREACH(wo, &want_owners, entry) {
		if ((w = hmap_del(wo->map, digest)) != NULL)
			free(w);
	}
}
